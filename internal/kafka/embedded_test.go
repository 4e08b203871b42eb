package kafka

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// brokerDirEnv makes the test binary a process that runs the embedded
// broker on that folder, does brokerStepEnv's step, prints the broker's
// address and waits to be killed.
const (
	brokerDirEnv  = "JOBDROP_TEST_BROKER_DIR"
	brokerStepEnv = "JOBDROP_TEST_BROKER_STEP"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(brokerDirEnv); dir != "" {
		addr, err := brokerStep(dir, os.Getenv(brokerStepEnv))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(addr)
		select {} // until killed
	}
	os.Exit(m.Run())
}

const (
	crashTopic = "jobs"
	crashTxnID = "injector"
	crashRows  = 20_000
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// brokerStep: "cut" creates the topic and leaves a transaction of cut-N
// records open; "commit" commits one of kept-N records; "fill" fills
// compactTopic; "compact" compacts every millisecond.
func brokerStep(dir, step string) (string, error) {
	cfg := EmbeddedConfig{Listen: "127.0.0.1:0"}
	if step == "compact" {
		cfg.CompactionInterval = time.Millisecond
	}
	b, err := StartEmbedded(dir, cfg, quiet())
	if err != nil {
		return "", err
	}
	switch step {
	case "fill":
		return b.Addrs()[0], fillCompacted(b)
	case "compact":
		return b.Addrs()[0], nil
	}
	ctx := context.Background()
	if step == "cut" {
		adm, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
		if err != nil {
			return "", err
		}
		if _, err := kadm.NewClient(adm).CreateTopic(ctx, 4, 1, nil, crashTopic); err != nil {
			return "", err
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.TransactionalID(crashTxnID), kgo.DefaultProduceTopic(crashTopic))
	if err != nil {
		return "", err
	}
	if err := cl.BeginTransaction(); err != nil {
		return "", err
	}
	tag := map[string]string{"cut": "cut", "commit": "kept"}[step]
	for i := range crashRows {
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("%s-%d", tag, i)), Value: []byte(strings.Repeat("x", 100))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return "", err
	}
	if step == "commit" {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return "", err
		}
	}
	return b.Addrs()[0], nil
}

// killedBroker runs a broker process on dir for step and returns its
// address and a function that kills it with SIGKILL.
func killedBroker(t *testing.T, dir, step string) (string, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), brokerDirEnv+"="+dir, brokerStepEnv+"="+step)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("broker process, step %s: %q %v", step, line, err)
	}
	var once sync.Once
	kill := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	return strings.TrimSpace(line), kill
}

// onlyKept fails unless the committed records of the topic are the kept
// ones, each once.
func onlyKept(t *testing.T, when string, brokers []string) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range kafkatest.Drain(t, brokers, crashTopic) {
		seen[string(r.Key)]++
	}
	kept := 0
	for key, n := range seen {
		if !strings.HasPrefix(key, "kept-") || n != 1 {
			t.Fatalf("%s: read %s %d times", when, key, n)
		}
		kept++
	}
	if kept != crashRows {
		t.Fatalf("%s: read %d of the %d committed records", when, kept, crashRows)
	}
}

// TestTransactionsCutOffByAKillStayAbortedAndHideNothing: the embedded
// broker killed with a transaction open; restarted, the same producer
// commits a transaction and the broker is killed again; at every restart a
// read_committed reader from the start sees exactly the committed
// transaction.
func TestTransactionsCutOffByAKillStayAbortedAndHideNothing(t *testing.T) {
	dir := t.TempDir()
	_, kill := killedBroker(t, dir, "cut")
	kill()
	addr, kill := killedBroker(t, dir, "commit")
	onlyKept(t, "after the first restart", []string{addr})
	kill()

	b, err := StartEmbedded(dir, EmbeddedConfig{Listen: "127.0.0.1:0"}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	onlyKept(t, "after the second restart", b.Addrs())
}

// TestEmbeddedBrokerKeepsOldTaskState writes a task's only state record
// with a timestamp eight days old, past the broker's default retention of
// seven days, and runs the broker's cleaner: the record must survive, as
// it does on Apache Kafka, which never deletes by age from a topic whose
// cleanup policy is compact alone. It must survive too where the state
// topic was made by an earlier jobdrop, without retention.ms, and after
// the broker restarts.
func TestEmbeddedBrokerKeepsOldTaskState(t *testing.T) {
	for _, tc := range []struct {
		name    string
		earlier bool // the state topic exists, compacted only
	}{
		{"new installation", false},
		{"state topic made by an earlier version", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := slog.New(slog.NewTextHandler(t.Output(), nil))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			topics := topicsFor(t)

			b, err := StartEmbedded(dir, EmbeddedConfig{Listen: "127.0.0.1:0"}, log)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { b.Close() }()
			if tc.earlier {
				cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := kadm.NewClient(cl).CreateTopic(ctx, 8, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, topics.State)
				cl.Close()
				if err == nil {
					err = resp.Err
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := Prepare(ctx, Config{}, b.Addrs(), topics, log); err != nil {
				t.Fatal(err)
			}
			prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			old := &kgo.Record{
				Topic: topics.State, Partition: 0, Key: []byte("acme/monthly"), Value: []byte(`{"monthly":true}`),
				Timestamp: time.Now().Add(-8 * 24 * time.Hour),
			}
			err = prod.ProduceSync(ctx, old).FirstErr()
			prod.Close()
			if err != nil {
				t.Fatal(err)
			}

			// Subtests, so that their clients close before the broker.
			kept := func(t *testing.T) {
				b.cluster.Compact()
				adm := kadm.NewClient(kafkatest.Client(t, b.Addrs()))
				starts, err := adm.ListStartOffsets(ctx, topics.State)
				if err != nil {
					t.Fatal(err)
				}
				if o, _ := starts.Lookup(topics.State, 0); o.Err != nil || o.Offset != 0 {
					t.Errorf("state partition 0 starts at offset %d (%v), want 0", o.Offset, o.Err)
				}
				found := false
				for _, r := range kafkatest.Drain(t, b.Addrs(), topics.State) {
					found = found || string(r.Key) == "acme/monthly" && string(r.Value) == `{"monthly":true}`
				}
				if !found {
					t.Errorf("the state of acme/monthly, eight days old, is gone")
				}
			}
			t.Run("after the cleaner ran", kept)

			b.Close()
			b, err = StartEmbedded(dir, EmbeddedConfig{Listen: "127.0.0.1:0"}, log)
			if err != nil {
				t.Fatal(err)
			}
			if err := Prepare(ctx, Config{}, b.Addrs(), topics, log); err != nil {
				t.Fatal(err)
			}
			t.Run("after a restart", kept)
		})
	}
}
