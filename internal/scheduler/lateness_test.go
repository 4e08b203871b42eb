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
	kafkatest.Eventually(t, 30*time.Second, "the engine to hold the task", func() bool { return e.ActiveTasks() == 1 })
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

// TestFiresComeFirst: occurrences due commit ahead of the commands
// waiting, and commands wait for a fire due before they would likely be
// done, once.
func TestFiresComeFirst(t *testing.T) {
	const now = 1_000_000
	for _, tc := range []struct {
		name      string
		scheduled bool
		due       int64
		waiting   int
		took      time.Duration
		deferred  bool
		want      step
	}{
		{"idle", false, 0, 0, 0, false, waitForInput},
		{"nothing due yet", true, now + 500, 0, 0, false, waitForInput},
		{"due, nothing waiting", true, now, 0, 0, false, fireDue},
		{"due, with commands waiting", true, now - 20, 2500, 300 * time.Millisecond, false, fireDue},
		{"due, with commands that waited once", true, now - 20, 2500, 300 * time.Millisecond, true, fireDue},
		{"commands, nothing scheduled", false, 0, 10, 300 * time.Millisecond, false, applyCommands},
		{"commands, the next fire after they would be done", true, now + 400, 10, 300 * time.Millisecond, false, applyCommands},
		{"commands, a fire due before they would be done", true, now + 200, 10, 300 * time.Millisecond, false, holdCommands},
		{"commands that waited once already go", true, now + 200, 10, 300 * time.Millisecond, true, applyCommands},
	} {
		if got := nextStep(tc.scheduled, tc.due, now, tc.waiting, tc.took, tc.deferred); got != tc.want {
			t.Errorf("%s: step %d, want %d", tc.name, got, tc.want)
		}
	}
}
