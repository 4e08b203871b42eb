package kafka

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// compactTopic is the compacted topic of the compaction tests.
const compactTopic = "compacted"

// logs records what a broker logs, for a test to wait on.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count counts the lines holding s.
func (l *logs) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

func (l *logs) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// createCompacted creates compactTopic with one partition.
func createCompacted(t testing.TB, brokers []string) {
	t.Helper()
	resp, err := kadm.NewClient(kafkatest.Client(t, brokers)).CreateTopic(context.Background(), 1, 1,
		map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, compactTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
}

// latest reads compactTopic as a read_committed reader does: the last
// value of every key, and how many records it read.
func latest(t testing.TB, brokers []string) (map[string]string, int) {
	t.Helper()
	out, n := map[string]string{}, 0
	kafkatest.EachCommitted(t, brokers, compactTopic, func(r *kgo.Record) {
		out[string(r.Key)] = string(r.Value)
		n++
	})
	return out, n
}

// TestCompactionNeverDropsWhatAnOpenTransactionSupersedes: a committed
// value, then a transaction that writes the key again and stays open while
// the broker's compaction comes round. Compaction waits until the
// transaction ends; aborted, it leaves the committed value readable.
// (kfake's own cleaner dropped the committed value: the records of the
// open transaction were the key's latest.)
func TestCompactionNeverDropsWhatAnOpenTransactionSupersedes(t *testing.T) {
	var l logs
	b, err := StartEmbedded(t.TempDir(), EmbeddedConfig{Listen: "127.0.0.1:0", CompactionInterval: 20 * time.Millisecond}, l.logger())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := b.Addrs()
	createCompacted(t, brokers)
	ctx := context.Background()
	txn := func(id string) *kgo.Client {
		return kafkatest.Client(t, brokers, kgo.TransactionalID(id), kgo.DefaultProduceTopic(compactTopic))
	}
	// Each record in a batch of its own: compaction keeps a partition's
	// last batch whatever it holds.
	write := func(cl *kgo.Client, kv ...string) {
		t.Helper()
		for i := 0; i < len(kv); i += 2 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(kv[i]), Value: []byte(kv[i+1])}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	committed := txn("committed")
	if err := committed.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	write(committed, "task", "committed", "other", "old", "other", "new")
	if err := committed.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	open := txn("open")
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	write(open, "task", "never committed", "more", "never committed")
	waited := l.count("compaction waits for an open transaction")
	kafkatest.Eventually(t, 30*time.Second, "compaction to come round twice while the transaction is open", func() bool {
		return l.count("compaction waits for an open transaction") >= waited+2
	})
	if err := open.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	done := l.count("topics compacted")
	kafkatest.Eventually(t, 30*time.Second, "a compaction once the transaction is aborted", func() bool {
		return l.count("topics compacted") > done
	})
	got, n := latest(t, brokers)
	if got["task"] != "committed" || got["other"] != "new" || got["more"] != "" {
		t.Errorf("read after the compaction: %v, want task=committed other=new", got)
	}
	if n != 2 {
		t.Errorf("read %d records after the compaction, want 2: other's older value compacted away", n)
	}
}

// TestRestartedBrokerCompacts: the broker restarted from its data still
// compacts. (kfake's own cleaner started only with a compacted topic's
// creation or a change of its configuration, so never after a restart.)
func TestRestartedBrokerCompacts(t *testing.T) {
	dir := t.TempDir()
	cfg := EmbeddedConfig{Listen: "127.0.0.1:0", CompactionInterval: 20 * time.Millisecond}
	b, err := StartEmbedded(dir, cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	createCompacted(t, b.Addrs())
	b.Close()
	b, err = StartEmbedded(dir, cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	prod := kafkatest.Client(t, b.Addrs(), kgo.DefaultProduceTopic(compactTopic))
	for i := range 10 {
		if err := prod.ProduceSync(context.Background(), &kgo.Record{Key: []byte("task"), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	kafkatest.Eventually(t, 30*time.Second, "the key's older values compacted away", func() bool {
		got, n := latest(t, b.Addrs())
		return n <= 2 && got["task"] == "9"
	})
}

// compactRows is how many records the kill test's topic holds, two per key.
const compactRows = 200_000

// fillCompacted is the broker process step "fill": it creates
// compactTopic and writes every key twice.
func fillCompacted(b *Broker) error {
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(compactTopic))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, compactTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return err
	}
	for i := range compactRows {
		cl.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "key-%d", i%(compactRows/2)), Value: []byte(strings.Repeat("x", 100))}, nil)
	}
	return cl.Flush(ctx)
}

// TestKillDuringCompactionLosesNothing kills the broker's process as a
// compaction replaces the partition's files: restarted, the broker holds
// every key. (kfake deletes a partition's files before it writes the
// compacted ones: a kill there lost every record of the partition.)
func TestKillDuringCompactionLosesNothing(t *testing.T) {
	dir := t.TempDir()
	_, kill := killedBroker(t, dir, "fill")
	kill()
	pdir := filepath.Join(dir, "partitions", compactTopic+"-0")
	files := func() map[string]os.FileInfo {
		out := map[string]os.FileInfo{}
		entries, _ := os.ReadDir(pdir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".dat") {
				if fi, err := os.Stat(filepath.Join(pdir, e.Name())); err == nil {
					out[e.Name()] = fi
				}
			}
		}
		return out
	}
	before := files()
	if len(before) == 0 {
		t.Fatalf("no segment file in %s", pdir)
	}
	// The step "compact" compacts every millisecond; it is killed the
	// moment a segment file is replaced, watched without a pause: the
	// new files take only milliseconds to write.
	_, kill = killedBroker(t, dir, "compact")
	replaced := ""
	for deadline := time.Now().Add(time.Minute); replaced == ""; {
		if time.Now().After(deadline) {
			t.Fatal("no compaction replaced the partition's files within a minute")
		}
		for name, fi := range before {
			if now, err := os.Stat(filepath.Join(pdir, name)); err != nil || !os.SameFile(fi, now) {
				replaced = name
			}
		}
	}
	kill()
	t.Logf("killed as %s was replaced", replaced)

	var l logs
	b, err := StartEmbedded(dir, EmbeddedConfig{Listen: "127.0.0.1:0"}, l.logger())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if l.count("compaction cut off by an unclean stop undone") != 1 {
		t.Errorf("the restart did not say it undid a compaction cut off")
	}
	if got, _ := latest(t, b.Addrs()); len(got) != compactRows/2 {
		t.Errorf("after the restart, %d keys of %d", len(got), compactRows/2)
	}
	if _, err := os.Stat(filepath.Join(dir, compactionBackup)); err == nil {
		t.Errorf("the backup of the compaction cut off is still there")
	}
}
