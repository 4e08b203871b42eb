package pace

import (
	"context"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
)

// Pacing says how late the scheduler may fire before work gives way to
// it, and how long each wait may last.
type Pacing struct {
	// Lateness is how late the scheduler may fire before files wait: how
	// long the occurrence due longest ago has waited to fire, or how long
	// the scheduler has been writing fires ahead of their due time. Zero:
	// files never wait.
	Lateness time.Duration `yaml:"lateness"`
	// RecorderLateness is the same for the recorder, which stores what
	// the topics hold into the console's database and can fall behind a
	// burst of fires without harm: it gives way sooner. Zero: it never
	// waits.
	RecorderLateness time.Duration `yaml:"recorder_lateness"`
	// MaxWait bounds each wait. Defaults to 1s.
	MaxWait time.Duration `yaml:"max_wait"`
	// Ahead is how long before their due time the node's scheduler may
	// begin writing a burst's transactions (its fire_ahead; zero when it
	// never writes ahead). Set by the node, not configured: work in the
	// background may wait that much longer in all (see Background), so
	// that it waits out a whole burst written ahead rather than resume
	// in the middle of it.
	Ahead time.Duration `yaml:"-"`
}

// Validate checks p; its errors name the fields as configuration files
// do (lateness, recorder_lateness, max_wait).
func (p Pacing) Validate() error {
	switch {
	case p.Lateness < 0:
		return fmt.Errorf("lateness: %s is negative (0s turns pacing off)", p.Lateness)
	case p.RecorderLateness < 0:
		return fmt.Errorf("recorder_lateness: %s is negative (0s turns the recorder's pacing off)", p.RecorderLateness)
	case p.MaxWait < 0:
		return fmt.Errorf("max_wait: %s is negative (0s means 1s)", p.MaxWait)
	}
	return nil
}

// WithDefaults returns p with MaxWait set when it is not.
func (p Pacing) WithDefaults() Pacing {
	if p.MaxWait == 0 {
		p.MaxWait = time.Second
	}
	return p
}

// Poll is how often a waiting caller looks again.
const Poll = 10 * time.Millisecond

// Wait waits while late says the scheduler fires later than over, for at
// most limit, or until ctx is done, and returns how long it waited: zero
// at once when late is nil, over is zero or the scheduler is on time.
func Wait(ctx context.Context, clock clockwork.Clock, late func() time.Duration, over, limit time.Duration) time.Duration {
	if late == nil || over <= 0 || late() <= over {
		return 0
	}
	start := clock.Now()
	for clock.Since(start) < limit && late() > over && ctx.Err() == nil {
		t := clock.NewTimer(min(Poll, limit-clock.Since(start)))
		select {
		case <-ctx.Done():
		case <-t.Chan():
		}
		t.Stop()
	}
	return clock.Since(start)
}

// Settle is how long, at least, background work still gives way once a
// transaction of fires that pressed has committed (the scheduler's
// Pressure counts it; as long as writing it took, if longer): the
// consumers of the fired events read a burst's last transactions then.
// Resuming at once, with the burst's executions to store, the recorder
// slowed them: in six interleaved runs of each (BenchmarkBurstFromOutside,
// embedded), p99 was 654–805 ms (median 702) without settling, 483–656 ms
// (median 602) with it.
const Settle = 300 * time.Millisecond

// Background is how work that can wait gives way to the node's
// scheduler: the recorder, between two records it stores, and the
// dashboard's computations, between two tasks they read. Its zero value
// never waits.
type Background struct {
	// Late says how hard the scheduler's fires press now (the engine's
	// Pressure: how late they are, how long a burst has been written
	// ahead, or had been as it committed, while its consumers read it);
	// nil when the node has none.
	Late func() time.Duration
	// Over is how late it may fire before the work waits; zero: never.
	Over time.Duration
	// MaxWait bounds each Wait, and the pauses of one Within in all.
	MaxWait time.Duration
}

// Background is how work that can wait longer than files gives way with
// p: while the scheduler's fires press longer than RecorderLateness, for
// at most MaxWait and Ahead together. A burst written ahead presses from
// the start of its writing, up to Ahead before its due time, to Settle or
// more after it commits: with MaxWait alone (1s), a dashboard computation that met the
// writing of a burst 1.2 s ahead resumed just before its due second, and
// took 0.3–0.7 s of the two cores while the burst's consumers read it
// (BenchmarkBurstFromOutside, embedded: p99 534 and 572 ms in two runs of
// three).
func (p Pacing) Background(late func() time.Duration) Background {
	return Background{Late: late, Over: p.RecorderLateness, MaxWait: p.WithDefaults().MaxWait + max(p.Ahead, 0)}
}

// Wait waits while the scheduler's fires press longer than b.Over, for at
// most b.MaxWait, and returns how long it waited.
func (b Background) Wait(ctx context.Context) time.Duration { return b.wait(ctx, b.MaxWait) }

func (b Background) wait(ctx context.Context, limit time.Duration) time.Duration {
	if b.Late == nil || b.Over <= 0 {
		return 0
	}
	return Wait(ctx, clockwork.NewRealClock(), b.Late, b.Over, limit)
}

// Within returns the pauses of one piece of work, which give way as Wait
// does until they have waited b.MaxWait in all; the work then goes on to
// its end whatever the scheduler.
func (b Background) Within(ctx context.Context) *Pauses {
	return &Pauses{b: b, ctx: ctx}
}

// Pauses are the waits of one piece of work between its steps (see
// Background.Within).
type Pauses struct {
	b      Background
	ctx    context.Context
	waited time.Duration
}

// Pause is called between two steps of the work: it gives way while the
// budget lasts.
func (p *Pauses) Pause() {
	if left := p.b.MaxWait - p.waited; left > 0 {
		p.waited += p.b.wait(p.ctx, left)
	}
}

// Waited is how long the pauses have waited so far: what to take from
// the work's time to tell how long it worked.
func (p *Pauses) Waited() time.Duration { return p.waited }
