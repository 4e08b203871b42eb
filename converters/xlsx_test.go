package converters

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"
)

// xlsxSheet is one sheet of a generated workbook: rows of cells, each a
// string, a number, a time.Time (a native date cell) or a serial (a number
// under a custom date format).
type xlsxSheet struct {
	name string
	rows [][]any
}

// serial is a number stored under a non-builtin date format.
type serial float64

// stored is a number cell holding exactly this text, as other writers
// store floats ("15.000000", "0.30000000000000004").
type stored string

// buildXLSX writes a workbook with the given sheets to path.
func buildXLSX(t testing.TB, path string, date1904 bool, sheets ...xlsxSheet) {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	if date1904 {
		if err := f.SetWorkbookProps(&excelize.WorkbookPropsOptions{Date1904: &date1904}); err != nil {
			t.Fatal(err)
		}
	}
	custom := "dd/mm/yyyy hh:mm"
	dateStyle, err := f.NewStyle(&excelize.Style{CustomNumFmt: &custom})
	if err != nil {
		t.Fatal(err)
	}
	twoDecimals, err := f.NewStyle(&excelize.Style{NumFmt: 2}) // 0.00
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sheets {
		if i == 0 {
			if err := f.SetSheetName("Sheet1", s.name); err != nil {
				t.Fatal(err)
			}
		} else if _, err := f.NewSheet(s.name); err != nil {
			t.Fatal(err)
		}
		for r, row := range s.rows {
			for c, v := range row {
				cell, _ := excelize.CoordinatesToCellName(c+1, r+1)
				switch v := v.(type) {
				case nil:
					continue
				case serial:
					err = f.SetCellFloat(s.name, cell, float64(v), -1, 64)
					if err == nil {
						err = f.SetCellStyle(s.name, cell, cell, dateStyle)
					}
				case stored:
					err = f.SetCellDefault(s.name, cell, string(v))
				case float64:
					err = f.SetCellFloat(s.name, cell, v, -1, 64)
					if err == nil {
						err = f.SetCellStyle(s.name, cell, cell, twoDecimals)
					}
				default:
					err = f.SetCellValue(s.name, cell, v)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := f.SaveAs(path); err != nil {
		t.Fatal(err)
	}
}

var xlsxHeader = []any{"host", "name", "topic", "start", "timeUnit", "time", "cron", "data.owner"}

// xlsxFixtures are the conformance workbooks under testdata/xlsx, written
// by TestXLSXFixtures with -update.
var xlsxFixtures = []struct {
	name     string
	date1904 bool
	sheets   []xlsxSheet
	options  string
}{
	{name: "basic", sheets: []xlsxSheet{{"Jobs", [][]any{
		xlsxHeader,
		{"acme", "nightly-report", "batch", time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC), "DAYS", 1, nil, "finance"},
		{"acme", "cache-warmup", "batch", nil, "minutes", 15, nil, 42},
		{},
		{" ", nil, nil, ""},
		{"acme", "month-end", "batch", nil, nil, nil, "0 6 1 * *", "ops"},
		{"acme", "fractional", "batch", nil, "HOURS", stored("15.000000"), nil, stored("0.30000000000000004")},
		{"acme", "two-decimals", "batch", nil, "HOURS", 2.0, nil, 1.25},
	}}}},
	{name: "title_rows", sheets: []xlsxSheet{{"Schedule", [][]any{
		{"ACME batch schedule — exported 2026-02-27"},
		{"Owner: operations", nil, "Status: approved"},
		{},
		xlsxHeader,
		{"acme", "payroll", "batch", "2026-03-31 18:00", "DAYS", 1, nil, "hr"},
		{"acme", "ledger-sync", "batch", "2026-03-01T06:00:00Z", "HOURS", 4, nil, "finance"},
	}}}},
	{name: "date1904", date1904: true, sheets: []xlsxSheet{{"Sheet1", [][]any{
		{"host", "name", "topic", "start", "end", "timeUnit", "time"},
		{"acme", "mac-export", "batch", time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC), time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC), "DAYS", 1},
		{"acme", "mac-serial", "batch", serial(44619.5), nil, "HOURS", 12},
	}}}},
	{name: "serial_date", sheets: []xlsxSheet{{"Sheet1", [][]any{
		{"host", "name", "topic", "start", "end", "timeUnit", "time"},
		{"acme", "custom-format", "batch", serial(46082.3333333333), serial(46387.75), "DAYS", 7},
		{"acme", "epoch-ms", "batch", 1772348400000, nil, "MINUTES", 30},
		{"acme", "text-date", "batch", "2026-03-01 08:00", nil, "MINUTES", 30},
	}}}, options: `{"defaults": {"timezone": "Europe/Paris"}}`},
	{name: "sheet_option", sheets: []xlsxSheet{
		{"Readme", [][]any{{"This workbook lists ACME's jobs on the Jobs sheet."}}},
		{"Jobs", [][]any{xlsxHeader, {"acme", "from-jobs-sheet", "batch", nil, "HOURS", 1}, {"acme", "second", "batch", nil, "HOURS", 2}}},
	}, options: `{"xlsx": {"sheet": "jobs"}}`},
	{name: "missing_sheet", sheets: []xlsxSheet{{"Jobs", [][]any{xlsxHeader, {"acme", "a", "batch"}}}}, options: `{"xlsx": {"sheet": "Tasks"}}`},
	{name: "header_row", sheets: []xlsxSheet{{"Sheet1", [][]any{
		{"Job list", "name is in row 3"},
		{},
		{"Host", "Job", "Topic", "Every", "Unit"},
		{"acme", "mapped", "batch", 10, "MINUTES"},
	}}}, options: `{"xlsx": {"headerRow": 3}, "mapping": {"Job": "name", "Every": "time", "Unit": "timeUnit"}}`},
	{name: "bad_rows", sheets: []xlsxSheet{{"Sheet1", [][]any{
		xlsxHeader,
		{"acme", "bad-unit", "batch", nil, "FORTNIGHTS", 1},
		{"acme", "bad-time", "batch", nil, "HOURS", 1.5},
		{"acme", "bad-start", "batch", "next tuesday", "HOURS", 1},
		{"acme", "ok", "batch", nil, "HOURS", 1},
		{"acme", "beyond", "batch", nil, "HOURS", 1, nil, "x", "stray"},
	}}}},
	{name: "chain", sheets: []xlsxSheet{{"Nightly", [][]any{
		{"Host", "Name", "Topic", "Cron", "After", "On", "Delay", "Retry", "Timeout"},
		{"acme", "extract", "batch-jobs", "0 2 * * *", nil, nil, nil, "3 every 10m", "45m"},
		{"acme", "transform", "batch-jobs", nil, "extract"},
		{"acme", "load", "batch-jobs", nil, "extract"},
		{"acme", "report", "batch-jobs", nil, "transform, load", nil, "5m"},
		{"acme", "cleanup", "batch-jobs", nil, "report", "Failure"},
		{"acme", "bad-on", "batch-jobs", nil, "extract", "sometimes"},
		{"acme", "number-delay", "batch-jobs", nil, "extract", nil, 5},
		{"acme", "time-delay", "batch-jobs", nil, "extract", nil, 10.0 / (24 * 60)},
		{"acme", "bad-retry", "batch-jobs", nil, "extract", nil, nil, "3 every 10"},
		{"acme", "loop", "batch-jobs", nil, "loop"},
		{"acme", "number-timeout", "batch-jobs", "0 4 * * *", nil, nil, nil, nil, 3600},
	}}}},
	{name: "no_header", sheets: []xlsxSheet{{"Sheet1", [][]any{{"Job", "Every"}, {"a", 1}}}}},
	{name: "empty", sheets: []xlsxSheet{{"Sheet1", nil}}},
	{name: "header_only", sheets: []xlsxSheet{{"Sheet1", [][]any{xlsxHeader}}}},
}

// sampleWorkbook is samples/jobs.xlsx: what a scheduling team exports,
// a title above the table and native date cells.
var sampleWorkbook = xlsxSheet{"Jobs", [][]any{
	{"ACME Corp — batch schedule (export of 2026-02-27, approved by operations)"},
	{},
	{"Host", "Name", "Topic", "Start", "TimeUnit", "Time", "Cron", "Timezone", "data.command", "data.owner"},
	{"acme", "gl-close-daily", "finance-jobs", time.Date(2026, 3, 2, 22, 30, 0, 0, time.UTC), "DAYS", 1, nil, "Europe/Paris", "/opt/finance/gl_close.sh --daily", "finance"},
	{"acme", "invoice-export", "finance-jobs", time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC), "HOURS", 4, nil, "Europe/Paris", "/opt/finance/export_invoices.py", "finance"},
	{"acme", "payroll-run", "hr-jobs", nil, nil, nil, "0 18 25 * *", "Europe/Paris", "/opt/hr/payroll --run", "hr"},
	{"acme", "crm-sync", "sales-jobs", nil, "MINUTES", 15, nil, nil, "/opt/crm/sync --incremental", "sales"},
	{"acme", "fy-archive", "finance-jobs", time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC), nil, nil, nil, "Europe/Paris", "/opt/finance/archive_fy.sh 2026", "finance"},
}}

// TestXLSXFixtures writes the conformance workbooks with -update; without
// it, it checks each fixture is committed.
func TestXLSXFixtures(t *testing.T) {
	dir := filepath.Join("testdata", "xlsx")
	for _, fx := range xlsxFixtures {
		path := filepath.Join(dir, fx.name+".xlsx")
		opts := filepath.Join(dir, fx.name+".options.json")
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			buildXLSX(t, path, fx.date1904, fx.sheets...)
			if fx.options != "" {
				if err := os.WriteFile(opts, []byte(fx.options+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%v (run go test ./converters -run TestXLSXFixtures -update)", err)
		}
	}
	if *update {
		buildXLSX(t, filepath.Join("..", "samples", "jobs.xlsx"), false, sampleWorkbook)
		if err := os.WriteFile(filepath.Join(dir, "not_a_workbook.xlsx"), []byte("host,name\nacme,a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestXLSXDateSystems(t *testing.T) {
	// The same serial is 1462 days later in the 1904 system.
	for _, tc := range []struct {
		date1904 bool
		want     time.Time
	}{
		{false, time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)},
		{true, time.Date(2030, 3, 2, 8, 0, 0, 0, time.UTC)},
	} {
		c := excelDate(Cell{Text: "46082.333333333336"}, tc.date1904)
		if !c.Time.Equal(tc.want) || !c.Local {
			t.Errorf("1904=%v: serial 46082.33… = %v (local %v), want %v local", tc.date1904, c.Time, c.Local, tc.want)
		}
	}
}

func TestCleanNumber(t *testing.T) {
	for in, want := range map[string]string{
		"15": "15", "15.000000": "15", "0.30000000000000004": "0.3", "1.5": "1.5",
		"-2": "-2", "1772348400000": "1772348400000", "1E+20": "1E+20", "abc": "abc",
		"12:30": "12:30", "": "", "007": "7",
	} {
		if got := cleanNumber(in); got != want {
			t.Errorf("cleanNumber(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestXLSXGuardRecoversPanics(t *testing.T) {
	err := guard("x.xlsx", func() error {
		panic("index out of range") // as a reader bug would
	})
	if err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("guard = %v, want the panic as an error", err)
	}
}

// writeZipBomb writes a workbook-shaped zip whose part (a sheet, styles)
// unpacks to size bytes of spaces.
func writeZipBomb(t *testing.T, path, part string, size int) {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(out)
	for name, body := range map[string]string{
		"[Content_Types].xml":        `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`,
		"xl/workbook.xml":            `<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="Sheet1" sheetId="1"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels": `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>`,
	} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	// The part is deflated once per MiB and its blocks repeated, not
	// deflated whole: a deflate block after a flush refers to nothing
	// before it, so the repeats form one valid stream, ended by an empty
	// final block. Deflating 200 MiB takes a minute under -race.
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	var deflated, end bytes.Buffer
	fw, _ := flate.NewWriter(&deflated, flate.BestCompression)
	fw.Write(chunk)
	fw.Flush()
	fw, _ = flate.NewWriter(&end, flate.BestCompression)
	fw.Close()
	n := (size + len(chunk) - 1) / len(chunk)
	sum := uint32(0)
	for range n {
		sum = crc32.Update(sum, crc32.IEEETable, chunk)
	}
	w, err := zw.CreateRaw(&zip.FileHeader{Name: part, Method: zip.Deflate, CRC32: sum,
		CompressedSize64: uint64(n*deflated.Len() + end.Len()), UncompressedSize64: uint64(n * len(chunk))})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		w.Write(deflated.Bytes())
	}
	if _, err := w.Write(end.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestXLSXRejectsZipBomb(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bomb.xlsx")
	writeZipBomb(t, path, "xl/worksheets/sheet1.xml", 200<<20)
	if fi, err := os.Stat(path); err != nil || fi.Size() > 2<<20 {
		t.Fatalf("bomb is %v bytes (%v), want a small file that unpacks to 200 MB", fi.Size(), err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := XLSX{}.Convert(context.Background(), path, Options{}, func(Row) error {
		t.Fatal("a row was emitted from a zip bomb")
		return nil
	})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "bomb.xlsx: the workbook unpacks to more than 128 MiB") {
		t.Fatalf("Convert(zip bomb) = %v, want a file error about the unpacked size", err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 300<<20 {
		t.Errorf("refusing the bomb allocated %d MiB, want < 300 MiB", grown>>20)
	}
	t.Logf("error: %v; allocated %d KiB", err, (after.TotalAlloc-before.TotalAlloc)>>10)

	// A part held in memory whole (styles, workbook) has its own bound.
	styles := filepath.Join(t.TempDir(), "styles.xlsx")
	writeZipBomb(t, styles, "xl/styles.xml", 2<<20)
	err = XLSX{MaxXMLPartBytes: 1 << 20}.Convert(context.Background(), styles, Options{}, func(Row) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "styles.xlsx: part xl/styles.xml unpacks to 2 MiB, over the 1 MiB limit") {
		t.Fatalf("Convert(big styles part) = %v, want a file error naming the part", err)
	}
}

func TestXLSXStreams(t *testing.T) {
	// Under -race, reading 200,000 rows takes minutes; 50,000 rows are a
	// sheet of 18 MiB of XML, which a reader holding it whole would show.
	rows := 200_000
	switch {
	case testing.Short():
		rows = 20_000
	case raceDetector:
		rows = 50_000
	}
	path := filepath.Join(t.TempDir(), "big.xlsx")
	start := time.Now()
	f := excelize.NewFile()
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.SetRow("A1", xlsxHeader); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		cell, _ := excelize.CoordinatesToCellName(1, i+2)
		if err := sw.SetRow(cell, []any{"acme", fmt.Sprintf("job-%d", i), "batch", "2026-03-01 08:00", "MINUTES", 5, nil, fmt.Sprintf("team-%d", i%7)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.SaveAs(path); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Logf("wrote %d rows in %v", rows, time.Since(start))

	start = time.Now()
	seen := 0
	var heapMid, heapMax uint64
	err = XLSX{}.Convert(context.Background(), path, Options{}, func(r Row) error {
		if r.Err != nil {
			return r.Err
		}
		if want := fmt.Sprintf("job-%d", seen); r.Def.Name != want || r.Line != seen+2 {
			return fmt.Errorf("got %s at row %d, want %s at row %d", r.Def.Name, r.Line, want, seen+2)
		}
		seen++
		if seen%(rows/8) == 0 {
			var m runtime.MemStats
			if seen == rows/2 {
				runtime.GC()
			}
			runtime.ReadMemStats(&m)
			heapMax = max(heapMax, m.HeapAlloc)
			if seen == rows/2 {
				heapMid = m.HeapAlloc
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != rows {
		t.Fatalf("emitted %d rows, want %d", seen, rows)
	}
	t.Logf("read %d rows in %v; heap half-way %d MiB, highest sample %d MiB", rows, time.Since(start), heapMid>>20, heapMax>>20)
	if heapMid > 32<<20 {
		t.Errorf("heap half-way through the sheet = %d MiB; the sheet is not streamed", heapMid>>20)
	}
}

func TestXLSXNotAWorkbook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.xlsx")
	if err := os.WriteFile(path, []byte("host,name\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := XLSX{}.Convert(context.Background(), path, Options{}, func(Row) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "jobs.xlsx: not an Excel workbook") || errors.Is(err, ErrNoRows) {
		t.Fatalf("Convert(text file) = %v, want a clear file error", err)
	}
}

func FuzzXLSX(f *testing.F) {
	f.Add("acme", "job", "HOURS", "1", "2026-03-01 08:00", `{"a":"b"}`, "", "", "", "")
	f.Add("", "", "", "", "", "", "", "", "", "")
	f.Add("=1+1", "x\x00y", "minutes", "1e400", "45000.5", "{", "[", "x", "0.5", ",")
	f.Add("acme", "report", "", "", "", "", "transform, load", "Failure", "5m", "3 every 10m backoff 2 max 1h")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, host, name, unit, every, start, data, after, on, delay, retry string) {
		path := filepath.Join(dir, "fuzz.xlsx")
		fx := excelize.NewFile()
		defer fx.Close()
		for i, v := range []string{"host", "name", "topic", "timeUnit", "time", "start", "data", "after", "on", "delay", "retry"} {
			cell, _ := excelize.CoordinatesToCellName(i+1, 1)
			_ = fx.SetCellValue("Sheet1", cell, v)
		}
		for i, v := range []string{host, name, "batch", unit, every, start, data, after, on, delay, retry} {
			cell, _ := excelize.CoordinatesToCellName(i+1, 2)
			if err := fx.SetCellValue("Sheet1", cell, v); err != nil {
				return // text excelize itself refuses to write
			}
		}
		if err := fx.SaveAs(path); err != nil {
			return
		}
		prev := 0
		_ = XLSX{}.Convert(context.Background(), path, Options{}, func(r Row) error {
			if err := checkRow("fuzz.xlsx", prev, r); err != nil {
				t.Fatal(err)
			}
			prev = r.Line
			return nil
		})
	})
}
