package store

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
)

// waitLimit bounds every wait for a condition in these tests.
const waitLimit = 30 * time.Second

var testTopics = record.Topics{}.WithDefaults()

func openStore(t *testing.T, path string) *Store {
	t.Helper()
	st, err := Open(path)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func tempDB(t *testing.T) string { return filepath.Join(t.TempDir(), "jobdrop.db") }

func newCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, testTopics.All()...))
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// producer returns a transactional client that writes records to the
// partition each record names.
func producer(t *testing.T, c *kfake.Cluster, txnID string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.TransactionalID(txnID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceTxn writes recs in one transaction and commits it, or aborts it
// when commit is false.
func produceTxn(t *testing.T, cl *kgo.Client, commit bool, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin transaction: %v", err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		t.Fatalf("end transaction: %v", err)
	}
}

func jsonValue(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func auditRec(t *testing.T, partition int32, ev record.Audit) *kgo.Record {
	return &kgo.Record{Topic: testTopics.Audit, Partition: partition, Key: []byte(ev.Actor), Value: jsonValue(t, ev)}
}

func stateRec(t *testing.T, partition int32, key string, st *record.State, end string) *kgo.Record {
	r := &kgo.Record{Topic: testTopics.State, Partition: partition, Key: []byte(key)}
	if st != nil {
		r.Value = jsonValue(t, st)
	}
	if end != "" {
		r.Headers = []kgo.RecordHeader{{Key: record.HeaderEnd, Value: []byte(end)}}
	}
	return r
}

func executionRec(t *testing.T, partition int32, ex record.Execution) *kgo.Record {
	return &kgo.Record{Topic: testTopics.Executions, Partition: partition, Key: []byte(ex.FireID), Value: jsonValue(t, ex)}
}

func statusRec(t *testing.T, partition int32, st record.Status) *kgo.Record {
	return &kgo.Record{Topic: testTopics.Status, Partition: partition, Key: []byte(st.FireID), Value: jsonValue(t, st)}
}

// logBuffer collects log output safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) lines(substr string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

// running is a Recorder running in the background of a test.
type running struct {
	*Recorder
	stop func() error
}

func startRecorder(t *testing.T, st *Store, c *kfake.Cluster, logs *logBuffer, opts ...kgo.Opt) *running {
	t.Helper()
	var log *slog.Logger
	if logs != nil {
		log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rec, err := NewRecorder(st, RecorderConfig{
		ClientOpts: append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, opts...),
		Topics:     testTopics,
	}, log)
	if err != nil {
		t.Fatalf("new recorder: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- rec.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-errc
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("recorder run: %v", err)
		}
	})
	return &running{Recorder: rec, stop: stop}
}

// waitFor waits, without sleeping, until cond holds: it looks again after
// every transaction the recorder commits.
func waitFor(t *testing.T, r *Recorder, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		applied := r.appliedChan()
		if cond() {
			return
		}
		select {
		case <-applied:
		case <-r.done:
			if cond() {
				return
			}
			t.Fatalf("recorder stopped before %s", what)
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s (recorder: %v)", what, r.Err())
		}
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}
