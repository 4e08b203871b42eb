package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

const (
	t0        = int64(1_767_225_600_000) // 2026-01-01T00:00:00Z
	batchJobs = "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1"
	batchBad  = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"
	batchLost = "b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3"
	scriptKey = "acme/<script>alert(1)</script>"
	startedID = "node-1-started"
)

// produceFixture writes a small history to the cluster: files injected,
// rejected and dropped again, tasks created, fired, completed, worker
// reports, an engine checkpoint, and one aborted transaction touching
// every topic that must leave no trace.
func produceFixture(t *testing.T, c *kfake.Cluster) {
	t.Helper()
	injector := producer(t, c, "injector")
	engine := producer(t, c, "engine")
	worker := producer(t, c, "worker")

	produceTxn(t, injector, true, auditRec(t, 0, record.Audit{
		ID: "a-injected", At: t0, Actor: "watcher", Action: record.ActionFileInjected, Object: "jobs.csv", Outcome: record.OutcomeOK,
		Batch: &record.Batch{ID: batchJobs, File: "jobs.csv", Folder: "inbox", Size: 120, Rows: 3},
	}))
	nightly := task.Definition{Host: "acme", Name: "nightly", Action: task.Insert, Topic: "jobs",
		Frequency: &task.Frequency{TimeUnit: task.Days, Time: 1}, Data: map[string]string{"cmd": "backup"}}
	script := task.Definition{Host: "acme", Name: "<script>alert(1)</script>", Action: task.Insert, Topic: "jobs", Start: task.Ptr(t0 + 3_600_000)}
	once := task.Definition{Host: "acme", Name: "once", Action: task.Insert, Topic: "jobs", Start: task.Ptr(t0 + 60_000)}
	src := func(row int) record.Source { return record.Source{Batch: batchJobs, File: "jobs.csv", Row: row} }
	produceTxn(t, engine, true,
		stateRec(t, 1, "acme/nightly", &record.State{Definition: nightly, Anchor: t0, NextFire: t0 + 2*86_400_000,
			FireCount: 2, LastFire: t0 + 86_400_000, Source: src(1), UpdatedAt: t0 + 86_400_010}, ""),
		stateRec(t, 2, scriptKey, &record.State{Definition: script, Anchor: t0 + 3_600_000, NextFire: t0 + 3_600_000,
			Source: src(2), UpdatedAt: t0 + 10}, ""),
		stateRec(t, 0, "acme/once", &record.State{Definition: once, Anchor: t0 + 60_000, NextFire: t0 + 60_000,
			Source: src(3), UpdatedAt: t0 + 10}, ""),
		&kgo.Record{Topic: testTopics.State, Partition: 1, Key: []byte("#checkpoint/0"), Value: []byte(`{"offset":12}`)},
	)
	produceTxn(t, engine, true,
		stateRec(t, 0, "acme/once", nil, record.EndCompleted),
		executionRec(t, 0, record.Execution{FireID: "f1", Host: "acme", Name: "nightly", Topic: "jobs", Partition: 2, Offset: 7,
			ScheduledAt: t0 + 86_400_000, FiredAt: t0 + 86_400_005, Batch: batchJobs}),
		executionRec(t, 1, record.Execution{FireID: "f2", Host: "acme", Name: "once", Topic: "jobs", Partition: 0, Offset: 3,
			ScheduledAt: t0 + 60_000, FiredAt: t0 + 60_002, Batch: batchJobs}),
	)
	produceTxn(t, worker, true,
		statusRec(t, 2, record.Status{FireID: "f1", Status: record.StatusSuccess, Message: "done", Worker: "w1", At: t0 + 86_400_100}),
		statusRec(t, 0, record.Status{FireID: "f3", Status: record.StatusRunning, Worker: "w2", At: t0 + 90_000}),
	)
	produceTxn(t, injector, true, auditRec(t, 1, record.Audit{
		ID: "a-rejected", At: t0 + 1000, Actor: "watcher", Action: record.ActionFileRejected, Object: "bad.csv", Outcome: record.OutcomeRejected,
		Batch: &record.Batch{ID: batchBad, File: "bad.csv", Folder: "inbox", Size: 80, Rows: 3, Rejected: 2,
			Errors: []string{`row 2: column timeUnit: unknown unit "FORTNIGHTS"`, "row 3: column host: is required"}},
	}))

	// Everything in this transaction is aborted and must not appear.
	produceTxn(t, injector, false,
		auditRec(t, 2, record.Audit{ID: "a-lost", At: t0 + 2000, Actor: "watcher", Action: record.ActionFileInjected, Object: "lost.csv",
			Outcome: record.OutcomeOK, Batch: &record.Batch{ID: batchLost, File: "lost.csv", Rows: 1}}),
		stateRec(t, 2, "acme/aborted", &record.State{Definition: once, Anchor: t0, NextFire: t0, UpdatedAt: t0}, ""),
		executionRec(t, 2, record.Execution{FireID: "f9", Host: "acme", Name: "aborted", Topic: "jobs", ScheduledAt: t0, FiredAt: t0}),
		statusRec(t, 2, record.Status{FireID: "f1", Status: record.StatusFailed, Message: "aborted", At: t0 + 86_400_200}),
	)

	produceTxn(t, injector, true,
		auditRec(t, 2, record.Audit{ID: "a-duplicate", At: t0 + 3000, Actor: "watcher", Action: record.ActionFileDuplicate,
			Object: "jobs-copy.csv", Outcome: record.OutcomeNoChange, Batch: &record.Batch{ID: batchJobs, File: "jobs-copy.csv", Size: 120, Rows: 3}}),
	)
	produceTxn(t, injector, true, auditRec(t, 0, record.Audit{ID: startedID, At: t0 + 4000, Actor: "node-1", Action: "node.started", Outcome: record.OutcomeOK}))
}

// endOffsets lists the last stable offset of every partition of our topics.
func endOffsets(t *testing.T, c *kfake.Cluster) map[string]map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListCommittedOffsets(ctxT(t), testTopics.Audit, testTopics.State, testTopics.Executions, testTopics.Status)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	out := make(map[string]map[int32]int64)
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("list end offsets %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		if out[o.Topic] == nil {
			out[o.Topic] = make(map[int32]int64)
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	return out
}

// waitCaughtUp waits until the store has applied every record committed
// to the cluster so far.
func waitCaughtUp(t *testing.T, r *Recorder, st *Store, c *kfake.Cluster) {
	t.Helper()
	ends := endOffsets(t, c)
	waitFor(t, r, fmt.Sprintf("offsets %v", ends), func() bool {
		got, err := st.Offsets(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for topic, ps := range ends {
			for p, end := range ps {
				if end > 0 && got[topic][p] < end {
					return false
				}
			}
		}
		return true
	})
}

// dump renders every table, in key order, as text.
func dump(t *testing.T, st *Store) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT * FROM batches ORDER BY id`,
		`SELECT * FROM tasks ORDER BY key`,
		`SELECT * FROM executions ORDER BY fire_id`,
		`SELECT id, at, actor, action, object, outcome, detail, batch_id FROM audit ORDER BY id`,
		`SELECT * FROM topic_offsets ORDER BY topic, partition`,
	} {
		db, done := st.reader()
		rows, err := db.Query(q)
		done()
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		cols, _ := rows.Columns()
		fmt.Fprintf(&b, "%s\n", q)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if bs, ok := v.([]byte); ok {
					vals[i] = string(bs)
				}
			}
			fmt.Fprintf(&b, "  %v\n", vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}

func TestRecorderAppliesCommittedRecordsOnly(t *testing.T) {
	c := newCluster(t)
	produceFixture(t, c)
	st := openStore(t, tempDB(t))
	r := startRecorder(t, st, c, nil)
	ctx := ctxT(t)
	if err := r.WaitAudit(ctx, startedID); err != nil {
		t.Fatalf("wait audit: %v", err)
	}
	// WaitAudit promises every audit record committed before the call:
	// the files on other partitions than the awaited event's.
	for _, id := range []string{batchJobs, batchBad} {
		if _, err := st.BatchByID(ctx, id); err != nil {
			t.Errorf("after WaitAudit: %v", err)
		}
	}
	waitCaughtUp(t, r.Recorder, st, c)

	t.Run("batches", func(t *testing.T) {
		b, err := st.BatchByID(ctx, batchJobs)
		if err != nil {
			t.Fatal(err)
		}
		if b.Status != storetype.BatchInjected || b.File != "jobs.csv" || b.Rows != 3 || b.Accepted != 3 || b.Duplicates != 1 || b.Tasks != 3 {
			t.Errorf("injected batch = %+v; want injected jobs.csv, 3 rows accepted, 1 duplicate, 3 tasks", b)
		}
		if b.LastDuplicateAt == nil || b.LastDuplicateAt.UnixMilli() != t0+3000 {
			t.Errorf("last duplicate = %v, want %d", b.LastDuplicateAt, t0+3000)
		}
		if b.FirstSeen.UnixMilli() != t0 {
			t.Errorf("first seen = %v, want %d", b.FirstSeen, t0)
		}
		bad, err := st.BatchByID(ctx, batchBad)
		if err != nil {
			t.Fatal(err)
		}
		if bad.Status != storetype.BatchRejected || bad.Rejected != 2 || bad.Accepted != 0 || len(bad.Errors) != 2 {
			t.Errorf("rejected batch = %+v", bad)
		}
		if _, err := st.BatchByID(ctx, batchLost); !errors.Is(err, storetype.ErrNotFound) {
			t.Errorf("batch of an aborted transaction: err = %v, want not found", err)
		}
		for id, want := range map[string]bool{batchJobs: true, batchBad: false, batchLost: false} {
			got, err := st.BatchInjected(ctx, id)
			if err != nil || got != want {
				t.Errorf("BatchInjected(%.6s) = %v, %v; want %v", id, got, err, want)
			}
		}
		recent, err := st.Files(ctx, storetype.FileFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(recent.Rows) != 2 || recent.Total != 2 || recent.Rows[0].Batch == nil || recent.Rows[0].Batch.ID != batchJobs {
			t.Errorf("recent files = %+v; want jobs.csv (dropped again last) then bad.csv", recent)
		}
	})

	t.Run("tasks", func(t *testing.T) {
		all, err := st.Tasks(ctx, storetype.TaskFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, tk := range all.Rows {
			keys = append(keys, tk.Key+"="+tk.Status)
		}
		want := []string{scriptKey + "=active", "acme/nightly=active", "acme/once=completed"}
		if fmt.Sprint(keys) != fmt.Sprint(want) {
			t.Errorf("tasks = %v, want %v (soonest first; no checkpoint, no aborted task)", keys, want)
		}
		n, err := st.TaskByKey(ctx, "acme/nightly")
		if err != nil {
			t.Fatal(err)
		}
		if n.NextFire == nil || n.NextFire.UnixMilli() != t0+2*86_400_000 || n.FireCount != 2 || n.Schedule != "every day" ||
			n.SourceRow != 1 || n.Batch != batchJobs || n.Executions != 1 || n.Topic != "jobs" {
			t.Errorf("nightly = %+v", n)
		}
		if !strings.Contains(n.Definition, `"cmd":"backup"`) {
			t.Errorf("definition = %s, want its data", n.Definition)
		}
		o, err := st.TaskByKey(ctx, "acme/once")
		if err != nil {
			t.Fatal(err)
		}
		if o.NextFire != nil || o.Status != storetype.TaskCompleted || o.Schedule != "once" || o.Executions != 1 {
			t.Errorf("once = %+v; want completed, no next fire, 1 execution", o)
		}
		if _, err := st.TaskByKey(ctx, "acme/aborted"); !errors.Is(err, storetype.ErrNotFound) {
			t.Errorf("task of an aborted transaction: err = %v", err)
		}
		active, err := st.Tasks(ctx, storetype.TaskFilter{Status: storetype.TaskActive})
		if err != nil || len(active.Rows) != 2 || active.Total != 2 {
			t.Errorf("active tasks = %d of %d, %v; want 2", len(active.Rows), active.Total, err)
		}
		byBatch, err := st.Tasks(ctx, storetype.TaskFilter{Batch: batchJobs, Limit: 2})
		if err != nil || len(byBatch.Rows) != 2 {
			t.Errorf("tasks by batch with limit 2 = %d, %v", len(byBatch.Rows), err)
		}
	})

	t.Run("executions", func(t *testing.T) {
		want := map[string]string{"f1": "SUCCESS", "f2": "FIRED", "f3": "RUNNING"}
		recent, err := st.Executions(ctx, storetype.ExecutionFilter{})
		if err != nil {
			t.Fatal(err)
		}
		got := make(map[string]string)
		for _, e := range recent.Rows {
			got[e.FireID] = e.Status
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("executions = %v, want %v (f9 aborted, f1's FAILED aborted)", got, want)
		}
		byTask, err := st.Executions(ctx, storetype.ExecutionFilter{Task: "acme/nightly"})
		if err != nil || len(byTask.Rows) != 1 || byTask.Rows[0].StatusMessage != "done" || byTask.Rows[0].TargetOffset != 7 {
			t.Errorf("executions of nightly = %+v, %v", byTask, err)
		}
	})

	t.Run("audit and summary", func(t *testing.T) {
		events, err := st.Audit(ctx, storetype.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range events.Rows {
			ids = append(ids, e.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint([]string{startedID, "a-duplicate", "a-rejected", "a-injected"}) {
			t.Errorf("audit = %v", ids)
		}
		sum, err := st.Summary(ctx, time.UnixMilli(t0))
		if err != nil {
			t.Fatal(err)
		}
		want := storetype.Summary{FilesInjected: 1, FilesRejected: 1, FilesDuplicate: 1, TasksActive: 2, TasksCompleted: 1,
			ExecutionsFired: 1, ExecutionsRunning: 1, ExecutionsSuccess: 1}
		if sum != want {
			t.Errorf("summary = %+v, want %+v", sum, want)
		}
	})
}

// recordedFixture is the fixture on a cluster, recorded whole by a running
// recorder into a store at path.
func recordedFixture(t *testing.T, logs *logBuffer) (c *kfake.Cluster, path string, st *Store, r *running) {
	t.Helper()
	c = newCluster(t)
	produceFixture(t, c)
	path = tempDB(t)
	st = openStore(t, path)
	r = startRecorder(t, st, c, logs)
	waitCaughtUp(t, r.Recorder, st, c)
	return c, path, st, r
}

func TestRecorderResumesWhereItStopped(t *testing.T) {
	c := newCluster(t)
	produceFixture(t, c)
	path := tempDB(t)
	st := openStore(t, path)
	r := startRecorder(t, st, c, nil)
	waitCaughtUp(t, r.Recorder, st, c)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// The stored offsets are the end of every partition, transaction
	// markers included, so nothing is read twice.
	got, err := st.Offsets(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for topic, ps := range endOffsets(t, c) {
		for p, end := range ps {
			if end > 0 && got[topic][p] != end {
				t.Errorf("stored offset %s/%d = %d, want %d", topic, p, got[topic][p], end)
			}
		}
	}
	before := dump(t, st)
	st.Close()

	// A new process on the same database, with one more event to read.
	st2 := openStore(t, path)
	r2 := startRecorder(t, st2, c, nil)
	produceTxn(t, producer(t, c, "injector"), true, auditRec(t, 1, record.Audit{ID: "node-1-restarted", At: t0 + 9000, Actor: "node-1", Action: "node.started"}))
	if err := r2.WaitAudit(ctxT(t), "node-1-restarted"); err != nil {
		t.Fatal(err)
	}
	events, err := st2.Audit(ctxT(t), storetype.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Rows) != 5 || events.Total != 5 {
		t.Errorf("audit rows after restart = %d of %d, want 5", len(events.Rows), events.Total)
	}
	var n int
	if err := st2.read.QueryRow(`SELECT count(*) FROM audit`).Scan(&n); err != nil || n != 5 {
		t.Errorf("audit table holds %d rows (%v), want 5", n, err)
	}
	after := dump(t, st2)
	if !strings.Contains(after, "node-1-restarted") || strings.Count(after, "a-injected") != strings.Count(before, "a-injected") {
		t.Errorf("after restart:\n%s", after)
	}
}

func TestRecorderSkipsMalformedRecords(t *testing.T) {
	c := newCluster(t)
	cl := producer(t, c, "chaos")
	bad := []*kgo.Record{
		{Topic: testTopics.Audit, Partition: 0, Key: []byte("x"), Value: []byte(`{"id": "broken"`)},
		{Topic: testTopics.State, Partition: 1, Key: []byte("acme/broken"), Value: []byte(`not json`)},
		{Topic: testTopics.State, Partition: 1, Key: []byte("no-slash"), Value: []byte(`{"definition":{"topic":"t"}}`)},
		{Topic: testTopics.Executions, Partition: 2, Key: []byte("f-bad"), Value: []byte(`[1,2,3]`)},
		{Topic: testTopics.Status, Partition: 0, Key: []byte("f-bad"), Value: []byte(`{"fireId":"f-bad","status":"EXPLODED","at":1}`)},
		{Topic: testTopics.Status, Partition: 0, Key: []byte("f-bad"), Value: []byte(`null`)},
	}
	produceTxn(t, cl, true, bad...)
	produceTxn(t, cl, true,
		auditRec(t, 0, record.Audit{ID: "good", At: t0, Actor: "a", Action: "node.started"}),
		stateRec(t, 1, "acme/good", &record.State{Definition: task.Definition{Host: "acme", Name: "good", Topic: "t"}, NextFire: t0, UpdatedAt: t0}, ""),
		executionRec(t, 2, record.Execution{FireID: "f-good", Host: "acme", Name: "good", ScheduledAt: t0, FiredAt: t0}),
	)
	logs := &logBuffer{}
	path := tempDB(t)
	st := openStore(t, path)
	r := startRecorder(t, st, c, logs)
	waitCaughtUp(t, r.Recorder, st, c)

	ctx := ctxT(t)
	if ok, err := st.AuditRecorded(ctx, "good"); err != nil || !ok {
		t.Errorf("good audit event recorded = %v, %v", ok, err)
	}
	if _, err := st.TaskByKey(ctx, "acme/good"); err != nil {
		t.Error(err)
	}
	if _, err := st.ExecutionByFireID(ctx, "f-good"); err != nil {
		t.Error(err)
	}
	if _, err := st.ExecutionByFireID(ctx, "f-bad"); !errors.Is(err, storetype.ErrNotFound) {
		t.Errorf("malformed execution: err = %v", err)
	}
	lines := logs.lines("skipped malformed record")
	if len(lines) != len(bad) {
		t.Errorf("logged %d malformed records, want %d:\n%s", len(lines), len(bad), strings.Join(lines, "\n"))
	}
	for _, want := range []string{
		"topic=" + testTopics.Audit + " partition=0 offset=0",
		"topic=" + testTopics.State + " partition=1 offset=0",
		"topic=" + testTopics.State + " partition=1 offset=1",
		"topic=" + testTopics.Executions + " partition=2 offset=0",
		"topic=" + testTopics.Status + " partition=0 offset=0",
		"topic=" + testTopics.Status + " partition=0 offset=1",
	} {
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("no log line with %q in:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	st.Close()

	// Restarted, the recorder does not read (nor log) them again.
	st2 := openStore(t, path)
	r2 := startRecorder(t, st2, c, logs)
	produceTxn(t, cl, true, auditRec(t, 1, record.Audit{ID: "good-2", At: t0, Actor: "a", Action: "node.started"}))
	if err := r2.WaitAudit(ctx, "good-2"); err != nil {
		t.Fatal(err)
	}
	if n := len(logs.lines("skipped malformed record")); n != len(bad) {
		t.Errorf("after restart, %d malformed-record log lines, want still %d", n, len(bad))
	}
}

func TestWaitAuditStops(t *testing.T) {
	c := newCluster(t)
	st := openStore(t, tempDB(t))
	r := startRecorder(t, st, c, nil)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.WaitAudit(ctx, "never"); !errors.Is(err, context.Canceled) {
		t.Errorf("with a cancelled context: %v, want context.Canceled", err)
	}

	errc := make(chan error, 1)
	go func() { errc <- r.WaitAudit(ctxT(t), "never") }()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrRecorderStopped) {
		t.Errorf("after Run returned: %v, want ErrRecorderStopped", err)
	}
}

func TestRecorderReadsTopicCreatedLater(t *testing.T) {
	// Only the state topic exists when the recorder starts.
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, testTopics.State))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	st := openStore(t, tempDB(t))
	// A partition found while a fetch is in flight joins the next fetch:
	// a short max wait keeps the test fast.
	r := startRecorder(t, st, c, nil, kgo.MetadataMinAge(50*time.Millisecond), kgo.FetchMaxWait(100*time.Millisecond))

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 2, 1, nil, testTopics.Audit); err != nil {
		t.Fatalf("create audit topic: %v", err)
	}
	produceTxn(t, producer(t, c, "late"), true, auditRec(t, 1, record.Audit{ID: "late", At: t0, Actor: "a", Action: "node.started"}))
	if err := r.WaitAudit(ctxT(t), "late"); err != nil {
		t.Fatal(err)
	}
}
