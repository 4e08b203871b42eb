package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	cmdrecord "github.com/jobdrop/jobdrop/internal/command"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// sendChained sends defs as a file or the API does: the links of every
// chained definition first, then the commands, in one transaction.
func (h *harness) sendChained(defs ...task.Definition) {
	h.t.Helper()
	cl := kafkatest.Client(h.t, h.brokers, kgo.TransactionalID(fmt.Sprintf("test-%d", time.Now().UnixNano())))
	ctx := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		h.t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range defs {
		recs = append(recs, cmdrecord.LinkRecords(h.topics.Input, &defs[i])...)
	}
	for i := range defs {
		recs = append(recs, cmdrecord.Record(h.topics.Input, &defs[i], record.Source{Actor: "test"}, 0, h.clock.Now()))
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		h.t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		h.t.Fatal(err)
	}
}

// report writes a worker's final status on a fire, as workers do.
func (h *harness) report(fireID, status string) {
	h.t.Helper()
	v, _ := json.Marshal(record.Status{FireID: fireID, Status: status, Worker: "test", At: h.clock.Now().UnixMilli()})
	cl := kafkatest.Client(h.t, h.brokers)
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: h.topics.Status, Key: []byte(fireID), Value: v}).FirstErr(); err != nil {
		h.t.Fatal(err)
	}
}

// waitAudits waits for n audit events of action.
func (h *harness) waitAudits(action string, n int) {
	h.t.Helper()
	kafkatest.Eventually(h.t, 30*time.Second, fmt.Sprintf("%d %s events", n, action), func() bool {
		got := 0
		for _, a := range kafkatest.Decode[record.Audit](h.t, kafkatest.Drain(h.t, h.brokers, h.topics.Audit)) {
			if a.Action == action {
				got++
			}
		}
		return got >= n
	})
}

// fired is what a downstream consumer of a target topic saw, by task.
type fired struct {
	byName  map[string][]record.Fired
	attempt map[string]string // fire id → its attempt header
}

func firedOn(t *testing.T, c *kafkatest.Collector) fired {
	t.Helper()
	out := fired{byName: map[string][]record.Fired{}, attempt: map[string]string{}}
	seen := map[string]bool{}
	for _, r := range c.Records() {
		var f record.Fired
		if err := json.Unmarshal(r.Value, &f); err != nil {
			t.Fatal(err)
		}
		if seen[f.FireID] {
			t.Errorf("fire %s of %s fired twice", f.FireID, f.Name)
		}
		seen[f.FireID] = true
		out.byName[f.Name] = append(out.byName[f.Name], f)
		for _, hd := range r.Headers {
			if hd.Key == record.HeaderFireAttempt {
				out.attempt[f.FireID] = string(hd.Value)
			}
		}
	}
	return out
}

// waitFor waits until the consumer saw n fires of the task name.
func (h *harness) waitFor(c *kafkatest.Collector, name string, n int) record.Fired {
	h.t.Helper()
	var last record.Fired
	kafkatest.Eventually(h.t, 30*time.Second, fmt.Sprintf("%d fires of %s", n, name), func() bool {
		fs := firedOn(h.t, c).byName[name]
		if len(fs) >= n {
			last = fs[n-1]
			return true
		}
		return false
	})
	return last
}

// stateOf is the latest state of the task with key on the state topic.
func (h *harness) stateOf(key string) record.State {
	h.t.Helper()
	var st record.State
	kafkatest.EachCommitted(h.t, h.brokers, h.topics.State, func(r *kgo.Record) {
		if string(r.Key) == key && r.Value != nil {
			st = record.State{}
			if err := json.Unmarshal(r.Value, &st); err != nil {
				h.t.Fatal(err)
			}
		}
	})
	return st
}

func TestChainFiresEachSuccessorOncePerRun(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	audit := h.watch(h.topics.Audit)
	h.start()
	chained := func(name string, after ...string) task.Definition {
		return task.Definition{Host: "acme", Name: name, Action: task.Insert, Topic: "jobs", After: after}
	}
	h.sendChained(every("extract", t0.Add(time.Second), task.Seconds, 10),
		chained("transform", "extract"), chained("load", "extract"), chained("report", "transform", "load"))

	// Run 1: every step succeeds.
	h.advanceTo(t0.Add(time.Second))
	ex := h.waitFor(jobs, "extract", 1)
	h.report(ex.FireID, record.StatusSuccess)
	tr := h.waitFor(jobs, "transform", 1)
	ld := h.waitFor(jobs, "load", 1)
	for _, f := range []record.Fired{tr, ld} {
		if !slices.Equal(f.After, []string{ex.FireID}) {
			t.Errorf("%s fired after %v, want extract's run %s", f.Name, f.After, ex.FireID)
		}
	}
	h.report(tr.FireID, record.StatusSuccess)
	h.report(tr.FireID, record.StatusSuccess) // a worker that reports twice
	h.report(ex.FireID, record.StatusSuccess)
	h.waitIdle()
	if n := len(firedOn(t, jobs).byName["report"]); n != 0 {
		t.Fatalf("report fired %d times before load ended", n)
	}
	h.report(ld.FireID, record.StatusSuccess)
	rp := h.waitFor(jobs, "report", 1)
	if want := []string{tr.FireID, ld.FireID}; !slices.Equal(rp.After, want) {
		t.Errorf("report fired after %v, want %v", rp.After, want)
	}
	if want := record.ChainFireID("acme", "report", []string{tr.FireID, ld.FireID}); rp.FireID != want {
		t.Errorf("report's fire id %s, want %s (made of the runs that released it)", rp.FireID, want)
	}

	// Run 2: transform fails; report is held until released.
	h.advanceTo(t0.Add(11 * time.Second))
	ex2 := h.waitFor(jobs, "extract", 2)
	h.report(ex2.FireID, record.StatusSuccess)
	tr2 := h.waitFor(jobs, "transform", 2)
	ld2 := h.waitFor(jobs, "load", 2)
	h.report(ld2.FireID, record.StatusSuccess)
	h.report(tr2.FireID, record.StatusFailed)
	kafkatest.Eventually(t, 30*time.Second, "report held", func() bool {
		st := h.stateOf("acme/report")
		return st.Chain != nil && strings.Contains(st.Chain.Held, "acme/transform FAILED")
	})
	h.report(tr2.FireID, record.StatusFailed)
	h.waitIdle()
	if n := len(firedOn(t, jobs).byName["report"]); n != 1 {
		t.Fatalf("report fired %d times with transform failed, want only run 1's", n)
	}
	held := 0
	for _, a := range kafkatest.Decode[record.Audit](t, audit.Records()) {
		if a.Action == record.ActionChainHeld && a.Object == "acme/report" {
			held++
		}
	}
	if held != 1 {
		t.Errorf("%d chain_held events for one failure, want 1", held)
	}
	h.send(task.Definition{Host: "acme", Name: "report", Action: task.Release})
	rel := h.waitFor(jobs, "report", 2)
	if !rel.Triggered || !slices.Equal(rel.After, []string{tr2.FireID, ld2.FireID}) {
		t.Errorf("released report: %+v", rel)
	}
	if st := h.stateOf("acme/report"); st.Chain == nil || st.Chain.Held != "" {
		t.Errorf("chain after the release: %+v", st.Chain)
	}

	// Run 3: a new run of transform after a failure releases as usual.
	h.advanceTo(t0.Add(21 * time.Second))
	ex3 := h.waitFor(jobs, "extract", 3)
	h.report(ex3.FireID, record.StatusSuccess)
	tr3 := h.waitFor(jobs, "transform", 3)
	ld3 := h.waitFor(jobs, "load", 3)
	h.report(tr3.FireID, record.StatusSuccess)
	h.report(ld3.FireID, record.StatusSuccess)
	h.waitFor(jobs, "report", 3)
	h.waitIdle()
	got := firedOn(t, jobs).byName
	for name, want := range map[string]int{"extract": 3, "transform": 3, "load": 3, "report": 3} {
		if len(got[name]) != want {
			t.Errorf("%s fired %d times, want %d", name, len(got[name]), want)
		}
	}
}

func TestRetryFiresFailedRunAgainAcrossARestart(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	e := h.start()
	flaky := oneShot("flaky", t0.Add(time.Second))
	flaky.Retry = &task.Retry{Attempts: 3, Delay: 5000, Multiplier: 2}
	next := task.Definition{Host: "acme", Name: "next", Action: task.Insert, Topic: "jobs", After: []string{"flaky"}}
	h.sendChained(flaky, next)

	h.advanceTo(t0.Add(time.Second))
	a1 := h.waitFor(jobs, "flaky", 1)
	h.report(a1.FireID, record.StatusFailed)
	h.waitAudits(record.ActionTaskRetryScheduled, 1)
	// The engine goes away between the failure and the retry; another
	// takes over.
	e.stop()
	h.report(a1.FireID, record.StatusFailed) // said again while no engine runs
	h.start()
	h.waitIdle()
	h.advanceTo(t0.Add(6 * time.Second))
	a2 := h.waitFor(jobs, "flaky", 2)
	h.report(a2.FireID, record.StatusFailed)
	h.waitAudits(record.ActionTaskRetryScheduled, 2)
	h.advanceTo(t0.Add(16 * time.Second)) // 5s, then 10s: doubled
	a3 := h.waitFor(jobs, "flaky", 3)
	h.report(a3.FireID, record.StatusSuccess)
	n := h.waitFor(jobs, "next", 1)
	h.advanceTo(t0.Add(60 * time.Second))
	h.waitIdle()

	got := firedOn(t, jobs)
	if len(got.byName["flaky"]) != 3 || len(got.byName["next"]) != 1 {
		t.Fatalf("fired flaky %d times and next %d, want 3 and 1", len(got.byName["flaky"]), len(got.byName["next"]))
	}
	for i, f := range []record.Fired{a1, a2, a3} {
		attempt := i + 1
		if f.ScheduledAt != t0.Add(time.Second).UnixMilli() {
			t.Errorf("attempt %d scheduled at %d, want the occurrence's", attempt, f.ScheduledAt)
		}
		if attempt == 1 {
			if f.Attempt != 0 || f.FireID != record.FireID("acme", "flaky", f.ScheduledAt) {
				t.Errorf("first attempt %+v", f)
			}
			continue
		}
		if f.Attempt != attempt || f.Run != a1.FireID || f.FireID != record.AttemptFireID(a1.FireID, attempt) ||
			got.attempt[f.FireID] != fmt.Sprint(attempt) {
			t.Errorf("attempt %d: %+v, header %q", attempt, f, got.attempt[f.FireID])
		}
	}
	wantFired := []int64{t0.Add(time.Second).UnixMilli(), t0.Add(6 * time.Second).UnixMilli(), t0.Add(16 * time.Second).UnixMilli()}
	for i, f := range []record.Fired{a1, a2, a3} {
		if f.FiredAt != wantFired[i] {
			t.Errorf("attempt %d fired at %d, want %d", i+1, f.FiredAt, wantFired[i])
		}
	}
	if !slices.Equal(n.After, []string{a1.FireID}) {
		t.Errorf("next released by %v, want flaky's run %s", n.After, a1.FireID)
	}
	execs := kafkatest.Decode[record.Execution](t, kafkatest.Drain(t, h.brokers, h.topics.Executions))
	attempts := map[int]bool{}
	for _, x := range execs {
		if x.Name == "flaky" {
			attempts[max(x.Attempt, 1)] = true
		}
	}
	if len(attempts) != 3 {
		t.Errorf("executions of flaky's attempts: %v", attempts)
	}
}

func TestChainGateDelayAndErrorHandler(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	h.start()
	load := every("load", t0.Add(time.Second), task.Hours, 1)
	// report has a schedule of its own: each occurrence waits for load.
	report := every("report", t0.Add(2*time.Second), task.Seconds, 60)
	report.After = []string{"load"}
	// archive follows load 10s after it succeeds; alert only if it fails.
	archive := task.Definition{Host: "acme", Name: "archive", Action: task.Insert, Topic: "jobs", After: []string{"load"}, Delay: 10_000}
	alert := task.Definition{Host: "acme", Name: "alert", Action: task.Insert, Topic: "jobs", After: []string{"load"}, On: task.OnFailure}
	h.sendChained(load, report, archive, alert)

	h.advanceTo(t0.Add(time.Second))
	ld := h.waitFor(jobs, "load", 1)
	h.advanceTo(t0.Add(2 * time.Second)) // report's occurrence comes before load ended
	kafkatest.Eventually(t, 30*time.Second, "report waiting", func() bool {
		st := h.stateOf("acme/report")
		return st.Chain != nil && st.Chain.Waiting == t0.Add(2*time.Second).UnixMilli()
	})
	if n := len(firedOn(t, jobs).byName["report"]); n != 0 {
		t.Fatalf("report fired %d times before load ended", n)
	}
	h.clock.Advance(3 * time.Second) // load ends at t0+5s
	h.report(ld.FireID, record.StatusSuccess)
	rp := h.waitFor(jobs, "report", 1)
	if rp.ScheduledAt != t0.Add(2*time.Second).UnixMilli() || rp.FireID != record.FireID("acme", "report", rp.ScheduledAt) ||
		!slices.Equal(rp.After, []string{ld.FireID}) {
		t.Errorf("the waiting occurrence fired as %+v", rp)
	}
	if rp.FiredAt != t0.Add(5*time.Second).UnixMilli() {
		t.Errorf("report fired at %d, want when load ended", rp.FiredAt)
	}
	kafkatest.Eventually(t, 30*time.Second, "archive's release on its way", func() bool {
		st := h.stateOf("acme/archive")
		return st.Chain != nil && st.Chain.Release != nil
	})
	h.advanceTo(t0.Add(15*time.Second - time.Millisecond))
	if n := len(firedOn(t, jobs).byName["archive"]); n != 0 {
		t.Fatalf("archive fired before its delay")
	}
	h.advanceTo(t0.Add(15 * time.Second))
	ar := h.waitFor(jobs, "archive", 1)
	if ar.ScheduledAt != t0.Add(15*time.Second).UnixMilli() {
		t.Errorf("archive scheduled at %d, want 10s after load ended", ar.ScheduledAt)
	}
	// The next occurrence of report finds load's run spent: it waits.
	h.advanceTo(t0.Add(62 * time.Second))
	h.waitIdle()
	got := firedOn(t, jobs).byName
	if len(got["report"]) != 1 || len(got["alert"]) != 0 || len(got["archive"]) != 1 {
		t.Fatalf("fired report %d, alert %d, archive %d times; want 1, 0, 1", len(got["report"]), len(got["alert"]), len(got["archive"]))
	}
	if st := h.stateOf("acme/alert"); st.Chain == nil || st.Chain.Held != "" {
		t.Errorf("alert after load succeeded: %+v", st.Chain)
	}
	// A run of load that fails releases alert, and holds archive.
	h.send(task.Definition{Host: "acme", Name: "load", Action: task.Trigger})
	ld2 := h.waitFor(jobs, "load", 2)
	h.report(ld2.FireID, record.StatusFailed)
	al := h.waitFor(jobs, "alert", 1)
	if !slices.Equal(al.After, []string{ld2.FireID}) {
		t.Errorf("alert released by %v", al.After)
	}
	kafkatest.Eventually(t, 30*time.Second, "archive held", func() bool {
		st := h.stateOf("acme/archive")
		return st.Chain != nil && st.Chain.Held != ""
	})
	h.send(task.Definition{Host: "acme", Name: "archive", Action: task.SkipRun})
	kafkatest.Eventually(t, 30*time.Second, "archive's run skipped", func() bool {
		st := h.stateOf("acme/archive")
		return st.Chain != nil && st.Chain.Held == ""
	})
	h.waitIdle()
	if n := len(firedOn(t, jobs).byName["archive"]); n != 1 {
		t.Errorf("archive fired %d times after its run was skipped, want 1", n)
	}
}

func TestRetryOnOverdue(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	h.start()
	slow := every("slow", t0.Add(time.Second), task.Hours, 1)
	slow.Timeout = 5000
	slow.Retry = &task.Retry{Attempts: 2, Delay: 1000, OnOverdue: true}
	h.sendChained(slow)
	h.advanceTo(t0.Add(time.Second))
	a1 := h.waitFor(jobs, "slow", 1)
	h.advanceTo(t0.Add(6 * time.Second)) // past the timeout: attempt 1 counts as failed
	h.waitAudits(record.ActionTaskRetryScheduled, 1)
	h.advanceTo(t0.Add(7 * time.Second))
	a2 := h.waitFor(jobs, "slow", 2)
	if a2.Attempt != 2 || a2.Run != a1.FireID {
		t.Errorf("second attempt %+v", a2)
	}
	h.report(a1.FireID, record.StatusSuccess) // too late: that attempt was given up
	h.advanceTo(t0.Add(12 * time.Second))     // the last attempt overdue too: the run failed
	h.waitAudits(record.ActionTaskRunFailed, 1)
	h.waitIdle()
	if n := len(firedOn(t, jobs).byName["slow"]); n != 2 {
		t.Errorf("slow fired %d times, want 2", n)
	}
}

// TestChainsFireOnceAcrossCrashes kills every runner in the middle of
// its chain's transactions, those that read the predecessors' statuses
// and send their outcomes, and those that release the successors, and
// has fresh engines take over: every successor fires once per run of its
// predecessor.
func TestChainsFireOnceAcrossCrashes(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	const pairs = 40
	var defs []task.Definition
	for i := range pairs {
		a := every(fmt.Sprintf("a-%02d", i), t0.Add(time.Second), task.Seconds, 10)
		b := task.Definition{Host: "acme", Name: fmt.Sprintf("b-%02d", i), Action: task.Insert, Topic: "jobs", After: []string{a.Name}}
		defs = append(defs, a, b)
	}
	e := h.start()
	h.sendChained(defs...)
	kafkatest.Eventually(t, 30*time.Second, "tasks active", func() bool { return e.ActiveTasks() == 2*pairs })
	for run := 1; run <= 2; run++ {
		h.advanceTo(t0.Add(time.Duration(1+10*(run-1)) * time.Second))
		h.waitFired(jobs, run*2*pairs-pairs)
		var mu sync.Mutex
		crashes := 0
		testHookBeforeCommit = func(p int32, fires int) bool {
			mu.Lock()
			defer mu.Unlock()
			crashes++
			return crashes <= 3 // the first three chain transactions die
		}
		var as []record.Fired
		for _, fs := range firedOn(t, jobs).byName {
			if strings.HasPrefix(fs[len(fs)-1].Name, "a-") {
				as = append(as, fs[len(fs)-1])
			}
		}
		for _, a := range as {
			h.report(a.FireID, record.StatusSuccess)
		}
		kafkatest.Eventually(t, 30*time.Second, "three crashes", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return crashes >= 3
		})
		e.stop()
		testHookBeforeCommit = nil
		for _, a := range as[:5] {
			h.report(a.FireID, record.StatusSuccess) // reported again while no engine runs
		}
		e = h.start()
		h.waitFired(jobs, run*2*pairs)
	}
	h.advanceTo(t0.Add(15 * time.Second))
	h.waitIdle()
	e.stop()
	got := firedOn(t, jobs).byName
	for i := range pairs {
		if a, b := got[fmt.Sprintf("a-%02d", i)], got[fmt.Sprintf("b-%02d", i)]; len(a) != 2 || len(b) != 2 {
			t.Errorf("pair %d: a fired %d times, b %d, want 2 each", i, len(a), len(b))
		} else if !slices.Equal(b[0].After, []string{a[0].FireID}) || !slices.Equal(b[1].After, []string{a[1].FireID}) {
			t.Errorf("pair %d: b released by %v and %v", i, b[0].After, b[1].After)
		}
	}
}

func TestRunsNeverReportedAreBounded(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	e := h.start()
	noisy := every("noisy", t0.Add(time.Second), task.Seconds, 1)
	h.sendChained(noisy, task.Definition{Host: "acme", Name: "quiet", Action: task.Insert, Topic: "jobs", After: []string{"noisy"}})
	kafkatest.Eventually(t, 30*time.Second, "tasks active", func() bool { return e.ActiveTasks() == 2 })
	const fires = maxOpenRuns + 5
	for s := 1; s <= fires; s++ {
		h.advanceTo(t0.Add(time.Duration(s) * time.Second))
	}
	h.waitFired(jobs, fires)
	h.waitIdle()
	open := 0
	e.mu.Lock()
	for _, r := range e.runners {
		open += len(r.runs.byKey["acme/noisy"])
	}
	e.mu.Unlock()
	if open != maxOpenRuns {
		t.Errorf("%d runs of noisy kept, want %d", open, maxOpenRuns)
	}
	// The latest run still releases quiet.
	last := h.waitFor(jobs, "noisy", fires)
	h.report(last.FireID, record.StatusSuccess)
	q := h.waitFor(jobs, "quiet", 1)
	if !slices.Equal(q.After, []string{last.FireID}) {
		t.Errorf("quiet released by %v", q.After)
	}
}
