package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/watcher"
)

// Row counts of the full benchmarks; JOBDROP_BENCH_CSV_ROWS (CSV and
// JSON Lines) and JOBDROP_BENCH_XLSX_ROWS override them.
const (
	csvRows  = 1_000_000
	xlsxRows = 200_000
)

// result is one measured drop and its kcat baseline.
type result struct {
	rows      int
	elapsed   time.Duration // drop to committed transaction
	peakRSS   int64         // bytes, this process (broker included) during the drop
	heapPeak  uint64        // bytes, Go heap in use at its highest sample
	kcat      time.Duration // kcat producing the same records; 0 when not run
	kcatRSS   int64         // bytes, kcat's own peak
	committed int           // rows the injector committed
	cpu       time.Duration // CPU time of this process (broker included) during the drop
}

func (r result) rowsPerSec() float64 { return float64(r.rows) / r.elapsed.Seconds() }
func (r result) kcatPerSec() float64 { return float64(r.rows) / r.kcat.Seconds() }

// env is a running embedded broker with jobdrop's topics, and a watcher
// whose handler injects every file and reports the outcome.
type env struct {
	dir     string
	inbox   string
	brokers []string
	results chan outcome
}

type outcome struct {
	res injector.Result
	err error
	at  time.Time
}

func startEnv(tb testing.TB) *env {
	tb.Helper()
	dir := tb.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := kafka.StartEmbedded(filepath.Join(dir, "kafka"), kafka.EmbeddedConfig{Listen: "127.0.0.1:0"}, log)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	brokers := b.Addrs()
	topics := record.Topics{}.WithDefaults()
	if err := kafka.EnsureTopics(context.Background(), kafkatest.Client(tb, brokers), topics, 8, -1); err != nil {
		tb.Fatal(err)
	}
	inj, err := injector.New(injector.Config{
		ClientOpts: kafka.ClientOpts(brokers, "bench"), TransactionalID: "bench-injector", Topics: topics,
	}, nil, log)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(inj.Close)
	e := &env{dir: dir, inbox: filepath.Join(dir, "inbox"), brokers: brokers, results: make(chan outcome, 1)}
	h := watcher.HandlerFunc(func(ctx context.Context, f watcher.File) error {
		var conv converters.Converter = converters.CSV{}
		switch {
		case strings.HasSuffix(f.Name, ".xlsx"):
			conv = converters.XLSX{}
		case strings.HasSuffix(f.Name, ".jsonl"):
			conv = converters.JSON{}
		}
		res, err := inj.Inject(ctx, injector.File{Path: f.Path, Name: f.Name, Folder: f.Dir, MaxBytes: -1}, conv, converters.Options{})
		e.results <- outcome{res, err, time.Now()}
		return err
	})
	// Production stability settings would add a second per file; these
	// add 200ms.
	w, err := watcher.New(watcher.Config{Folders: []watcher.Folder{{Dir: e.inbox}}, StableChecks: 2, CheckInterval: 100 * time.Millisecond}, h, log)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	tb.Cleanup(func() { cancel(); <-done })
	return e
}

// def is the task of row i, as every format writes it.
func def(i int) task.Definition {
	return task.Definition{
		Host: "acme", Name: fmt.Sprintf("job-%07d", i), Action: task.Insert, Topic: "batch-jobs",
		Frequency: &task.Frequency{TimeUnit: task.Minutes, Time: int32(i%60 + 1)},
		Data:      map[string]string{"command": fmt.Sprintf("/opt/jobs/run-%07d.sh", i)},
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS starts a new high-water mark of this process's memory.
func resetPeakRSS() {
	runtime.GC()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is this process's resident high-water mark (VmHWM), in bytes.
func peakRSS() int64 { return vmHWM("/proc/self/status") }

// vmHWM is the resident high-water mark (VmHWM) a /proc/PID/status file
// shows, in bytes; 0 when it cannot be read.
func vmHWM(status string) int64 {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// kcatRun produces the records of input with kcat and returns how long it
// took and kcat's own peak memory. It skips the baseline (0) when kcat is
// not installed, except on CI.
func kcatRun(tb testing.TB, brokers []string, input string) (time.Duration, int64) {
	tb.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("kcat is not installed; .ci/run installs it")
		}
		tb.Log("kcat is not installed: no baseline")
		return 0, 0
	}
	cmd := exec.Command(kcat, "-P", "-b", brokers[0], "-t", record.Topics{}.WithDefaults().Input, "-K:", "-l", input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatalf("kcat: %v", err)
	}
	// kcat's own high-water mark, read while it runs: the rusage of a
	// child started by os/exec reports the larger of its own and this
	// process's (the child shares this process's memory until its exec).
	done := make(chan struct{})
	hwm := make(chan int64)
	go func() {
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		var peak int64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, vmHWM(status))
			select {
			case <-done:
				hwm <- peak
				return
			case <-t.C:
			}
		}
	}()
	err = cmd.Wait()
	took := time.Since(start)
	close(done)
	rss := <-hwm
	if err != nil {
		tb.Fatalf("kcat: %v\n%s", err, stderr.String())
	}
	return took, rss
}

// measure drops a job list of n rows in format (csv, jsonl or xlsx) and
// times it to its committed transaction, after kcat producing the same
// records.
func measure(tb testing.TB, format string, n int) result {
	tb.Helper()
	e := startEnv(tb)
	src := filepath.Join(e.dir, "jobs."+format)
	switch format {
	case "xlsx":
		writeXLSX(tb, src, n)
	case "jsonl":
		writeJSONL(tb, src, n)
	default:
		writeCSV(tb, src, n)
	}
	kin := filepath.Join(e.dir, "kcat.txt")
	writeKcatInput(tb, kin, n)

	r := result{rows: n}
	r.kcat, r.kcatRSS = kcatRun(tb, e.brokers, kin)

	stop := make(chan struct{})
	heap := make(chan uint64)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				heap <- peak
				return
			case <-t.C:
			}
		}
	}()
	stopProfile := profileDrop(tb, format)
	resetPeakRSS()
	cpu0 := cpuTime()
	start := time.Now()
	if err := os.Rename(src, filepath.Join(e.inbox, "jobs."+format)); err != nil {
		tb.Fatal(err)
	}
	var o outcome
	select {
	case o = <-e.results:
	case <-time.After(10 * time.Minute):
		tb.Fatal("no outcome within 10 minutes")
	}
	stopProfile()
	r.elapsed = o.at.Sub(start)
	r.cpu = cpuTime() - cpu0
	r.peakRSS = peakRSS()
	close(stop)
	r.heapPeak = <-heap
	if o.err != nil || o.res.Outcome != injector.Injected {
		tb.Fatalf("inject: %+v, %v", o.res, o.err)
	}
	r.committed = o.res.Batch.Rows
	if r.committed != n {
		tb.Fatalf("committed %d rows, want %d", r.committed, n)
	}
	return r
}

// profileDrop writes a CPU profile of the drop alone, from the rename to
// the outcome, to $JOBDROP_BENCH_CPUPROFILE/<format>.prof when that
// folder is set (go test's -cpuprofile would also profile the writing of
// the inputs). It returns the function that ends it.
func profileDrop(tb testing.TB, format string) (stop func()) {
	dir := os.Getenv("JOBDROP_BENCH_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, format+".prof"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			tb.Error(err)
		}
	}
}

func rowsFromEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func report(b *testing.B, r result) {
	b.ReportMetric(r.rowsPerSec(), "rows/s")
	b.ReportMetric(float64(r.peakRSS)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(r.heapPeak)/(1<<20), "peak-heap-MiB")
	// Cores busy: above 1.9 of 2, going faster takes less work per row,
	// not more goroutines.
	b.ReportMetric(r.cpu.Seconds()/r.elapsed.Seconds(), "cores")
	if r.kcat > 0 {
		b.ReportMetric(r.kcatPerSec(), "kcat-rows/s")
		b.ReportMetric(float64(r.kcatRSS)/(1<<20), "kcat-RSS-MiB")
		b.ReportMetric(r.rowsPerSec()/r.kcatPerSec(), "ratio")
	}
	b.ReportMetric(float64(r.rows), "rows")
}

// BenchmarkDropCSV drops a CSV job list of 1,000,000 rows; run it with
// -benchtime=1x (bench/run.sh does).
func BenchmarkDropCSV(b *testing.B) {
	n := rowsFromEnv("JOBDROP_BENCH_CSV_ROWS", csvRows)
	var r result
	for b.Loop() {
		r = measure(b, "csv", n)
	}
	report(b, r)
}

// BenchmarkDropJSONL drops a JSON Lines job list of 1,000,000 rows (the
// CSV benchmark's rows, JOBDROP_BENCH_CSV_ROWS overrides), each line a
// light-scheduler TaskDefinition.
func BenchmarkDropJSONL(b *testing.B) {
	n := rowsFromEnv("JOBDROP_BENCH_CSV_ROWS", csvRows)
	var r result
	for b.Loop() {
		r = measure(b, "jsonl", n)
	}
	report(b, r)
}

// BenchmarkDropXLSX drops an Excel job list of 200,000 rows.
func BenchmarkDropXLSX(b *testing.B) {
	n := rowsFromEnv("JOBDROP_BENCH_XLSX_ROWS", xlsxRows)
	var r result
	for b.Loop() {
		r = measure(b, "xlsx", n)
	}
	report(b, r)
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
