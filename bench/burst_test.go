package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/watcher"
)

// burstTasks is the number of one-shot tasks of the full burst benchmark;
// JOBDROP_BENCH_BURST overrides it.
const burstTasks = 100_000

// burstTopic is where the burst's tasks fire.
const burstTopic = "burst"

// burst is one measured burst: n one-shot tasks due the same second, seen
// by a consumer outside the jobdrop process.
type burst struct {
	n        int
	due      time.Time       // the second every task is due
	injected time.Duration   // rename to the file archived, once injected; 0: not seen
	late     []time.Duration // arrival minus due time of each first fire, sorted
	engine   []time.Duration // firedAt minus due time, as the engine stamped it, sorted
	last     time.Time       // arrival of the last first fire
	dups     int             // fires beyond the first of a task
	reread   time.Duration   // every fire read again by a new consumer, once all are committed
	recorded time.Duration   // rename to the console counting every task completed
	rss      int64           // jobdrop's peak resident memory up to the last fire, bytes
}

// buildJobdrop builds the jobdrop binary into dir and returns its path.
func buildJobdrop(tb testing.TB, dir string) string {
	tb.Helper()
	bin := filepath.Join(dir, "jobdrop")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/jobdrop")
	cmd.Dir = ".." // the module root: this package is bench/
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a loopback address whose port was free a moment ago.
func freePort(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// startJobdrop runs `jobdrop run` as its own process, watching inbox, and
// waits for its console's /readyz. With brokers nil it runs on the
// embedded defaults, else on those brokers. It returns the address of a
// broker, the console's and the process id.
func startJobdrop(tb testing.TB, bin, dir, inbox string, brokers []string) (string, string, int) {
	tb.Helper()
	broker, console := freePort(tb), freePort(tb)
	kafkaEnv := "JOBDROP_KAFKA_EMBEDDED_LISTEN=" + broker
	if brokers != nil {
		broker = brokers[0]
		kafkaEnv = "JOBDROP_KAFKA_BROKERS=" + strings.Join(brokers, ",")
	}
	logf, err := os.Create(filepath.Join(dir, "jobdrop.log"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "run")
	cmd.Env = append(os.Environ(),
		"JOBDROP_DATA_DIR="+filepath.Join(dir, "data"),
		kafkaEnv,
		"JOBDROP_CONSOLE_LISTEN="+console,
		"JOBDROP_WATCH_0_DIR="+inbox,
		"JOBDROP_WATCH_0_DEFAULTS_TOPIC="+burstTopic,
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	// exited is closed once the process has ended, with its error in
	// exitErr: the start below and the cleanup both wait on it.
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			log, _ := os.ReadFile(logf.Name())
			tb.Fatalf("jobdrop exited before ready: %v\n%s", exitErr, log)
		default:
		}
		if resp, err := http.Get("http://" + console + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return broker, console, cmd.Process.Pid
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			tb.Fatalf("jobdrop not ready within a minute\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeBurstCSV writes n one-shot tasks all due at due.
func writeBurstCSV(tb testing.TB, path string, n int, due time.Time) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString("host,name,topic,start\n")
	start := due.UTC().Format(time.RFC3339)
	for i := range n {
		fmt.Fprintf(w, "acme,burst-%07d,%s,%s\n", i, burstTopic, start)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// measureBurst starts jobdrop as users run it, on its embedded broker or,
// with standalone, on a broker process of its own, drops a file of n
// one-shot tasks due the same second a few seconds ahead, and times every
// fire's arrival at a read-committed consumer of its topic against its due
// time. After the last task's first fire it keeps reading for linger, to
// catch duplicates.
func measureBurst(tb testing.TB, n int, linger time.Duration, standalone bool) burst {
	tb.Helper()
	dir := tb.TempDir()
	bin := buildJobdrop(tb, dir)
	inbox := filepath.Join(dir, "inbox")
	if err := os.MkdirAll(inbox, 0o755); err != nil {
		tb.Fatal(err)
	}
	var brokers []string
	if standalone {
		brokers = kafkatest.BrokerProcess(tb)
	}
	broker, console, pid := startJobdrop(tb, bin, dir, inbox, brokers)

	cl := outsideConsumer(tb, broker)
	defer cl.Close()

	// Due time: far enough ahead for the file to be injected and its
	// commands applied (injection runs at several hundred thousand rows a
	// second; applying is slower), on a whole second: 3 s + 1 s per 12,500
	// tasks, 11 s for 100,000.
	due := time.Now().Add(3*time.Second + time.Duration(n)*time.Second/12_500).Truncate(time.Second).Add(time.Second)
	src := filepath.Join(dir, "burst.csv")
	writeBurstCSV(tb, src, n, due)
	renamed := time.Now()
	if err := os.Rename(src, filepath.Join(inbox, "burst.csv")); err != nil {
		tb.Fatal(err)
	}
	b := burst{n: n, due: due}
	var injected atomic.Int64 // rename to the file's arrival in archive/, once injected
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		for {
			if ents, _ := os.ReadDir(filepath.Join(inbox, watcher.ArchiveDir)); len(ents) > 0 {
				injected.Store(int64(time.Since(renamed)))
				return
			}
			select {
			case <-watchDone:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	// The loop keeps of each fire only what it measures, as a consumer
	// handling each record and letting it go would: holding every record
	// would hold every fetched batch, and the consumer shares the cores
	// with jobdrop. The event's firedAt is found in place, not decoded:
	// a copy of each event, kept to be decoded after the burst, was 22 MB
	// more for the consumer's collector over the burst.
	type arrival struct {
		task      string // the fire-host and fire-name headers
		scheduled int64  // the fire-scheduled header, Unix ms
		fired     int64  // the event's firedAt, Unix ms
		at        time.Time
	}
	got := make([]arrival, 0, n)
	var task []byte
	timeout := time.Until(due) + 5*time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var stop time.Time
	for stop.IsZero() || time.Now().Before(stop) {
		pctx, pcancel := ctx, context.CancelFunc(func() {})
		if !stop.IsZero() {
			pctx, pcancel = context.WithDeadline(ctx, stop)
		}
		fs := cl.PollFetches(pctx)
		pcancel()
		arrived := time.Now()
		if ctx.Err() != nil {
			if ents, _ := os.ReadDir(filepath.Join(inbox, watcher.FailedDir)); len(ents) > 0 {
				tb.Errorf("the file was refused: %s in failed/", ents[0].Name())
			}
			tb.Fatalf("%d of %d fires read within %s of the rename", len(got), n, timeout)
		}
		fs.EachError(func(t string, p int32, err error) {
			if pctx.Err() == nil {
				tb.Logf("fetch %s/%d: %v", t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			var host, name, scheduled []byte
			for _, h := range r.Headers {
				switch h.Key {
				case record.HeaderFireHost:
					host = h.Value
				case record.HeaderFireName:
					name = h.Value
				case record.HeaderFireScheduled:
					scheduled = h.Value
				}
			}
			task = append(append(append(task[:0], host...), '/'), name...)
			a := arrival{task: string(task), at: arrived}
			var err error
			if a.scheduled, err = strconv.ParseInt(string(scheduled), 10, 64); err != nil {
				tb.Fatalf("fired record of %s: scheduled at %q", a.task, scheduled)
			}
			if a.fired, err = firedAt(r.Value); err != nil {
				tb.Fatalf("fired record of %s: %v", a.task, err)
			}
			got = append(got, a)
		})
		// A fire read twice would end the reading before the last
		// task's first fire: the count of distinct tasks below says so.
		if len(got) >= n && stop.IsZero() {
			stop = time.Now().Add(linger)
		}
	}
	// A read_committed consumer gets fires as its polls bring them,
	// in steps: the log says when each poll returned and how many fires it held.
	var steps strings.Builder
	for i := 0; i < len(got); {
		j := i
		for j < len(got) && got[j].at.Equal(got[i].at) {
			j++
		}
		fmt.Fprintf(&steps, " %d ms: %d;", got[i].at.Sub(due).Milliseconds(), j-i)
		i = j
	}
	tb.Logf("fires read, by poll, after the due second:%s", strings.TrimSuffix(steps.String(), ";"))
	seen := make(map[string]bool, n)
	for _, a := range got {
		if seen[a.task] {
			b.dups++
			continue
		}
		seen[a.task] = true
		b.late = append(b.late, a.at.Sub(time.UnixMilli(a.scheduled)))
		if a.at.After(b.last) {
			b.last = a.at
		}
		b.engine = append(b.engine, time.Duration(a.fired-a.scheduled)*time.Millisecond)
	}
	if len(seen) != n {
		tb.Errorf("%d distinct tasks fired, want %d", len(seen), n)
	}
	slices.Sort(b.late)
	slices.Sort(b.engine)
	b.injected = time.Duration(injected.Load())
	b.rss = vmHWM(fmt.Sprintf("/proc/%d/status", pid))
	b.reread = reread(tb, broker, len(got))
	b.recorded = recorded(tb, console, n, renamed)
	return b
}

// firedAt reads the firedAt field of a fired event (record.Fired) where
// it stands, without decoding the rest.
func firedAt(event []byte) (int64, error) {
	const field = `"firedAt":`
	i := bytes.Index(event, []byte(field))
	if i < 0 {
		return 0, fmt.Errorf("no %s in %s", field, event)
	}
	v := event[i+len(field):]
	end := bytes.IndexAny(v, ",}")
	if end < 0 {
		return 0, fmt.Errorf("%s not ended in %s", field, event)
	}
	return strconv.ParseInt(string(v[:end]), 10, 64)
}

// recorded waits for the console's summary to count n tasks completed,
// and returns how long after since that was: what the recorder took to
// store the file's tasks, their fires and their ends for the console.
// It asks only once the burst is measured, so as not to slow it, and
// every 100 ms rather than kafkatest.Eventually's 10: each summary is a
// query over every task, on the cores the recorder needs.
func recorded(tb testing.TB, console string, n int, since time.Time) time.Duration {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	var s struct {
		TasksCompleted int `json:"tasksCompleted"`
	}
	for {
		resp, err := http.Get("http://" + console + "/api/summary")
		if err != nil {
			tb.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err != nil {
			tb.Fatalf("/api/summary: %s: %v", resp.Status, err)
		}
		if s.TasksCompleted >= n {
			return time.Since(since)
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the console counts %d of %d tasks completed 5 minutes on", s.TasksCompleted, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// outsideConsumer is the consumer that times the fires: a read_committed
// client of the burst's topic, on kgo's defaults but for metadata asked
// often enough to find the topic as soon as it exists.
func outsideConsumer(tb testing.TB, broker string) *kgo.Client {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(burstTopic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	if err != nil {
		tb.Fatal(err)
	}
	return cl
}

// reread reads the n records of the burst's topic again, once every fire
// is committed, with a new outside consumer, and returns how long that
// took: the consumer's own pace on this machine, with jobdrop idle, which
// bounds the burst's fires/s as that consumer sees them.
func reread(tb testing.TB, broker string, n int) time.Duration {
	tb.Helper()
	cl := outsideConsumer(tb, broker)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	for read := 0; read < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			tb.Fatalf("read again %d of %d records within a minute", read, n)
		}
		read += fs.NumRecords()
	}
	return time.Since(start)
}

// firesPerSec is the burst's throughput: its tasks over the time from
// their due second to the last one's arrival at the consumer.
func (b burst) firesPerSec() float64 { return float64(b.n) / b.last.Sub(b.due).Seconds() }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkBurstFromOutside runs jobdrop as its own process, drops one
// file of 100,000 one-shot tasks all due the same second
// (JOBDROP_BENCH_BURST overrides the count), and reports how late their
// fires reach a read-committed consumer outside the process: p50, p99 and
// max of arrival minus due time, and fires/s = tasks ÷ (last arrival − due
// second). "embedded": jobdrop on its embedded defaults (broker, recorder,
// console in one process); "standalone": the broker in a process of its
// own, with its data directory.
func BenchmarkBurstFromOutside(b *testing.B) {
	n := rowsFromEnv("JOBDROP_BENCH_BURST", burstTasks)
	for _, setup := range []string{"embedded", "standalone"} {
		b.Run(setup, func(b *testing.B) {
			var r burst
			for b.Loop() {
				r = measureBurst(b, n, 0, setup == "standalone")
			}
			b.ReportMetric(ms(quantile(r.late, 0.5)), "p50-ms")
			b.ReportMetric(ms(quantile(r.late, 0.99)), "p99-ms")
			b.ReportMetric(ms(r.late[len(r.late)-1]), "max-ms")
			b.ReportMetric(r.firesPerSec(), "fires/s")
			b.ReportMetric(float64(r.n), "tasks")
			b.ReportMetric(ms(r.injected), "inject-ms")
			// The outside consumer's own pace: the same records read
			// again once the burst is over, jobdrop idle.
			b.ReportMetric(float64(r.n)/r.reread.Seconds(), "reread-records/s")
			b.ReportMetric(float64(r.dups), "duplicates")
			// jobdrop's resident high-water mark (broker included when
			// embedded), from its start to the burst's last fire.
			b.ReportMetric(float64(r.rss)/(1<<20), "peak-rss-MiB")
			// The console's view: the rename to every task shown
			// completed, stored once the burst is measured.
			b.ReportMetric(r.recorded.Seconds(), "console-s")
			// The engine's own stamp on each fire: how much of the
			// lateness is before the fire's transaction, against
			// after it (commit, fetch).
			b.ReportMetric(ms(quantile(r.engine, 0.5)), "fired-p50-ms")
			b.ReportMetric(ms(r.engine[len(r.engine)-1]), "fired-max-ms")
		})
	}
}

// TestBurstFromOutside runs the burst benchmark's measurement on 2,000
// tasks, on the embedded broker and on a standalone one, checking that
// each fires exactly once: none missing, none twice.
func TestBurstFromOutside(t *testing.T) {
	const n = 2_000
	for _, setup := range []string{"embedded", "standalone"} {
		t.Run(setup, func(t *testing.T) {
			r := measureBurst(t, n, 2*time.Second, setup == "standalone")
			if len(r.late) != n {
				t.Errorf("%d tasks fired, want %d", len(r.late), n)
			}
			if r.dups != 0 {
				t.Errorf("%d fires beyond each task's first", r.dups)
			}
			t.Logf("%d tasks: lateness p50 %s, p99 %s, max %s; %.0f fires/s; injected %s and all shown completed %s after the rename",
				n, quantile(r.late, 0.5), quantile(r.late, 0.99), r.late[len(r.late)-1], r.firesPerSec(), r.injected, r.recorded)
		})
	}
}

func TestMain(m *testing.M) {
	kafkatest.ServeBrokerProcess()
	os.Exit(m.Run())
}

func TestFiredAtReadsTheEventsStamp(t *testing.T) {
	for _, f := range []record.Fired{
		{Host: "acme", Name: `"firedAt":1`, ScheduledAt: 1_700_000_000_000, FiredAt: 1_700_000_000_123, FireID: "x"},
		{Host: "acme", Name: "last", FiredAt: 42},
	} {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := firedAt(b); err != nil || got != f.FiredAt {
			t.Errorf("firedAt(%s) = %d, %v; want %d", b, got, err, f.FiredAt)
		}
	}
	if _, err := firedAt([]byte(`{"host":"acme"}`)); err == nil {
		t.Error("firedAt of an event without it: no error")
	}
}
