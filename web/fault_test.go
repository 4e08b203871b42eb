package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// TestConsoleShowsTasksPausedByFaultPolicy: a task whose fires the brokers
// kept refusing shows, on its page, in the task list and on the dashboard,
// as paused by the fault policy with the brokers' answer; its refused
// execution is FAILED with that answer and no event written.
func TestConsoleShowsTasksPausedByFaultPolicy(t *testing.T) {
	now := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	f := newFeed(t, now)
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	def := task.Definition{Host: "acme", Name: "export", Action: task.Insert, Topic: "exports", Start: task.Ptr(ms(-time.Minute)),
		Active: task.Ptr(false)}
	reason := "TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics: [Topic authorization failed.]"
	f.add(topics.State, def.Key(), record.State{Definition: def, Anchor: ms(-time.Minute), UpdatedAt: ms(-time.Second),
		Fault: &record.Fault{Occurrence: ms(-time.Minute), Attempts: 5, Reason: reason, At: ms(-time.Second), Paused: true}})
	fireID := record.FireID(def.Host, def.Name, ms(-time.Minute))
	f.add(topics.Executions, fireID, record.Execution{FireID: fireID, Host: def.Host, Name: def.Name, Topic: def.Topic,
		Partition: -1, Offset: -1, ScheduledAt: ms(-time.Minute), FiredAt: ms(-time.Second)})
	msg := "refused by the brokers: " + reason + " (attempt 5 of 5: task paused by fault policy)"
	f.add(topics.Status, fireID, record.Status{FireID: fireID, Status: record.StatusFailed, Message: msg, Worker: "scheduler",
		At: ms(-time.Second)})
	ts := serve(t, f)

	want := "paused by fault policy: " + reason
	doc := page(t, ts.URL+"/tasks/acme/export")
	if got := text(byID(t, doc, "task-fault")); got != want {
		t.Errorf("task page says %q, want %q", got, want)
	}
	if got := text(byID(t, doc, "task-status")); !strings.Contains(got, "paused") {
		t.Errorf("task status %q does not say paused", got)
	}
	execs, _ := rows(t, doc, "executions")
	if len(execs) != 1 || execs[0][3] != "FAILED" || execs[0][5] != msg || execs[0][6] != "exports not written" {
		t.Errorf("executions of the task = %q, want one FAILED with the brokers' answer and no event", execs)
	}

	cells, _ := rowWith(t, page(t, ts.URL+"/tasks?status=paused"), "tasks", def.Key())
	if !strings.Contains(cells[2], want) {
		t.Errorf("task list status cell %q does not say %q", cells[2], want)
	}
	if got := text(byID(t, page(t, ts.URL+"/"), "tasks-fault-paused")); !strings.HasPrefix(got, "1 paused by fault policy") {
		t.Errorf("dashboard says %q, want 1 task paused by fault policy", got)
	}
}
