package scheduler

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// TestLatenessCountsWhatWaitsToFire holds the commit of a fire at the
// brokers and checks that Lateness says how long the occurrence has been
// due meanwhile, and nothing once it fired.
func TestLatenessCountsWhatWaitsToFire(t *testing.T) {
	c := faultCluster(t)
	h := newHarnessOn(t, c.ListenAddrs())
	e := h.start()
	tg := h.watch("jobs")
	due := h.clock.Now().Add(time.Minute)
	h.send(oneShot("late", due))
	h.waitIdle()
	if got := e.Lateness(); got != 0 {
		t.Fatalf("Lateness %s with nothing due, want 0", got)
	}

	// The next transaction's commit waits until released.
	release := make(chan struct{})
	var held sync.Once
	c.ControlKey(kmsg.EndTxn.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		held.Do(func() { c.SleepControl(func() { <-release }) })
		c.DropControl()
		return nil, nil, false
	})
	defer close(release)

	h.advanceTo(due.Add(3 * time.Second))
	if got := e.Lateness(); got != 3*time.Second {
		t.Errorf("Lateness %s with the fire due 3s ago held, want 3s", got)
	}
	h.clock.Advance(2 * time.Second)
	if got := e.Lateness(); got != 5*time.Second {
		t.Errorf("Lateness %s with the fire due 5s ago held, want 5s", got)
	}
	release <- struct{}{}
	h.waitFired(tg, 1)
	kafkatest.Eventually(t, 30*time.Second, "Lateness 0 once the fire committed", func() bool { return e.Lateness() == 0 })
}
