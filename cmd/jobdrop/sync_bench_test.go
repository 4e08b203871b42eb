package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

var syncBenchRows = flag.Int("sync-bench-rows", 200_000, "tasks of the source BenchmarkSyncDiff compares a new version with")

// writeSyncCSV writes a job list of n hourly tasks whose every hundredth
// row, from the first, has the command of version v: version 1 and 2
// differ in 1% of their rows.
func writeSyncCSV(t testing.TB, path string, n, v int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "host,name,topic,timeUnit,time,data.command")
	for i := range n {
		version := 1
		if i%100 == 0 {
			version = v
		}
		fmt.Fprintf(w, "acme,task-%06d,jobs,HOURS,%d,/opt/run.sh --part %d --v%d\n", i, 1+i%24, i, version)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSyncDiff drops a job list of -sync-bench-rows tasks into a sync
// folder of a running node, then asks the node (POST /api/diff, as jobdrop
// diff does) what a version with 1% of its rows changed would do: the
// whole comparison, conversion, scope read from SQLite and plan included.
// It reports the seconds one diff takes and the Go heap it adds at its
// highest.
func BenchmarkSyncDiff(b *testing.B) {
	n := *syncBenchRows
	in := startInstanceEnv(b, []string{"JOBDROP_WATCH_0_SYNC=true"})
	defer in.stop()
	dir := b.TempDir()
	v1, v2 := filepath.Join(dir, "v1.csv"), filepath.Join(dir, "v2.csv")
	writeSyncCSV(b, v1, n, 1)
	writeSyncCSV(b, v2, n, 2)
	content, err := os.ReadFile(v1)
	if err != nil {
		b.Fatal(err)
	}
	placeFile(b, in.inbox, "jobs.csv", func(w *bufio.Writer) error { _, err := w.Write(content); return err })
	kafkatest.Eventually(b, 10*time.Minute, fmt.Sprintf("%d tasks recorded", n), func() bool {
		var sum storetype.Summary
		return in.getJSON("/api/summary", &sum) == nil && sum.TasksActive >= n
	})
	body, err := os.ReadFile(v2)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	rssBefore := procStatus("VmRSS")
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // a new high-water mark
	b.ResetTimer()
	var peak, livePeak uint64
	var answer diffAnswer
	for b.Loop() {
		stop := heapPeak()
		stopLive := livePeakOf()
		resp, err := http.Post(in.console+"/api/diff?"+url.Values{"name": {"jobs.csv"}}.Encode(), "text/csv", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		peak = max(peak, stop())
		livePeak = max(livePeak, stopLive())
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("POST /api/diff: %s %s", resp.Status, out)
		}
		if err := jsonUnmarshal(string(out), &answer); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if answer.Changed != n/100 || answer.Unchanged != n-n/100 || answer.Added+answer.Removed != 0 {
		b.Fatalf("diff %+v, want %d changed, %d unchanged", answer, n/100, n-n/100)
	}
	b.ReportMetric(float64(n), "tasks")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/diff")
	b.ReportMetric(float64(peak-min(peak, base.HeapInuse))/(1<<20), "added-heap-MiB")
	b.ReportMetric(float64(livePeak-min(livePeak, base.HeapAlloc))/(1<<20), "added-live-heap-MiB")
	b.ReportMetric(float64(procStatus("VmHWM")-rssBefore)/(1<<20), "added-RSS-MiB")
	b.ReportMetric(0, "ns/op")
}

// procStatus reads a memory figure of this process from /proc/self/status,
// in bytes.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// livePeakOf samples the heap the last garbage collection found live,
// until the returned function is called, and returns its highest value.
func livePeakOf() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}
