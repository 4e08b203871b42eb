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

// chainState is the state record of a task defined in batch, as the
// engine writes it.
func chainState(t *testing.T, d task.Definition, batch string, chain *record.Chain) *record.State {
	t.Helper()
	d.Action = task.Insert
	if d.Topic == "" {
		d.Topic = "jobs"
	}
	return &record.State{Definition: d, Anchor: t0, Source: record.Source{Batch: batch, File: batch + ".csv"}, UpdatedAt: t0, Chain: chain}
}

func nodeKeys(nodes []storetype.ChainNode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Key)
	}
	return out
}

// TestApplyKeepsChainsBothWays: a task's after is read both ways, its
// predecessors in the order it names them (a bare name of its own host,
// host/name of another) and its successors by key; a new definition
// replaces its links, and a task that ends follows nothing any more,
// while those that follow it still name it.
func TestApplyKeepsChainsBothWays(t *testing.T) {
	st := openStore(t, tempDB(t))
	ctx := context.Background()
	held := &record.Chain{Held: "transform failed", Preds: []record.PredRun{
		{Key: "etl/transform", Run: "r1", Fire: "r1-2", Status: record.StatusFailed, At: t0 + 60_000, Fresh: true}}}
	recs := sequence(
		stateRec(t, 0, "etl/extract", chainState(t, task.Definition{Host: "etl", Name: "extract", Cron: "0 2 * * *"}, "nightly", nil), ""),
		stateRec(t, 0, "etl/transform", chainState(t, task.Definition{Host: "etl", Name: "transform", After: []string{"extract"}}, "nightly", nil), ""),
		stateRec(t, 0, "etl/load", chainState(t, task.Definition{Host: "etl", Name: "load", After: []string{"transform", "crm/export"}}, "nightly", held), ""),
		stateRec(t, 0, "etl/report", chainState(t, task.Definition{Host: "etl", Name: "report", After: []string{"load"}, On: task.OnFailure}, "nightly", nil), ""),
		stateRec(t, 0, "crm/export", chainState(t, task.Definition{Host: "crm", Name: "export", Cron: "0 1 * * *"}, "crm", nil), ""),
		// Later: load follows transform alone; transform is deleted.
		stateRec(t, 0, "etl/load", chainState(t, task.Definition{Host: "etl", Name: "load", After: []string{"transform"}}, "nightly", nil), ""),
		stateRec(t, 0, "etl/transform", nil, record.EndDeleted),
	)
	apply(t, st, recs[:5]...)

	load, err := st.TaskChain(ctx, "etl/load", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeKeys(load.Predecessors); !slices.Equal(got, []string{"etl/transform", "crm/export"}) {
		t.Errorf("load follows %q, want transform then crm/export, as its after names them", got)
	}
	if got := nodeKeys(load.Successors); !slices.Equal(got, []string{"etl/report"}) || load.Followers != 1 {
		t.Errorf("load is followed by %q (%d), want etl/report", got, load.Followers)
	}
	if n := load.Successors[0]; n.On != "failure" || n.Status != storetype.TaskActive || n.Batch != "nightly" {
		t.Errorf("report as a node: %+v, want on failure, active, of nightly", n)
	}
	if n := load.Predecessors[1]; n.On != "" || n.Status != storetype.TaskActive {
		t.Errorf("crm/export as a node: %+v, want active, waiting on nothing", n)
	}
	got, err := st.TaskByKey(ctx, "etl/load")
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Chain; c == nil || c.Held != "transform failed" || len(c.Failed()) != 1 || c.Failed()[0].Fire != "r1-2" ||
		!c.Failed()[0].At.Equal(timeOf(t0+60_000)) || !c.Preds[0].Fresh {
		t.Errorf("load's chain = %+v, want held by transform's failed run", c)
	}
	if extract, _ := st.TaskByKey(ctx, "etl/extract"); extract.Chain != nil {
		t.Errorf("extract follows nothing, yet has a chain: %+v", extract.Chain)
	}

	apply(t, st, recs[5:]...)
	if c, _ := st.TaskChain(ctx, "crm/export", 10); len(c.Successors) != 0 {
		t.Errorf("crm/export still followed by %q", nodeKeys(c.Successors))
	}
	if c, _ := st.TaskChain(ctx, "etl/extract", 10); len(c.Successors) != 0 {
		t.Errorf("a deleted transform still follows extract")
	}
	c, err := st.TaskChain(ctx, "etl/transform", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeKeys(c.Predecessors); !slices.Equal(got, []string{"etl/extract"}) {
		t.Errorf("a deleted task's page still says what it followed: got %q", got)
	}
	if got := nodeKeys(c.Successors); !slices.Equal(got, []string{"etl/load"}) {
		t.Errorf("transform is followed by %q, want load, which still names it", got)
	}
	if tr, _ := st.TaskByKey(ctx, "etl/transform"); tr.Chain != nil || tr.Status != storetype.TaskDeleted {
		t.Errorf("deleted transform: %s, chain %+v", tr.Status, tr.Chain)
	}
	if _, err := st.TaskChain(ctx, "etl/nothing", 10); !errors.Is(err, storetype.ErrNotFound) {
		t.Errorf("chain of no task: %v", err)
	}
}

// TestApplyKeepsRunsAndReleases: a run's attempts are read from any of
// them, with the attempts its task allows; what a run released is read
// from each of its attempts, and what released a fire from the fire,
// each as the latest attempt of its run.
func TestApplyKeepsRunsAndReleases(t *testing.T) {
	st := openStore(t, tempDB(t))
	ctx := context.Background()
	apply(t, st, sequence(
		stateRec(t, 0, "etl/extract", chainState(t, task.Definition{Host: "etl", Name: "extract", Cron: "0 2 * * *", Retry: &task.Retry{Attempts: 3}}, "nightly", nil), ""),
		stateRec(t, 0, "etl/transform", chainState(t, task.Definition{Host: "etl", Name: "transform", After: []string{"extract"}}, "nightly", nil), ""),
		// A worker's report before its execution: the execution keeps its attempt.
		statusRec(t, 0, record.Status{FireID: "x1-2", Status: record.StatusSuccess, At: t0 + 200_000}),
		executionRec(t, 0, record.Execution{FireID: "x1", Host: "etl", Name: "extract", FiredAt: t0}),
		statusRec(t, 0, record.Status{FireID: "x1", Status: record.StatusFailed, At: t0 + 1000}),
		executionRec(t, 0, record.Execution{FireID: "x1-2", Host: "etl", Name: "extract", FiredAt: t0 + 60_000, Attempt: 2, Run: "x1"}),
		executionRec(t, 0, record.Execution{FireID: "t1", Host: "etl", Name: "transform", FiredAt: t0 + 201_000, After: []string{"x1"}}),
		// A release by a run this store never saw.
		executionRec(t, 0, record.Execution{FireID: "t2", Host: "etl", Name: "transform", FiredAt: t0 + 301_000, After: []string{"elsewhere"}}),
	)...)
	for _, id := range []string{"x1", "x1-2"} {
		r, err := st.ExecutionRun(ctx, id, 10)
		if err != nil {
			t.Fatal(err)
		}
		var attempts []string
		for _, a := range r.Attempts {
			attempts = append(attempts, fmt.Sprintf("%s#%d %s", a.FireID, a.Attempt, a.Status))
		}
		if want := []string{"x1#1 FAILED", "x1-2#2 SUCCESS"}; !slices.Equal(attempts, want) || r.Planned != 3 {
			t.Errorf("run of %s: attempts %q of %d, want %q of 3", id, attempts, r.Planned, want)
		}
		if len(r.Released) != 1 || r.Released[0].FireID != "t1" || r.ReleasedTotal != 1 || len(r.ReleasedBy) != 0 {
			t.Errorf("run of %s released %+v (%d), released by %+v; want t1", id, r.Released, r.ReleasedTotal, r.ReleasedBy)
		}
	}
	r, err := st.ExecutionRun(ctx, "t1", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ReleasedBy) != 1 || r.ReleasedBy[0].FireID != "x1-2" || r.Planned != 1 || len(r.Attempts) != 1 {
		t.Errorf("run of t1: released by %+v, %d attempts of %d; want x1's last attempt, x1-2, and one of one", r.ReleasedBy, len(r.Attempts), r.Planned)
	}
	if r, _ := st.ExecutionRun(ctx, "t2", 10); len(r.ReleasedBy) != 1 || r.ReleasedBy[0].FireID != "elsewhere" || r.ReleasedBy[0].Status != "" {
		t.Errorf("released by a run not stored: %+v, want its fire id alone", r.ReleasedBy)
	}
	if _, err := st.ExecutionRun(ctx, "nothing", 10); !errors.Is(err, storetype.ErrNotFound) {
		t.Errorf("run of no execution: %v", err)
	}

	// The lists carry it all, as the API answers them.
	p, err := st.Executions(ctx, storetype.ExecutionFilter{Task: "etl/extract", Sort: storetype.SortOldest})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, e := range p.Rows {
		rows = append(rows, fmt.Sprintf("%s attempt %d run %q released %q", e.FireID, e.Attempt, e.Run, e.Released))
	}
	if want := []string{`x1 attempt 1 run "" released ["t1"]`, `x1-2 attempt 2 run "x1" released ["t1"]`}; !slices.Equal(rows, want) {
		t.Errorf("extract's executions:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	t1, err := st.ExecutionByFireID(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(t1.After, []string{"x1"}) || t1.Attempt != 1 || t1.Released != nil {
		t.Errorf("t1 = after %q, attempt %d, released %q; want after x1, first attempt, nothing released", t1.After, t1.Attempt, t1.Released)
	}
}

// TestChainGraphOfAFileAndAHost: a graph holds the chained tasks of the
// file or host, each with its latest execution, the links among them and
// to the tasks outside it, bounded, and says how many it left out.
func TestChainGraphOfAFileAndAHost(t *testing.T) {
	st := openStore(t, tempDB(t))
	ctx := context.Background()
	if g, err := st.ChainGraph(ctx, storetype.ChainGraphFilter{Batch: "nightly"}); err != nil || len(g.Nodes) != 0 || g.Chained != 0 {
		t.Fatalf("graph with no chain anywhere: %+v, %v", g, err)
	}
	recs := sequence(
		stateRec(t, 0, "etl/extract", chainState(t, task.Definition{Host: "etl", Name: "extract", Cron: "0 2 * * *"}, "nightly", nil), ""),
		stateRec(t, 0, "etl/transform", chainState(t, task.Definition{Host: "etl", Name: "transform", After: []string{"extract", "crm/export"}}, "nightly", nil), ""),
		stateRec(t, 0, "etl/load", chainState(t, task.Definition{Host: "etl", Name: "load", After: []string{"transform"}}, "nightly", nil), ""),
		stateRec(t, 0, "etl/alone", chainState(t, task.Definition{Host: "etl", Name: "alone", Cron: "0 3 * * *"}, "nightly", nil), ""),
		stateRec(t, 0, "crm/export", chainState(t, task.Definition{Host: "crm", Name: "export", Cron: "0 1 * * *"}, "crm", nil), ""),
		executionRec(t, 0, record.Execution{FireID: "e1", Host: "etl", Name: "extract", FiredAt: t0}),
		executionRec(t, 0, record.Execution{FireID: "e2", Host: "etl", Name: "extract", FiredAt: t0 + 1000}),
		statusRec(t, 0, record.Status{FireID: "e2", Status: record.StatusSuccess, At: t0 + 2000}),
	)
	apply(t, st, recs...)
	g, err := st.ChainGraph(ctx, storetype.ChainGraphFilter{Batch: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, n := range g.Nodes {
		s := n.Key
		if n.Outside {
			s += " (outside)"
		}
		if n.Latest != nil {
			s += " " + n.Latest.FireID + " " + n.Latest.Status
		}
		nodes = append(nodes, s)
	}
	if want := []string{"etl/extract e2 SUCCESS", "etl/load", "etl/transform", "crm/export (outside)"}; !slices.Equal(nodes, want) {
		t.Errorf("nodes %q, want %q (alone follows nothing and is followed by nothing)", nodes, want)
	}
	if len(g.Edges) != 3 || g.Chained != 3 || g.Links != 3 {
		t.Errorf("edges %+v, %d chained, %d links; want 3 and 3 and 3", g.Edges, g.Chained, g.Links)
	}
	host, err := st.ChainGraph(ctx, storetype.ChainGraphFilter{Host: "crm"})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeKeys(host.Nodes); !slices.Equal(got, []string{"crm/export", "etl/transform"}) || !host.Nodes[1].Outside {
		t.Errorf("crm's graph: %q, want export and the transform that follows it, outside", got)
	}
	cut, err := st.ChainGraph(ctx, storetype.ChainGraphFilter{Host: "etl", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeKeys(cut.Nodes); cut.Chained != 3 || !slices.Equal(got, []string{"etl/extract", "etl/transform"}) || !cut.Nodes[1].Outside {
		t.Errorf("etl's graph of 1: %q of %d, want extract drawn and transform outside it, of 3", got, cut.Chained)
	}
	if _, err := st.ChainGraph(ctx, storetype.ChainGraphFilter{}); !errors.Is(err, storetype.ErrBadFilter) {
		t.Errorf("graph of nothing: %v", err)
	}
}

// TestWatchedAttemptKeepsItsFirstFinalStatus: the engine decides an
// attempt it acts on (a task's with followers or a retry policy, or a
// retry) by its worker's first final status; a later report, newer or
// not, changes nothing in the console either. A task nobody follows
// shows its newest report, as before, and so does one the store knows
// only by its end.
func TestWatchedAttemptKeepsItsFirstFinalStatus(t *testing.T) {
	st := openStore(t, tempDB(t))
	ctx := context.Background()
	recs := []*kgo.Record{
		stateRec(t, 0, "etl/extract", chainState(t, task.Definition{Host: "etl", Name: "extract", Cron: "0 2 * * *"}, "nightly", nil), ""),
		stateRec(t, 0, "etl/transform", chainState(t, task.Definition{Host: "etl", Name: "transform", After: []string{"extract"}}, "nightly", nil), ""),
		stateRec(t, 0, "etl/flaky", chainState(t, task.Definition{Host: "etl", Name: "flaky", Cron: "0 3 * * *", Retry: &task.Retry{Attempts: 2}}, "nightly", nil), ""),
		stateRec(t, 0, "etl/alone", chainState(t, task.Definition{Host: "etl", Name: "alone", Cron: "0 4 * * *"}, "nightly", nil), ""),
		executionRec(t, 0, record.Execution{FireID: "x1", Host: "etl", Name: "extract", FiredAt: t0}),
		executionRec(t, 0, record.Execution{FireID: "f1", Host: "etl", Name: "flaky", FiredAt: t0}),
		executionRec(t, 0, record.Execution{FireID: "f1-2", Host: "etl", Name: "flaky", FiredAt: t0 + 60_000, Attempt: 2, Run: "f1"}),
		executionRec(t, 0, record.Execution{FireID: "a1", Host: "etl", Name: "alone", FiredAt: t0}),
		// A task the store knows only by its end: no definition to read.
		stateRec(t, 0, "etl/gone", nil, record.EndCompleted),
		executionRec(t, 0, record.Execution{FireID: "g1", Host: "etl", Name: "gone", FiredAt: t0}),
	}
	for _, id := range []string{"x1", "f1", "f1-2", "a1", "g1"} {
		recs = append(recs,
			statusRec(t, 0, record.Status{FireID: id, Status: record.StatusFailed, Message: "first", At: t0 + 100_000}),
			statusRec(t, 0, record.Status{FireID: id, Status: record.StatusSuccess, Message: "second", At: t0 + 200_000}),
			statusRec(t, 0, record.Status{FireID: id, Status: record.StatusRunning, Message: "third", At: t0 + 300_000}))
	}
	// One record per Apply: each report is its own polled batch.
	for _, r := range sequence(recs...) {
		apply(t, st, r)
	}
	for id, want := range map[string]string{"x1": "FAILED first", "f1": "FAILED first", "f1-2": "FAILED first", "a1": "RUNNING third", "g1": "RUNNING third"} {
		e, err := st.ExecutionByFireID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Status + " " + e.StatusMessage; got != want {
			t.Errorf("%s shows %q, want %q", id, got, want)
		}
	}
}

// TestNextAttemptShowsWhileARetryWaits: a run's record on the state topic
// says when its next attempt fires after a failure; the task and the run
// show that attempt and its time until the record says it fired, and
// nothing once the run is tombstoned or the task deleted.
func TestNextAttemptShowsWhileARetryWaits(t *testing.T) {
	st := openStore(t, tempDB(t))
	ctx := context.Background()
	runRec := func(u *record.RunState) *kgo.Record {
		r := &kgo.Record{Topic: testTopics.State, Key: []byte(record.RunKeyPrefix + "f1")}
		if u != nil {
			r.Value = jsonValue(t, u)
		}
		return r
	}
	u := record.RunState{Key: "etl/flaky", Run: "f1", Fire: "f1", Attempt: 1, Scheduled: t0, FiredAt: t0}
	waiting := u
	waiting.RetryAt = t0 + 600_000
	second := u
	second.Fire, second.Attempt, second.FiredAt = "f1-2", 2, t0+600_000
	steps := []struct {
		rec  *kgo.Record
		want string
	}{
		{runRec(&u), "none"},
		{runRec(&waiting), "attempt 2 at " + time.UnixMilli(t0+600_000).UTC().Format(time.RFC3339)},
		{runRec(&second), "none"},
		{runRec(&waiting), "attempt 2 at " + time.UnixMilli(t0+600_000).UTC().Format(time.RFC3339)},
		{runRec(nil), "none"},
		{runRec(&waiting), "attempt 2 at " + time.UnixMilli(t0+600_000).UTC().Format(time.RFC3339)},
		// The task deleted: its retries are dropped with it.
		{stateRec(t, 0, "etl/flaky", nil, record.EndDeleted), "none"},
	}
	recs := []*kgo.Record{
		stateRec(t, 0, "etl/flaky", chainState(t, task.Definition{Host: "etl", Name: "flaky", Cron: "0 3 * * *", Retry: &task.Retry{Attempts: 3}}, "nightly", nil), ""),
		executionRec(t, 0, record.Execution{FireID: "f1", Host: "etl", Name: "flaky", FiredAt: t0}),
	}
	for _, r := range sequence(recs...) {
		apply(t, st, r)
	}
	words := func(n *storetype.NextAttempt) string {
		if n == nil {
			return "none"
		}
		return fmt.Sprintf("attempt %d at %s", n.Attempt, n.At.Format(time.RFC3339))
	}
	for i, s := range steps {
		s.rec.Offset = int64(10 + i)
		apply(t, st, s.rec)
		task, err := st.TaskByKey(ctx, "etl/flaky")
		if err != nil {
			t.Fatal(err)
		}
		run, err := st.ExecutionRun(ctx, "f1", 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := words(task.NextAttempt); got != s.want {
			t.Errorf("step %d: the task's next attempt is %s, want %s", i, got, s.want)
		}
		if got := words(run.NextAttempt); got != s.want {
			t.Errorf("step %d: the run's next attempt is %s, want %s", i, got, s.want)
		}
	}
}
