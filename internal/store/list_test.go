package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// walk pages through a list from its first page to its last, then back
// from the last to the first, and returns the rows read each way.
func walk[T any](t *testing.T, list func(cursor string) (storetype.Page[T], error), id func(T) string) (forth, back []string, total int) {
	t.Helper()
	var pages [][]string
	cur := ""
	for {
		p, err := list(cur)
		if err != nil {
			t.Fatal(err)
		}
		if total = p.Total; p.Offset != len(forth) {
			t.Errorf("page %d starts at %d, want %d", len(pages)+1, p.Offset, len(forth))
		}
		var ids []string
		for _, r := range p.Rows {
			ids = append(ids, id(r))
		}
		pages = append(pages, ids)
		forth = append(forth, ids...)
		if (len(pages) == 1) != (p.Prev == "") {
			t.Errorf("page %d: previous cursor %q", len(pages), p.Prev)
		}
		if p.Next == "" {
			cur = p.Prev
			break
		}
		cur = p.Next
	}
	// Back again, page by page: the same pages, in reverse.
	for i := len(pages) - 2; i >= 0; i-- {
		p, err := list(cur)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range p.Rows {
			ids = append(ids, id(r))
		}
		if !slices.Equal(ids, pages[i]) {
			t.Fatalf("back on page %d: %d rows %.3q…, want %d rows %.3q…", i+1, len(ids), ids, len(pages[i]), pages[i])
		}
		back = append(ids, back...)
		if (i == 0) != (p.Prev == "") {
			t.Errorf("back on page %d: previous cursor %q", i+1, p.Prev)
		}
		cur = p.Prev
	}
	if len(pages) > 0 {
		back = append(back, pages[len(pages)-1]...)
	}
	return forth, back, total
}

// TestExecutionsPageByCursor pages through a filtered list of executions
// past a thousand rows, many fired in the same millisecond, forth and
// back: every row the filter selects shows once, in order, and the total
// says how many there are.
func TestExecutionsPageByCursor(t *testing.T) {
	st := openStore(t, tempDB(t))
	start := time.UnixMilli(t0).UTC()
	var recs []*kgo.Record
	type ex struct {
		id     string
		host   string
		at     int64
		failed bool
	}
	var all []ex
	for i := range 6000 {
		e := ex{id: fmt.Sprintf("f%05d", (i*7919)%6000), host: []string{"alpha", "beta"}[i%2],
			// Bursts: ten fires share each millisecond.
			at: start.Add(time.Duration(i/10) * time.Second).UnixMilli(), failed: i%3 != 0}
		all = append(all, e)
		recs = append(recs, executionRec(t, 0, record.Execution{FireID: e.id, Host: e.host, Name: fmt.Sprintf("job-%d", i%50),
			Topic: "jobs", ScheduledAt: e.at, FiredAt: e.at}))
		st := record.StatusSuccess
		if e.failed {
			st = record.StatusFailed
		}
		recs = append(recs, statusRec(t, 0, record.Status{FireID: e.id, Status: st, At: e.at + 5}))
	}
	apply(t, st, sequence(recs...)...)

	from := start.Add(time.Minute)
	var want []string
	for _, e := range all {
		if e.host == "alpha" && e.failed && e.at >= from.UnixMilli() {
			want = append(want, e.id)
		}
	}
	// Newest first; fire id, descending, within a millisecond.
	byID := map[string]ex{}
	for _, e := range all {
		byID[e.id] = e
	}
	slices.SortFunc(want, func(a, b string) int {
		ea, eb := byID[a], byID[b]
		if ea.at != eb.at {
			return int(eb.at - ea.at)
		}
		return strings.Compare(b, a)
	})
	if len(want) <= 1000 {
		t.Fatalf("the fixture selects %d executions; the test needs more than a page of 1,000", len(want))
	}
	for _, limit := range []int{1000, 97} {
		t.Run(fmt.Sprintf("pages of %d", limit), func(t *testing.T) {
			f := storetype.ExecutionFilter{Status: "FAILED", Host: "alpha", From: from, Limit: limit}
			forth, back, total := walk(t, func(cur string) (storetype.Page[storetype.Execution], error) {
				f.Cursor = cur
				return st.Executions(context.Background(), f)
			}, func(e storetype.Execution) string { return e.FireID })
			if total != len(want) {
				t.Errorf("total %d, want %d", total, len(want))
			}
			if !slices.Equal(forth, want) {
				t.Errorf("paging forth read %d executions, want %d in order", len(forth), len(want))
			}
			if !slices.Equal(back, want) {
				t.Errorf("paging back read %d executions, want %d in order", len(back), len(want))
			}
		})
	}

	// Oldest first is the same list reversed.
	f := storetype.ExecutionFilter{Status: "FAILED", Host: "alpha", From: from, Sort: storetype.SortOldest, Limit: 1000}
	forth, _, _ := walk(t, func(cur string) (storetype.Page[storetype.Execution], error) {
		f.Cursor = cur
		return st.Executions(context.Background(), f)
	}, func(e storetype.Execution) string { return e.FireID })
	slices.Reverse(forth)
	if !slices.Equal(forth, want) {
		t.Errorf("oldest first is not newest first reversed")
	}

	// A cursor is its list's own.
	first, err := st.Executions(context.Background(), storetype.ExecutionFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for name, cur := range map[string]string{"garbage": "not-a-cursor", "another order": first.Next} {
		_, err := st.Executions(context.Background(), storetype.ExecutionFilter{Sort: storetype.SortOldest, Cursor: cur})
		if !errors.Is(err, storetype.ErrBadCursor) {
			t.Errorf("%s: err = %v, want ErrBadCursor", name, err)
		}
	}
	if _, err := st.Tasks(context.Background(), storetype.TaskFilter{Cursor: first.Next}); !errors.Is(err, storetype.ErrBadCursor) {
		t.Errorf("an executions cursor on the task list: err = %v, want ErrBadCursor", err)
	}
	if _, err := st.Executions(context.Background(), storetype.ExecutionFilter{Status: "DONE"}); !errors.Is(err, storetype.ErrBadFilter) {
		t.Errorf("status DONE: err = %v, want storetype.ErrBadFilter", err)
	}
}

// TestStatesAreTheirOwn: a paused task is paused, not active, in its
// state, the filters and the counts; an execution past its timeout with
// no final status is OVERDUE in the filters and counts, and no longer
// FIRED or RUNNING.
func TestStatesAreTheirOwn(t *testing.T) {
	st := openStore(t, tempDB(t))
	now := time.UnixMilli(t0).UTC()
	def := func(name string, active *bool) *record.State {
		d := task.Definition{Host: "acme", Name: name, Action: task.Insert, Topic: "jobs",
			Frequency: &task.Frequency{TimeUnit: task.Hours, Time: 1}, Active: active}
		return &record.State{Definition: d, Anchor: t0, NextFire: t0 + 3_600_000, UpdatedAt: t0}
	}
	var recs []*kgo.Record
	recs = append(recs,
		stateRec(t, 0, "acme/runs", def("runs", nil), ""),
		stateRec(t, 0, "acme/resumed", def("resumed", task.Ptr(true)), ""),
		stateRec(t, 0, "acme/held", def("held", task.Ptr(false)), ""),
		stateRec(t, 0, "acme/gone", def("gone", task.Ptr(false)), ""),
		stateRec(t, 0, "acme/gone", nil, record.EndDeleted),
	)
	fired := now.Add(-10 * time.Minute).UnixMilli()
	for _, e := range []struct {
		id      string
		timeout time.Duration
		status  string
	}{
		{"late", 5 * time.Minute, ""},
		{"late-running", 5 * time.Minute, record.StatusRunning},
		{"in-time", time.Hour, ""},
		{"no-timeout", 0, ""},
		{"done-late", time.Minute, record.StatusSuccess},
	} {
		recs = append(recs, executionRec(t, 0, record.Execution{FireID: e.id, Host: "acme", Name: "runs", Topic: "jobs",
			ScheduledAt: fired, FiredAt: fired, Timeout: e.timeout.Milliseconds()}))
		if e.status != "" {
			recs = append(recs, statusRec(t, 0, record.Status{FireID: e.id, Status: e.status, At: fired + 1}))
		}
	}
	apply(t, st, sequence(recs...)...)
	ctx := context.Background()

	tasks := func(status string) string {
		p, err := st.Tasks(ctx, storetype.TaskFilter{Status: status})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, tk := range p.Rows {
			keys = append(keys, tk.Key+"="+tk.Status)
			if tk.Paused != (tk.Status == storetype.TaskPaused) {
				t.Errorf("%s: status %s, paused %t", tk.Key, tk.Status, tk.Paused)
			}
		}
		slices.Sort(keys)
		return strings.Join(keys, " ")
	}
	for status, want := range map[string]string{
		storetype.TaskActive:  "acme/resumed=active acme/runs=active",
		storetype.TaskPaused:  "acme/held=paused",
		storetype.TaskLive:    "acme/held=paused acme/resumed=active acme/runs=active",
		storetype.TaskDeleted: "acme/gone=deleted",
	} {
		if got := tasks(status); got != want {
			t.Errorf("tasks %s: %s, want %s", status, got, want)
		}
	}

	executions := func(status string) string {
		p, err := st.Executions(ctx, storetype.ExecutionFilter{Status: status, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range p.Rows {
			ids = append(ids, e.FireID)
		}
		slices.Sort(ids)
		return strings.Join(ids, " ")
	}
	for status, want := range map[string]string{
		storetype.ExecutionOverdue: "late late-running",
		storetype.ExecutionFired:   "in-time no-timeout",
		storetype.ExecutionRunning: "",
		storetype.ExecutionSuccess: "done-late",
	} {
		if got := executions(status); got != want {
			t.Errorf("executions %s: %q, want %q", status, got, want)
		}
	}

	sum, err := st.Summary(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if sum.TasksActive != 2 || sum.TasksPaused != 1 || sum.TasksDeleted != 1 {
		t.Errorf("task counts: %d active, %d paused, %d deleted; want 2, 1, 1", sum.TasksActive, sum.TasksPaused, sum.TasksDeleted)
	}
	if sum.ExecutionsOverdue != 2 || sum.ExecutionsFired != 2 || sum.ExecutionsRunning != 0 || sum.ExecutionsSuccess != 1 || sum.Executions() != 5 {
		t.Errorf("execution counts: %+v; want 2 overdue, 2 fired, 0 running, 1 success, 5 in all", sum)
	}
}

// TestFilesListArrivalsAndBatches: the files list holds the files on their
// way in beside the recorded ones, newest first, and filters both.
func TestFilesListArrivalsAndBatches(t *testing.T) {
	st := openStore(t, tempDB(t))
	var recs []*kgo.Record
	at := func(min int) int64 { return t0 + int64(min)*60_000 }
	batch := func(id, file, action, outcome string, min, rows, rejected int) *kgo.Record {
		return auditRec(t, 0, record.Audit{ID: "a-" + file, At: at(min), Actor: "watcher", Action: action, Object: file, Outcome: outcome,
			Batch: &record.Batch{ID: strings.Repeat(id, 64), File: file, Folder: "/in", Rows: rows, Rejected: rejected}})
	}
	recs = append(recs,
		batch("1", "payroll.csv", record.ActionFileInjected, record.OutcomeOK, 1, 10, 0),
		batch("2", "broken.csv", record.ActionFileRejected, record.OutcomeRejected, 2, 4, 1),
		batch("1", "payroll-again.csv", record.ActionFileDuplicate, record.OutcomeNoChange, 3, 10, 0),
		auditRec(t, 0, record.Audit{ID: "r1", At: at(4), Actor: "watcher", Action: record.ActionFileReceived, Object: "late.csv",
			Arrival: &record.Arrival{ID: record.ArrivalID("/in", "late.csv"), File: "late.csv", Folder: "/in"}}),
	)
	apply(t, st, sequence(recs...)...)
	ctx := context.Background()
	list := func(f storetype.FileFilter) string {
		p, err := st.Files(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range p.Rows {
			if r.Batch != nil {
				out = append(out, fmt.Sprintf("%s:%s:%d", r.Batch.File, r.Batch.Status, r.Batch.Accepted))
			} else {
				out = append(out, r.Arrival.File+":"+r.Arrival.Status)
			}
		}
		if p.Total != len(p.Rows) {
			t.Errorf("total %d for %d rows", p.Total, len(p.Rows))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name string
		f    storetype.FileFilter
		want string
	}{
		// The duplicate is counted on the batch it repeats, which it
		// brings to the top; a rejected file injected none of its rows.
		{"all", storetype.FileFilter{}, "late.csv:received payroll.csv:injected:10 broken.csv:rejected:0"},
		{"oldest first", storetype.FileFilter{Sort: storetype.SortOldest}, "broken.csv:rejected:0 payroll.csv:injected:10 late.csv:received"},
		{"dropped again", storetype.FileFilter{Status: storetype.BatchDuplicate}, "payroll.csv:injected:10"},
		{"rejected", storetype.FileFilter{Status: storetype.BatchRejected}, "broken.csv:rejected:0"},
		{"on the way in", storetype.FileFilter{Status: storetype.ArrivalReceived}, "late.csv:received"},
		{"by name", storetype.FileFilter{Name: "ROLL"}, "payroll.csv:injected:10"},
		{"since", storetype.FileFilter{From: time.UnixMilli(at(3))}, "late.csv:received payroll.csv:injected:10"},
	} {
		if got := list(tc.f); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
