package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/injector"
)

// latency is the time from the rename of small files into the folder to
// their committed transactions, and kcat's time to produce the same
// records, over drops files.
type latency struct {
	drops        int
	rows         int
	commit, kcat []time.Duration // sorted
}

// quantile is the q-quantile of sorted durations.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// measureLatency renames drops files of rows rows into the inbox one after
// another, each once the one before is committed, and times each from its
// rename to its commit; kcat produces each file's records beside it.
func measureLatency(tb testing.TB, drops, rows int) latency {
	tb.Helper()
	e := startEnv(tb)
	l := latency{drops: drops, rows: rows}
	for i := range drops {
		src := filepath.Join(e.dir, fmt.Sprintf(".drop-%d.csv", i))
		writeCSVFrom(tb, src, i*rows, rows)
		kin := filepath.Join(e.dir, "kcat.txt")
		writeKcatInput(tb, kin, rows)
		if took, _ := kcatRun(tb, e.brokers, kin); took > 0 {
			l.kcat = append(l.kcat, took)
		}
		start := time.Now()
		if err := os.Rename(src, filepath.Join(e.inbox, fmt.Sprintf("drop-%d.csv", i))); err != nil {
			tb.Fatal(err)
		}
		var o outcome
		select {
		case o = <-e.results:
		case <-time.After(time.Minute):
			tb.Fatalf("drop %d: no outcome within a minute", i)
		}
		if o.err != nil || o.res.Outcome != injector.Injected || o.res.Batch.Rows != rows {
			tb.Fatalf("drop %d: %+v, %v", i, o.res, o.err)
		}
		l.commit = append(l.commit, o.at.Sub(start))
	}
	slices.Sort(l.commit)
	slices.Sort(l.kcat)
	return l
}

// BenchmarkRenameToCommit renames 100 files of 10 rows into a folder, one
// after another, and reports the time from each rename to its commit.
func BenchmarkRenameToCommit(b *testing.B) {
	var l latency
	for b.Loop() {
		l = measureLatency(b, 100, 10)
	}
	b.ReportMetric(float64(quantile(l.commit, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(quantile(l.commit, 0.99).Microseconds())/1000, "p99-ms")
	if len(l.kcat) > 0 {
		b.ReportMetric(float64(quantile(l.kcat, 0.5).Microseconds())/1000, "kcat-p50-ms")
		b.ReportMetric(float64(quantile(l.kcat, 0.99).Microseconds())/1000, "kcat-p99-ms")
	}
	b.ReportMetric(float64(l.drops), "drops")
}
