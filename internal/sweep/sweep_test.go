package sweep_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/command"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/internal/sweep"
)

var topics = record.Topics{}.WithDefaults()

// node is one jobdrop node's part in reaping: its store, filled by its
// recorder, and its sweeper, writing through its command writer.
type node struct {
	st *store.Store
	sw *sweep.Sweeper
	// stop stops its recorder: its view lags from then on.
	stop func()
}

func startNode(t *testing.T, ctx context.Context, brokers []string, name string, clock clockwork.Clock) node {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "jobdrop.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	rec, err := store.NewRecorder(st, store.RecorderConfig{ClientOpts: opts}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	w, err := command.New(command.Config{ClientOpts: opts, TransactionalID: "commands-" + name, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	sw, err := sweep.New(sweep.Config{Node: name, ReapGrace: time.Minute, Clock: clock}, st, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	return node{st: st, sw: sw, stop: stop}
}

// TestReapOnceAcrossNodes: two nodes find the same execution left RUNNING
// past its timeout and the grace, and both write the reap (the second
// before its view has the first's); each view shows it FAILED by the
// reaper once, with one audit event, while an execution a worker finished
// and one still within its grace are left alone.
func TestReapOnceAcrossNodes(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cl := kafkatest.Client(t, brokers, kgo.TransactionalID("worker"))
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 2, 1, nil, topics.All()...); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(now)
	a := startNode(t, ctx, brokers, "node-a", clock)
	b := startNode(t, ctx, brokers, "node-b", clock)
	// c only watches: a third view, which must record both reaps once.
	c := startNode(t, ctx, brokers, "node-c", clock)

	// Fired 10 minutes ago with a 5-minute timeout: "left" is RUNNING,
	// "done" a worker finished; "young" fired 5m30s ago is within its
	// minute of grace.
	var recs []*kgo.Record
	put := func(topic, key string, v any) {
		b, _ := json.Marshal(v)
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: b})
	}
	for id, fired := range map[string]time.Time{"left": now.Add(-10 * time.Minute), "done": now.Add(-10 * time.Minute), "young": now.Add(-330 * time.Second)} {
		put(topics.Executions, id, record.Execution{FireID: id, Host: "acme", Name: id, Topic: "jobs", FiredAt: fired.UnixMilli(), Timeout: (5 * time.Minute).Milliseconds()})
	}
	put(topics.Status, "left", record.Status{FireID: "left", Status: "RUNNING", Worker: "w1", At: now.Add(-9 * time.Minute).UnixMilli()})
	put(topics.Status, "done", record.Status{FireID: "done", Status: "SUCCESS", Worker: "w1", At: now.Add(-8 * time.Minute).UnixMilli()})
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	status := func(n node, id string) storetype.Execution {
		e, _ := n.st.ExecutionByFireID(ctx, id)
		return e
	}
	for _, n := range []node{a, b, c} {
		kafkatest.Eventually(t, 30*time.Second, "the executions recorded", func() bool {
			return status(n, "left").Status == "RUNNING" && status(n, "done").Status == "SUCCESS" && status(n, "young").Status == "FIRED"
		})
	}

	// b's view stops here, so b reaps what a has reaped already.
	b.stop()
	for _, n := range []node{a, b} {
		sweepUntilDone(t, n.sw)
	}
	if got := len(kafkatest.Drain(t, brokers, topics.Audit)); got != 2 {
		t.Errorf("%d reap events on the audit topic; want one from each node", got)
	}
	for _, n := range []node{a, c} {
		kafkatest.Eventually(t, 30*time.Second, "left reaped", func() bool { return status(n, "left").Status == "FAILED" })
		left := status(n, "left")
		if left.Worker != record.ReaperWorker || left.StatusMessage != "no final status within timeout (5m0s) + grace (1m0s); reaped" ||
			!left.StatusAt.Equal(now.Add(-4*time.Minute)) {
			t.Errorf("left: %q by %q at %v; want the reaper's, at its deadline plus the grace", left.StatusMessage, left.Worker, left.StatusAt)
		}
		if e := status(n, "done"); e.Status != "SUCCESS" || e.Worker != "w1" {
			t.Errorf("done: %s by %s", e.Status, e.Worker)
		}
		if e := status(n, "young"); e.Status != "FIRED" {
			t.Errorf("young, within its grace: %s", e.Status)
		}
		kafkatest.Eventually(t, 30*time.Second, "both reaps' audit records read", func() bool {
			offsets, _ := n.st.Offsets(ctx)
			var read int64
			for _, o := range offsets[topics.Audit] {
				read += o
			}
			return read >= 4 // two events and their commit markers
		})
		events, err := n.st.Audit(ctx, storetype.AuditFilter{Action: record.ActionExecutionReaped})
		if err != nil {
			t.Fatal(err)
		}
		if len(events.Rows) != 1 || events.Rows[0].Object != "left" {
			t.Errorf("reap events: %+v; want one, for left", events.Rows)
		}
	}

	// A node whose view is not whole yet (catching up at its start,
	// rebuilding) writes no reap, however late the executions look.
	notReady, err := sweep.New(sweep.Config{Node: "node-d", ReapGrace: time.Minute, Ready: func() bool { return false },
		Clock: clockwork.NewFakeClockAt(now.Add(time.Hour))}, c.st, refuse{t}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := notReady.Sweep(ctx); err != nil {
		t.Fatal(err)
	}

	// Past young's grace, a node reaps it too; the next round writes
	// nothing more.
	clock.Advance(time.Minute)
	sweepUntilDone(t, a.sw)
	kafkatest.Eventually(t, 30*time.Second, "young reaped", func() bool { return status(a, "young").Status == "FAILED" })
	sweepUntilDone(t, a.sw)
	if got := len(kafkatest.Drain(t, brokers, topics.Audit)); got != 3 {
		t.Errorf("%d reap events on the audit topic; want 3", got)
	}
}

// refuse is the writer of a sweeper that must write nothing.
type refuse struct{ t *testing.T }

func (r refuse) Reap(_ context.Context, s record.Status, _ record.Audit) error {
	r.t.Errorf("reap of %s written by a node not ready", s.FireID)
	return nil
}

// sweepUntilDone runs one round of sw, again while its write fails, as the
// sweeper's own loop does at its next tick: a transaction the brokers
// refuse for a while (an epoch bump after OUT_OF_ORDER_SEQUENCE_NUMBER)
// is no fault of the reap.
func sweepUntilDone(t *testing.T, sw *sweep.Sweeper) {
	t.Helper()
	var last error
	kafkatest.Eventually(t, 30*time.Second, "a sweep round that writes what it must", func() bool {
		last = sw.Sweep(context.Background())
		if last != nil {
			t.Logf("sweep: %v; the next round tries again", last)
		}
		return last == nil
	})
}
