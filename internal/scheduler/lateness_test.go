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
// done, once; a transaction written ahead goes before the commands
// waiting when they would delay its writing, once, and never twice in a
// row.
func TestFiresComeFirst(t *testing.T) {
	const now = 1_000_000
	for _, tc := range []struct {
		name string
		m    moment
		want step
	}{
		{"idle", moment{}, waitForInput},
		{"nothing due yet", moment{scheduled: true, due: now + 500}, waitForInput},
		{"due, nothing waiting", moment{scheduled: true, due: now}, fireDue},
		{"due, with commands waiting", moment{scheduled: true, due: now - 20, waiting: 2500, cmdsTook: 300 * time.Millisecond}, fireDue},
		{"due, with commands that waited once", moment{scheduled: true, due: now - 20, waiting: 2500, cmdsTook: 300 * time.Millisecond, deferred: true}, fireDue},
		{"due, with commands a transaction written ahead went before", moment{scheduled: true, due: now - 20, waiting: 10, served: true}, fireDue},
		{"commands, nothing scheduled", moment{waiting: 10, cmdsTook: 300 * time.Millisecond}, applyCommands},
		{"commands, the next fire after they would be done", moment{scheduled: true, due: now + 400, waiting: 10, cmdsTook: 300 * time.Millisecond}, applyCommands},
		{"commands, a fire due before they would be done", moment{scheduled: true, due: now + 200, waiting: 10, cmdsTook: 300 * time.Millisecond}, holdCommands},
		{"commands that waited once already go", moment{scheduled: true, due: now + 200, waiting: 10, cmdsTook: 300 * time.Millisecond, deferred: true}, applyCommands},
		{"within the lead", moment{scheduled: true, due: now + 200, lead: 300}, fireAhead},
		{"before the lead", moment{scheduled: true, due: now + 400, lead: 300}, waitForInput},
		{"within the lead, with commands done before writing must begin", moment{scheduled: true, due: now + 200, lead: 300, writes: 150, waiting: 10, cmdsTook: 5 * time.Millisecond}, applyCommands},
		{"within the lead, with commands that would delay writing", moment{scheduled: true, due: now + 200, lead: 300, writes: 150, waiting: 10, cmdsTook: 100 * time.Millisecond}, fireAhead},
		{"before the lead, with commands that would delay writing", moment{scheduled: true, due: now + 400, lead: 300, writes: 200, waiting: 10, cmdsTook: 300 * time.Millisecond}, holdCommands},
		{"within the lead, with commands held for it", moment{scheduled: true, due: now + 200, lead: 300, waiting: 10, cmdsTook: 300 * time.Millisecond, deferred: true}, fireAhead},
		{"within the lead, with commands a transaction written ahead went before", moment{scheduled: true, due: now + 200, lead: 300, waiting: 10, served: true}, applyCommands},
		{"within the lead again, once those commands went", moment{scheduled: true, due: now + 200, lead: 300}, fireAhead},
	} {
		tc.m.now = now
		if got := nextStep(tc.m); got != tc.want {
			t.Errorf("%s: step %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestWaitUntilTheLead: the loop wakes when the transaction of what is
// due is to be written, or, too far off to reckon how long that takes,
// FireAhead before it.
func TestWaitUntilTheLead(t *testing.T) {
	const now = 1_000_000
	for _, tc := range []struct {
		name  string
		m     moment
		ahead time.Duration
		want  int64
	}{
		{"never ahead", moment{scheduled: true, due: now + 5_000}, -1, 5_000},
		{"far off", moment{scheduled: true, due: now + 5_000}, time.Second, 4_000},
		{"within FireAhead, written from due on", moment{scheduled: true, due: now + 800}, time.Second, 800},
		{"within FireAhead, with a lead", moment{scheduled: true, due: now + 800, lead: 300}, time.Second, 500},
		{"within the lead", moment{scheduled: true, due: now + 200, lead: 300}, time.Second, 0},
	} {
		tc.m.now = now
		if got := tc.m.wait(tc.ahead); got != tc.want {
			t.Errorf("%s: waits %d ms, want %d", tc.name, got, tc.want)
		}
	}
}
