package store

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
)

// observed collects what a Recorder tells its Observe hook.
type observed struct {
	mu       sync.Mutex
	outcomes map[string]int
	lags     []int64
}

func (o *observed) observe(p Progress) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, n := range p.Executions {
		o.outcomes[k] += n
	}
	o.lags = append(o.lags, p.Lag)
}

func (o *observed) snapshot() (map[string]int, []int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.outcomes), append([]int64(nil), o.lags...)
}

func startObservedRecorder(t *testing.T, st *Store, c *kfake.Cluster, maxPoll int) (*Recorder, *observed) {
	t.Helper()
	o := &observed{outcomes: map[string]int{}}
	rec, err := NewRecorder(st, RecorderConfig{
		ClientOpts:     []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)},
		Topics:         testTopics,
		MaxPollRecords: maxPoll,
		Observe:        o.observe,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- rec.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("recorder run: %v", err)
		}
	})
	return rec, o
}

func TestRecorderObservesExecutionOutcomes(t *testing.T) {
	c := newCluster(t)
	st := openStore(t, tempDB(t))
	rec, o := startObservedRecorder(t, st, c, 0)
	prod := producer(t, c, "outcomes")

	// The executions first, so every status finds its fire time and
	// timeout.
	execs := []record.Execution{
		{FireID: "no-timeout", Host: "acme", Name: "a", FiredAt: 1000},
		{FireID: "in-time", Host: "acme", Name: "b", FiredAt: 1000, Timeout: 500},
		{FireID: "late", Host: "acme", Name: "c", FiredAt: 1000, Timeout: 500},
		{FireID: "failed-late", Host: "acme", Name: "d", FiredAt: 1000, Timeout: 500},
	}
	var recs []*kgo.Record
	for i, ex := range execs {
		recs = append(recs, executionRec(t, int32(i%3), ex))
	}
	produceTxn(t, prod, true, recs...)
	waitFor(t, rec, "the executions", func() bool {
		_, err := st.ExecutionByFireID(ctxT(t), "failed-late")
		return err == nil
	})

	produceTxn(t, prod, true,
		statusRec(t, 0, record.Status{FireID: "no-timeout", Status: "SUCCESS", At: 999_999}),
		statusRec(t, 1, record.Status{FireID: "in-time", Status: "RUNNING", At: 1100}),
		statusRec(t, 1, record.Status{FireID: "in-time", Status: "SUCCESS", At: 1500}),
		statusRec(t, 2, record.Status{FireID: "late", Status: "SUCCESS", At: 1501}),
		statusRec(t, 0, record.Status{FireID: "failed-late", Status: "FAILED", At: 5000}),
		// Older than the FAILED stored: changes nothing, counts nothing.
		statusRec(t, 0, record.Status{FireID: "failed-late", Status: "SUCCESS", At: 4000}),
		// A worker's report before its execution record: no timeout known.
		statusRec(t, 2, record.Status{FireID: "unknown", Status: "SUCCESS", At: 1}),
	)
	want := map[string]int{"SUCCESS": 3, "OVERDUE": 1, "FAILED": 1}
	waitFor(t, rec, fmt.Sprint("outcomes ", want), func() bool {
		got, _ := o.snapshot()
		return got["SUCCESS"]+got["OVERDUE"]+got["FAILED"] >= 5
	})
	got, _ := o.snapshot()
	for k, n := range got {
		if n == 0 {
			delete(got, k)
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}

func TestRecorderObservesItsLag(t *testing.T) {
	c := newCluster(t)
	st := openStore(t, tempDB(t))
	// One record per SQLite transaction: the lag shrinks one by one.
	rec, o := startObservedRecorder(t, st, c, 1)
	prod := producer(t, c, "lag")
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, auditRec(t, 0, record.Audit{ID: fmt.Sprint("ev-", i), Actor: "test", Action: "test"}))
	}
	produceTxn(t, prod, true, recs...)
	waitFor(t, rec, "the lag back to 0 after 20 records", func() bool {
		_, lags := o.snapshot()
		return len(lags) >= 20 && lags[len(lags)-1] == 0
	})
	_, lags := o.snapshot()
	// The first poll already knew the transaction's end: 20 records and
	// its commit marker, one of them stored.
	if lags[0] != 20 {
		t.Errorf("first lag %d, want 20 (all lags: %v)", lags[0], lags)
	}
	for i := 1; i < len(lags); i++ {
		if lags[i] > lags[i-1] {
			t.Errorf("lag grew from %d to %d with nothing new committed: %v", lags[i-1], lags[i], lags)
		}
	}
}
