package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestHarness runs the benchmarks' measurement on small files, checking
// that every row reaches the input topic once, in one batch per file, and
// that the kcat baseline produced as many records.
func TestHarness(t *testing.T) {
	for _, tt := range []struct {
		format string
		rows   int
	}{{"csv", 10_000}, {"jsonl", 10_000}, {"xlsx", 2_000}} {
		t.Run(tt.format, func(t *testing.T) {
			r := measure(t, tt.format, tt.rows)
			if r.elapsed <= 0 || r.peakRSS <= 0 || r.heapPeak == 0 {
				t.Errorf("measured %+v", r)
			}
			t.Logf("%s: %d rows in %s (%.0f rows/s), peak RSS %d MiB; kcat %s", tt.format, r.rows, r.elapsed, r.rowsPerSec(), r.peakRSS>>20, r.kcat)
		})
	}
	t.Run("rename to commit", func(t *testing.T) {
		l := measureLatency(t, 5, 10)
		if len(l.commit) != 5 || l.commit[0] <= 0 {
			t.Errorf("measured %+v", l)
		}
		t.Logf("5 drops of 10 rows: p50 %s, max %s from rename to commit; kcat p50 %s", quantile(l.commit, 0.5), l.commit[4], quantile(l.kcat, 0.5))
	})
}

// TestHarnessCommitsEveryRowOnce reads back what a harness run committed.
func TestHarnessCommitsEveryRowOnce(t *testing.T) {
	const n = 3_000
	e := startEnv(t)
	src := filepath.Join(e.dir, "jobs.csv")
	writeCSV(t, src, n)
	kin := filepath.Join(e.dir, "kcat.txt")
	writeKcatInput(t, kin, n)
	took, _ := kcatRun(t, e.brokers, kin)
	if err := os.Rename(src, filepath.Join(e.inbox, "jobs.csv")); err != nil {
		t.Fatal(err)
	}
	if o := <-e.results; o.err != nil {
		t.Fatal(o.err)
	}
	recs := kafkatest.Drain(t, e.brokers, record.Topics{}.WithDefaults().Input)
	ours, theirs := map[string]int{}, 0
	var ourSize, theirSize int
	for _, r := range recs {
		if batch := header(r, record.HeaderBatch); batch != "" {
			ours[string(r.Key)]++
			ourSize += len(r.Value)
		} else {
			theirs++
			theirSize += len(r.Value)
		}
	}
	if len(ours) != n {
		t.Errorf("%d distinct commands from the file, want %d", len(ours), n)
	}
	for k, c := range ours {
		if c != 1 {
			t.Errorf("%s committed %d times", k, c)
		}
	}
	if took > 0 && (theirs != n || theirSize != ourSize) {
		t.Errorf("kcat produced %d records of %d bytes, the injector %d of %d bytes; want the same", theirs, theirSize, len(ours), ourSize)
	}
}
