package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web"
)

// engineLoop stands in for Kafka, the engine and the recorder: what the
// console sends comes back into its store as the engine would record it,
// a state and an audit event per command, at a clock that ticks a
// millisecond at each look.
type engineLoop struct {
	mu    sync.Mutex
	f     *feed
	clock *tickingClock
}

// tickingClock is a fake clock that ticks a millisecond at each look.
type tickingClock struct {
	mu sync.Mutex
	*clockwork.FakeClock
}

func newTickingClock(at time.Time) *tickingClock {
	return &tickingClock{FakeClock: clockwork.NewFakeClockAt(at)}
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Advance(time.Millisecond)
	return c.FakeClock.Now()
}

func (e *engineLoop) Send(_ context.Context, actor string, defs ...task.Definition) error {
	for _, d := range defs {
		at := e.clock.Now()
		action := record.ActionTaskUpdated
		switch {
		case d.Action == task.Delete:
			action = record.ActionTaskDeleted
		case d.Paused():
			action = record.ActionTaskPaused
		case d.Active != nil:
			action = record.ActionTaskResumed
		}
		e.mu.Lock()
		if d.Action != task.Delete {
			e.f.add(topics.State, d.Key(), record.State{Definition: d, Anchor: ms(at), NextFire: ms(at.Add(time.Hour)), UpdatedAt: ms(at)})
		}
		e.f.add(topics.Audit, actor, record.Audit{ID: fmt.Sprintf("%s:%s:%d", action, d.Key(), at.UnixNano()), At: ms(at),
			Actor: actor, Action: action, Object: d.Key(), Outcome: record.OutcomeOK})
		e.mu.Unlock()
	}
	return nil
}

func (e *engineLoop) ReportStatus(context.Context, string, record.Status) error { return nil }

// AppendLogs records the lines as the recorder would from the status
// topic.
func (e *engineLoop) AppendLogs(_ context.Context, s record.Status) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.f.add(topics.Status, s.FireID, s)
	return nil
}

// Trigger fires the task at once, as the engine would: its execution is
// recorded, under a fire id of its own.
func (e *engineLoop) Trigger(_ context.Context, _ string, host, name string) (string, error) {
	at := e.clock.Now()
	id := record.TriggerFireID(host, name, 0, at.UnixNano())
	e.mu.Lock()
	defer e.mu.Unlock()
	e.f.add(topics.Executions, id, record.Execution{FireID: id, Host: host, Name: name, Topic: "jobs", ScheduledAt: ms(at), FiredAt: ms(at)})
	return id, nil
}

func (e *engineLoop) Audit(_ context.Context, a record.Audit) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.f.add(topics.Audit, a.Actor, a)
	return nil
}

// TestBulkPauseIsOneAuditEvent: pausing every task a filter selects
// writes one audit event with the filter, the counts and the outcome;
// from it, the per-task events of that pause and no other are one click
// away. Doing it again changes nothing, and says so.
func TestBulkPauseIsOneAuditEvent(t *testing.T) {
	f := newFeed(t, now)
	for i := range 300 {
		d := task.Definition{Host: "bulk", Name: fmt.Sprintf("job-%03d", i), Action: task.Insert, Topic: "jobs",
			Frequency: &task.Frequency{TimeUnit: task.Hours, Time: 1}}
		f.add(topics.State, d.Key(), record.State{Definition: d, Anchor: ms(now), NextFire: ms(now.Add(time.Hour)), UpdatedAt: ms(now)})
	}
	loop := &engineLoop{f: f, clock: newTickingClock(now)}
	// The same user paused one of them by hand before.
	if err := loop.Send(context.Background(), "api", task.Definition{Host: "bulk", Name: "job-100", Action: task.Update,
		Topic: "jobs", Frequency: &task.Frequency{TimeUnit: task.Hours, Time: 1}, Active: task.Ptr(false)}); err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Config{Clock: loop.clock, Commander: loop}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	resp, err := http.Post(ts.URL+"/api/tasks/pause?host=bulk&name=job-1", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Sent  int
		Audit string
	}
	if json.NewDecoder(resp.Body).Decode(&answer) != nil || resp.StatusCode != http.StatusOK || answer.Sent != 99 || answer.Audit == "" {
		t.Fatalf("bulk pause: %s, %+v; want 99 sent (job-100 was paused already) and the audit event's id", resp.Status, answer)
	}
	resp.Body.Close()

	// The one event of the bulk pause, found by its action.
	doc := page(t, ts.URL+"/audit?action=tasks.pause")
	cells, trs := rows(t, doc, "audit")
	if len(cells) != 1 {
		t.Fatalf("%d events of action tasks.pause, want 1: %q", len(cells), cells)
	}
	ev := cells[0]
	if ev[1] != "api" || ev[3] != "/tasks?host=bulk&name=job-1" || ev[4] != "ok" ||
		!strings.HasPrefix(ev[5], "100 tasks selected, 99 sent, 1 paused already; per-task events from ") {
		t.Errorf("bulk event = %q; want actor, the filtered list, ok and the counts", ev)
	}
	if href := linkTo(t, trs[0], "/tasks?host=bulk&name=job-1"); href != "/tasks?host=bulk&name=job-1" {
		t.Errorf("the event's list links to %q", href)
	}
	each := page(t, ts.URL+linkTo(t, trs[0], "each task's event"))
	perTask, _ := rows(t, each, "audit")
	if len(perTask) != 50 || !strings.HasPrefix(text(byID(t, each, "pager")), "99 events") {
		t.Fatalf("each task's event: %d rows, %q; want the 99 of this pause", len(perTask), text(byID(t, each, "pager")))
	}
	for _, r := range perTask {
		if r[1] != "api" || r[2] != record.ActionTaskPaused || !strings.HasPrefix(r[3], "bulk/job-1") || r[3] == "bulk/job-100" {
			t.Errorf("per-task event %q", r)
		}
	}

	// Again: nothing to do, and the event says so.
	resp, err = http.Post(ts.URL+"/api/tasks/pause?host=bulk&name=job-1", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cells, _ = rows(t, page(t, ts.URL+"/audit?action=tasks.pause"), "audit")
	if len(cells) != 2 || cells[0][4] != "unchanged" || !strings.HasPrefix(cells[0][5], "100 tasks selected, 0 sent, 100 paused already") {
		t.Errorf("second bulk pause's event: %q", cells)
	}
}
