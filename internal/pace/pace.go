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
	// long the occurrence due longest ago has waited to fire. Zero: files
	// never wait.
	Lateness time.Duration `yaml:"lateness"`
	// RecorderLateness is the same for the recorder, which stores what
	// the topics hold into the console's database and can fall behind a
	// burst of fires without harm: it gives way sooner. Zero: it never
	// waits.
	RecorderLateness time.Duration `yaml:"recorder_lateness"`
	// MaxWait bounds each wait. Defaults to 1s.
	MaxWait time.Duration `yaml:"max_wait"`
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
