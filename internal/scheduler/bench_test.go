package scheduler

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/msgsched"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

var (
	benchBurst  = flag.Int("bench-burst", 100_000, "tasks due in the same second for BenchmarkBurst")
	benchActive = flag.Int("bench-active", 100_000, "tasks held for BenchmarkActiveTasks")
	benchTxn    = flag.Int("bench-txn", 0, "fires per transaction (0: the engine's default)")
	benchAhead  = flag.Duration("bench-ahead", 0, "Config.FireAhead (0: the engine's default; -1ns: never ahead)")
)

func TestMain(m *testing.M) {
	kafkatest.ServeBrokerProcess()
	os.Exit(m.Run())
}

type benchEngine struct {
	*Engine
	brokers []string
	topics  record.Topics
	stop    func()

	mu      sync.Mutex
	commits []commitAt // each fire's commit
	last    time.Time
	fired   int
}

// commitAt is when the fire of an occurrence scheduled at scheduled
// committed.
type commitAt struct {
	scheduled int64
	at        time.Time
}

// createTopics creates jobdrop's topics and the target topic "bench".
func (be *benchEngine) createTopics(b *testing.B) {
	admin, err := kgo.NewClient(kgo.SeedBrokers(be.brokers...))
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	ctx := context.Background()
	if err := kafka.EnsureTopics(ctx, admin, be.topics, 8, -1); err != nil {
		b.Fatal(err)
	}
	targets := kafka.NewTargetTopics(admin, 8, -1, true)
	if err := targets.Ensure(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
}

func startBenchEngine(b *testing.B, brokers []string) *benchEngine {
	return startBenchEngineWith(b, brokers, nil)
}

// startBenchEngineWith starts an engine whose configuration tune changes
// first.
func startBenchEngineWith(b *testing.B, brokers []string, tune func(*Config)) *benchEngine {
	topics := record.Topics{}.WithDefaults()
	// Room for a burst's commits up front: growing the slice in the hook
	// would hold the runner that calls it.
	be := &benchEngine{brokers: brokers, topics: topics, commits: make([]commitAt, 0, max(*benchBurst, 100_000))}
	be.createTopics(b)
	ctx := context.Background()
	tcl, _ := kgo.NewClient(kgo.SeedBrokers(brokers...))
	cfg := Config{
		ClientOpts:     kafka.ClientOpts(brokers, "bench"),
		Topics:         topics,
		Targets:        kafka.NewTargetTopics(tcl, 8, -1, true),
		MaxFiresPerTxn: *benchTxn,
		FireAhead:      *benchAhead,
		OnCommit: func(scheduled []int64, at time.Time) {
			be.mu.Lock()
			defer be.mu.Unlock()
			for _, s := range scheduled {
				be.commits = append(be.commits, commitAt{scheduled: s, at: at})
			}
			be.fired += len(scheduled)
			be.last = at
		},
	}
	if tune != nil {
		tune(&cfg)
	}
	e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	be.Engine = e
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = e.Run(rctx); close(done) }()
	be.stop = func() { cancel(); <-done; tcl.Close() }
	return be
}

// send produces n commands, built by def, as fast as the broker takes them.
func (be *benchEngine) send(b *testing.B, n int, def func(i int) task.Definition) {
	be.produce(b, n, func(i int) *kgo.Record {
		d := def(i)
		v, _ := json.Marshal(d)
		return &kgo.Record{Topic: be.topics.Input, Key: []byte(d.Key()), Value: v}
	})
}

// produce writes n records, built by rec, as fast as the broker takes them.
func (be *benchEngine) produce(b *testing.B, n int, rec func(i int) *kgo.Record) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(be.brokers...), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(100_000), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for i := range n {
		cl.Produce(ctx, rec(i), func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

func (be *benchEngine) waitActive(b *testing.B, n int64, within time.Duration) time.Duration {
	start := time.Now()
	for be.ActiveTasks() != n {
		if time.Since(start) > within {
			b.Fatalf("%d of %d tasks active after %s", be.ActiveTasks(), n, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func (be *benchEngine) waitFired(b *testing.B, n int, within time.Duration) {
	start := time.Now()
	for {
		be.mu.Lock()
		fired := be.fired
		be.mu.Unlock()
		if fired >= n {
			return
		}
		if time.Since(start) > within {
			b.Fatalf("%d of %d fired after %s", fired, n, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (be *benchEngine) report(b *testing.B) {
	be.mu.Lock()
	defer be.mu.Unlock()
	l := make([]time.Duration, len(be.commits))
	for i, c := range be.commits {
		l[i] = c.at.Sub(time.UnixMilli(c.scheduled))
	}
	reportQuantiles(b, l, "", "-late-ms")
}

// reportQuantiles reports the median, p99 and maximum of l in
// milliseconds, as prefix+"p50"+suffix and so on.
func reportQuantiles(b *testing.B, l []time.Duration, prefix, suffix string) {
	l = slices.Clone(l)
	slices.Sort(l)
	q := func(p float64) float64 { return float64(l[int(p*float64(len(l)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), prefix+"p50"+suffix)
	b.ReportMetric(q(0.99), prefix+"p99"+suffix)
	b.ReportMetric(q(1), prefix+"max"+suffix)
}

// payload is a task's 200-byte data: a command line of random letters, as
// compressible as real ones are (a padded string would shrink to nothing
// on the wire and flatter every figure).
func payload(i int) map[string]string {
	rnd := rand.New(rand.NewPCG(uint64(i), 1))
	b := make([]byte, 190)
	for j := range b {
		b[j] = "abcdefghijklmnopqrstuvwxyz0123456789/-_ "[rnd.IntN(40)]
	}
	return map[string]string{"job": string(b)}
}

// BenchmarkBurst: -bench-burst one-shot tasks all due in the same second;
// reports the drain rate and the lateness of the fires as committed.
func BenchmarkBurst(b *testing.B) {
	n := *benchBurst
	for range b.N {
		be := startBenchEngine(b, kafkatest.BrokerProcess(b))
		due := time.Now().Add(3*time.Second + time.Duration(n/20_000)*time.Second).Truncate(time.Second)
		be.send(b, n, func(i int) task.Definition {
			return task.Definition{Host: "bench", Name: "burst-" + strconv.Itoa(i), Action: task.Insert, Topic: "bench",
				Start: task.Ptr(due.UnixMilli()), Data: payload(i)}
		})
		be.waitActive(b, int64(n), 5*time.Minute)
		if time.Now().After(due) {
			b.Fatalf("loading %d tasks took past their due time", n)
		}
		be.waitFired(b, n, 5*time.Minute)
		be.mu.Lock()
		drain := be.last.Sub(due)
		be.mu.Unlock()
		b.ReportMetric(float64(n)/drain.Seconds(), "fires/s")
		be.report(b)
		be.stop()
	}
}

// BenchmarkMessageBurst: -bench-burst schedules of kafka-message-scheduler's
// protocol, all due in the same second, read from a schedule topic of 8
// partitions by the bridge as jobdrop runs it; reports the drain rate and
// the lateness of the fires as committed (each with its schedule's
// tombstone).
func BenchmarkMessageBurst(b *testing.B) {
	n := *benchBurst
	for range b.N {
		brokers := kafkatest.BrokerProcess(b)
		be := startBenchEngineWith(b, brokers, func(c *Config) { c.ScheduleTopics = []string{"schedules"} })
		admin, _ := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err := kafka.NewTargetTopics(admin, 8, -1, true).Ensure(context.Background(), "schedules"); err != nil {
			b.Fatal(err)
		}
		admin.Close()
		ctx, cancel := context.WithCancel(context.Background())
		bridge := msgsched.New(msgsched.Config{ClientOpts: kafka.ClientOpts(brokers, "bench"), Topics: []string{"schedules"},
			Records: be.topics, Node: "bench", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		done := make(chan struct{})
		go func() { bridge.Run(ctx); close(done) }()
		due := time.Now().Add(3*time.Second + time.Duration(n/10_000)*time.Second).Truncate(time.Second)
		be.produce(b, n, func(i int) *kgo.Record {
			return &kgo.Record{Topic: "schedules", Key: []byte("burst-" + strconv.Itoa(i)), Value: []byte(payload(i)["job"]),
				Headers: []kgo.RecordHeader{
					{Key: record.HeaderScheduleEpoch, Value: []byte(strconv.FormatInt(due.Unix(), 10))},
					{Key: record.HeaderScheduleTargetTopic, Value: []byte("bench")},
					{Key: record.HeaderScheduleTargetKey, Value: []byte("target-" + strconv.Itoa(i))},
				}}
		})
		took := be.waitActive(b, int64(n), 5*time.Minute)
		b.ReportMetric(float64(n)/took.Seconds(), "schedules-taken/s")
		if time.Now().After(due) {
			b.Fatalf("taking %d schedules took past their due time", n)
		}
		be.waitFired(b, n, 5*time.Minute)
		be.mu.Lock()
		drain := be.last.Sub(due)
		be.mu.Unlock()
		b.ReportMetric(float64(n)/drain.Seconds(), "fires/s")
		be.report(b)
		cancel()
		<-done
		be.stop()
	}
}

// BenchmarkSteady: 10,000 tasks each firing every second, spread over the
// second, for ten seconds.
func BenchmarkSteady(b *testing.B) {
	const n = 10_000
	for range b.N {
		be := startBenchEngine(b, kafkatest.BrokerProcess(b))
		start := time.Now().Add(5 * time.Second).Truncate(time.Second)
		be.send(b, n, func(i int) task.Definition {
			return task.Definition{Host: "bench", Name: "steady-" + strconv.Itoa(i), Action: task.Insert, Topic: "bench",
				Start: task.Ptr(start.UnixMilli() + int64(i%1000)), Frequency: &task.Frequency{TimeUnit: task.Seconds, Time: 1},
				Data: payload(i)}
		})
		be.waitActive(b, n, time.Minute)
		be.waitFired(b, 10*n, time.Minute)
		b.ReportMetric(float64(be.fired)/be.last.Sub(start).Seconds(), "fires/s")
		be.report(b)
		be.stop()
	}
}

// BenchmarkActiveTasks: -bench-active tasks with 200-byte payloads held,
// none due; reports the engine's resident memory and how long a fresh
// engine takes to restore them.
func BenchmarkActiveTasks(b *testing.B) {
	n := *benchActive
	for range b.N {
		brokers := kafkatest.BrokerProcess(b)
		// The commands are produced before the engine starts, and the
		// producer's memory given back: what is measured is the engine's.
		feed := &benchEngine{brokers: brokers, topics: record.Topics{}.WithDefaults()}
		feed.createTopics(b)
		far := time.Now().Add(24 * time.Hour).UnixMilli()
		feed.send(b, n, func(i int) task.Definition {
			return task.Definition{Host: "bench", Name: "active-" + strconv.Itoa(i), Action: task.Insert, Topic: "bench",
				Start: task.Ptr(far), Frequency: &task.Frequency{TimeUnit: task.Hours, Time: 1}, Data: payload(i)}
		})
		debug.FreeOSMemory()
		base := rss()
		be := startBenchEngine(b, brokers)
		be.waitActive(b, int64(n), 10*time.Minute)
		held := rss()
		b.ReportMetric(float64(held-base)/(1<<20), "MiB-rss")
		// The whole process too: the runtime and the test binary's own
		// pages, which the figure above leaves out.
		b.ReportMetric(float64(held)/(1<<20), "MiB-rss-process")
		be.stop()

		again := startBenchEngine(b, brokers)
		took := again.waitActive(b, int64(n), 10*time.Minute)
		b.ReportMetric(took.Seconds(), "restore-s")
		again.stop()
	}
}

// rss is the resident memory of this process, in bytes.
func rss() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
