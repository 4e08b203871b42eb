package injector

import (
	"context"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
)

// Pacing makes files give way to the scheduler when it fires late. A
// flood of files (a whole estate exported at once) would otherwise take
// the CPU, the brokers and the scheduler's own transactions, which must
// apply every command injected, from the fires due meanwhile. Before each
// file, and every paceRows rows of the check pass of a file of a sync
// folder, the injector looks how late the scheduler fires (Config.Late);
// while it is later than Lateness, the file waits, at most MaxWait at each
// look, so that files always make headway however late the scheduler
// stays.
//
// A file never waits while its transaction is open: every read_committed
// reader of the input partitions, the scheduler first, would wait with
// it, and the brokers abort a transaction open too long. A file that does
// not sync is converted inside its transaction (its rows are produced as
// they are converted), so it waits only before it starts.
type Pacing struct {
	// Lateness is how late the scheduler may fire before files wait: how
	// long the occurrence due longest ago has waited to fire. Zero: files
	// never wait.
	Lateness time.Duration `yaml:"lateness"`
	// MaxWait bounds each wait. Defaults to 1s.
	MaxWait time.Duration `yaml:"max_wait"`
}

// Validate checks p; its errors name the fields as configuration files
// do (lateness, max_wait).
func (p Pacing) Validate() error {
	switch {
	case p.Lateness < 0:
		return fmt.Errorf("lateness: %s is negative (0s turns pacing off)", p.Lateness)
	case p.MaxWait < 0:
		return fmt.Errorf("max_wait: %s is negative (0s means 1s)", p.MaxWait)
	}
	return nil
}

func (p Pacing) withDefaults() Pacing {
	if p.MaxWait == 0 {
		p.MaxWait = time.Second
	}
	return p
}

// paceRows is how many rows a file goes between two looks at the
// scheduler: looking costs next to nothing, and a thousand rows take a few
// milliseconds to convert or produce.
const paceRows = 1_000

// pollPace is how often a waiting file looks again.
const pollPace = 10 * time.Millisecond

// pacer paces one file.
type pacer struct {
	p      Pacing
	late   func() time.Duration // nil: no pacing
	clock  clockwork.Clock
	onWait func(time.Duration)

	rows int
}

// pacer returns the pacer of one file.
func (in *Injector) pacer() *pacer {
	p := &pacer{p: in.cfg.Pacing, clock: in.clock, onWait: in.cfg.OnPaced}
	if in.cfg.Pacing.Lateness > 0 {
		p.late = in.cfg.Late
	}
	return p
}

// row counts a row of the file, and waits every paceRows rows while the
// scheduler is late.
func (p *pacer) row(ctx context.Context) {
	if p == nil {
		return
	}
	if p.rows++; p.rows >= paceRows {
		p.rows = 0
		p.wait(ctx)
	}
}

// wait waits while the scheduler is later than p.Lateness, for at most
// p.MaxWait, or until ctx is done.
func (p *pacer) wait(ctx context.Context) {
	if p == nil || p.late == nil || p.late() <= p.p.Lateness {
		return
	}
	limit := p.p.MaxWait
	start := p.clock.Now()
	for p.clock.Since(start) < limit && p.late() > p.p.Lateness && ctx.Err() == nil {
		poll := p.clock.NewTimer(min(pollPace, limit-p.clock.Since(start)))
		select {
		case <-ctx.Done():
		case <-poll.Chan():
		}
		poll.Stop()
	}
	if p.onWait != nil {
		p.onWait(p.clock.Since(start))
	}
}
