package converters

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"
)

// xlsxBenchRows is the size of the benchmark workbooks, the bench
// harness's (bench.BenchmarkDropXLSX); JOBDROP_BENCH_XLSX_ROWS overrides it.
func xlsxBenchRows() int {
	if n, err := strconv.Atoi(os.Getenv("JOBDROP_BENCH_XLSX_ROWS")); err == nil && n > 0 {
		return n
	}
	return 200_000
}

// xlsxBenchLayouts are the workbooks the benchmarks read: the bench
// harness's (strings and one integer per row), and the same with a native
// date cell (a serial number under a date format) in start and end and a
// float, so the converter's per-cell number and date work is measured too.
var xlsxBenchLayouts = []struct {
	name   string
	header []any
	row    func(i int) []any
}{
	{"plain", []any{"host", "name", "action", "topic", "timeUnit", "time", "data.command"},
		func(i int) []any {
			return []any{"acme", fmt.Sprintf("job-%07d", i), "INSERT", "batch-jobs", "MINUTES", int32(i%60 + 1),
				fmt.Sprintf("/opt/jobs/run-%07d.sh", i)}
		}},
	{"dates", []any{"host", "name", "action", "topic", "start", "end", "timeUnit", "time", "data.command", "data.weight"},
		func(i int) []any {
			start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
			return []any{"acme", fmt.Sprintf("job-%07d", i), "INSERT", "batch-jobs", start, start.AddDate(1, 0, 0),
				"MINUTES", int32(i%60 + 1), fmt.Sprintf("/opt/jobs/run-%07d.sh", i), float64(i%1000) / 8}
		}},
}

// writeBenchXLSX writes n rows of a layout with excelize's streaming
// writer, as the bench harness writes its workbook.
func writeBenchXLSX(b *testing.B, path string, n int, header []any, row func(int) []any) {
	b.Helper()
	x := excelize.NewFile()
	defer x.Close()
	sw, err := x.NewStreamWriter("Sheet1")
	if err != nil {
		b.Fatal(err)
	}
	if err := sw.SetRow("A1", header); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		cell, _ := excelize.CoordinatesToCellName(1, i+2)
		if err := sw.SetRow(cell, row(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := sw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := x.SaveAs(path); err != nil {
		b.Fatal(err)
	}
}

// benchXLSX writes each layout's workbook once and runs fn on it as a
// sub-benchmark, reporting rows/s and allocations per row.
func benchXLSX(b *testing.B, fn func(b *testing.B, path string, rows int)) {
	n := xlsxBenchRows()
	dir := b.TempDir()
	for _, l := range xlsxBenchLayouts {
		path := filepath.Join(dir, l.name+".xlsx")
		writeBenchXLSX(b, path, n, l.header, l.row)
		b.Run(l.name, func(b *testing.B) {
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			cpu0 := cpuTime()
			loops := 0
			for b.Loop() {
				fn(b, path, n)
				loops++
			}
			elapsed, cpu := b.Elapsed(), cpuTime()-cpu0
			runtime.ReadMemStats(&after)
			rows := float64(n * loops)
			b.ReportMetric(rows/elapsed.Seconds(), "rows/s")
			// On a shared machine the wall-clock rate moves with the
			// load; the CPU time this process spent (garbage collection
			// on other cores included) does much less.
			b.ReportMetric(rows/cpu.Seconds(), "rows/cpu-s")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/rows, "allocs/row")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/rows, "B/row")
		})
	}
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkXLSXBareReader is excelize's streaming reader alone: every row
// of the sheet through Rows, every cell's raw value, nothing else. It is
// the ceiling of any converter built on that reader.
func BenchmarkXLSXBareReader(b *testing.B) {
	benchXLSX(b, func(b *testing.B, path string, n int) {
		f, err := excelize.OpenFile(path, excelize.Options{UnzipSizeLimit: DefaultMaxUnzippedBytes, UnzipXMLSizeLimit: DefaultMaxXMLPartBytes})
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		rows, err := f.Rows("Sheet1")
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		got, bytes := 0, 0
		for rows.Next() {
			cells, err := rows.Columns(excelize.Options{RawCellValue: true})
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range cells {
				bytes += len(c)
			}
			got++
		}
		if err := rows.Error(); err != nil {
			b.Fatal(err)
		}
		if got != n+1 || bytes == 0 {
			b.Fatalf("read %d rows (%d bytes), want %d", got, bytes, n+1)
		}
	})
}

// BenchmarkXLSXConvert is the converter over the same workbooks, with an
// emit that keeps nothing.
func BenchmarkXLSXConvert(b *testing.B) {
	benchXLSX(b, func(b *testing.B, path string, n int) {
		got := 0
		err := XLSX{}.Convert(context.Background(), path, Options{}, func(r Row) error {
			if r.Err != nil {
				return r.Err
			}
			got++
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if got != n {
			b.Fatalf("emitted %d rows, want %d", got, n)
		}
	})
}
