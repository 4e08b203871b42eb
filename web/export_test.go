package web_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/xuri/excelize/v2"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web"
)

// hostile are audit values a spreadsheet would run as formulas.
var hostile = []string{`=HYPERLINK("http://evil.example","x")`, "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"}

func hostileHistory(t *testing.T) *feed {
	f := newFeed(t, now)
	for i, v := range hostile {
		f.add(topics.Audit, "api", record.Audit{ID: fmt.Sprintf("h%d", i), At: ms(now.Add(time.Duration(i) * time.Second)),
			Actor: v, Action: "task.created", Object: v, Outcome: record.OutcomeOK, Detail: v})
	}
	return f
}

func TestAuditExportCSVNeutralisesFormulas(t *testing.T) {
	ts := serve(t, hostileHistory(t))
	resp, body := get(t, ts.URL+"/audit/export.csv")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("export.csv: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(hostile)+1 {
		t.Fatalf("%d rows, want header + %d", len(rows), len(hostile))
	}
	for i, v := range hostile {
		row := rows[i+1]
		if row[1] != "'"+v || row[3] != "'"+v || row[5] != "'"+v {
			t.Errorf("row %d = %q, want each of actor, object, detail as '%q", i+1, row, v)
		}
	}
}

// exportXLSX downloads an XLSX export and reads its sheet back.
func exportXLSX(t *testing.T, url string) (body string, rows [][]string) {
	t.Helper()
	resp, body := get(t, url)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export.xlsx: %s", resp.Status)
	}
	book, err := excelize.OpenReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer book.Close()
	if rows, err = book.GetRows(book.GetSheetName(0)); err != nil {
		t.Fatal(err)
	}
	return body, rows
}

func TestAuditExportXLSXHasNoFormula(t *testing.T) {
	ts := serve(t, hostileHistory(t))
	body, rows := exportXLSX(t, ts.URL+"/audit/export.xlsx?actor="+strings.ReplaceAll(hostile[1], "+", "%2B"))
	if len(rows) != 2 || rows[1][1] != "'"+hostile[1] {
		t.Errorf("filtered rows = %q, want the header and one row with actor '%s", rows, hostile[1])
	}
	// No cell of the workbook holds a formula.
	zr, err := zip.NewReader(strings.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		if bytes.Contains(b, []byte("<f>")) || bytes.Contains(b, []byte("<f ")) {
			t.Errorf("%s holds a formula", f.Name)
		}
	}
}

// TestAuditExportStreamsWithFlatMemory exports a day of 100,000 audit
// events and checks that the heap grows by far less than the export: the
// rows are streamed, never held.
func TestAuditExportStreamsWithFlatMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a store with 100,000 events")
	}
	f := newFeed(t, now)
	day := now.Truncate(24 * time.Hour)
	const n = 100_000
	var batch []*kgo.Record
	for i := range n {
		v, _ := json.Marshal(record.Audit{ID: fmt.Sprintf("e%06d", i), At: ms(day.Add(time.Duration(i) * 800 * time.Millisecond)),
			Actor: "operator-" + fmt.Sprint(i%7), Action: "task.paused", Object: fmt.Sprintf("acme/task-%06d", i),
			Outcome: record.OutcomeOK, Detail: "=cmd|' /C calc'!A0 and some words to make the row longer than a few bytes"})
		batch = append(batch, &kgo.Record{Topic: topics.Audit, Key: []byte("api"), Value: v, Offset: int64(i), Timestamp: now})
		if len(batch) == 5000 || i == n-1 {
			if _, err := f.st.Apply(context.Background(), topics, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	ts := serve(t, f)
	for _, ext := range []string{"csv", "xlsx"} {
		t.Run(ext, func(t *testing.T) {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			peak := before.HeapInuse
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for {
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					peak = max(peak, m.HeapInuse)
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()
			resp, err := http.Get(ts.URL + "/audit/export." + ext + "?from=" + day.Format("2006-01-02") + "&to=" + day.Format("2006-01-02"))
			if err != nil {
				t.Fatal(err)
			}
			out, err := os.Create(filepath.Join(t.TempDir(), "export."+ext))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			size, err := io.Copy(out, resp.Body)
			resp.Body.Close()
			close(stop)
			<-done
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("export: %v %s", err, resp.Status)
			}
			if got := exportedRows(t, ext, out.Name()); got != n+1 {
				t.Errorf("%s export holds %d rows, want the header and %d events", ext, got, n)
			}
			growth := int64(peak) - int64(before.HeapInuse)
			t.Logf("%s export of %d events: %d bytes, heap grew by at most %.1f MiB", ext, n, size, float64(growth)/(1<<20))
			// CSV holds one row at a time; XLSX the first rows, to size
			// its columns, and a compressor's window.
			limit := int64(10 << 20)
			if growth > limit {
				t.Errorf("heap grew by %.1f MiB during the export: rows are held, not streamed", float64(growth)/(1<<20))
			}
		})
	}
}

// exportedRows counts the rows of an export file as a spreadsheet would
// read them, checking that every detail cell is neutralised.
func exportedRows(t *testing.T, ext, path string) int {
	t.Helper()
	n := 0
	check := func(row []string) {
		if n++; n > 1 && (len(row) < 6 || !strings.HasPrefix(row[5], "'=")) {
			t.Fatalf("row %d = %q: detail not neutralised", n, row)
		}
	}
	if ext == "csv" {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r := csv.NewReader(f)
		for {
			row, err := r.Read()
			if err == io.EOF {
				return n
			}
			if err != nil {
				t.Fatal(err)
			}
			check(row)
		}
	}
	book, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer book.Close()
	rows, err := book.Rows("Audit")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		// Raw values: a date cell read through its number format costs a
		// millisecond under -race, and the count needs none.
		row, err := rows.Columns(excelize.Options{RawCellValue: true})
		if err != nil {
			t.Fatal(err)
		}
		check(row)
	}
	return n
}

// TestAuditExportXLSXKeepsToWhatASheetHolds exports text a spreadsheet
// cannot hold as it is (markup, control characters, a cell over 32,767
// characters) and more rows than a sheet takes: each cell comes back
// readable, and the last row says where the export was cut.
func TestAuditExportXLSXKeepsToWhatASheetHolds(t *testing.T) {
	defer web.SetSheetRowLimit(4)()
	f := newFeed(t, now)
	long := strings.Repeat("x", 40_000)
	for i, d := range []string{"<b>&amp;</b> \x01 esc:\x1b tab:\t line:\nend", long, "third", "fourth"} {
		f.add(topics.Audit, "api", record.Audit{ID: fmt.Sprintf("x%d", i), At: ms(now.Add(time.Duration(i) * time.Second)),
			Actor: "ada", Action: "task.created", Object: "acme/t", Outcome: record.OutcomeOK, Detail: d})
	}
	ts := serve(t, f)
	_, rows := exportXLSX(t, ts.URL+"/audit/export.xlsx")
	if len(rows) != 4 {
		t.Fatalf("%d rows, want the header, 2 events and the cut: %q", len(rows), rows)
	}
	if want := "<b>&amp;</b> \uFFFD esc:\uFFFD tab:\t line:\nend"; rows[1][5] != want {
		t.Errorf("detail read back as %q, want %q", rows[1][5], want)
	}
	if got := len(rows[2][5]); got != 32767 {
		t.Errorf("a 40,000-character detail came back with %d characters, want a full cell of 32,767", got)
	}
	if !strings.HasPrefix(rows[3][0], "cut: a sheet holds 4 rows; events after "+now.Add(time.Second).UTC().Format(time.RFC3339Nano)) {
		t.Errorf("last row = %q, want where the export was cut", rows[3])
	}
}

// TestAuditExportOpensInASpreadsheet opens the XLSX export in LibreOffice
// (headless, as a spreadsheet user would open it) and reads back what the
// sheet shows: every hostile value as the text it was, behind its
// apostrophe, and no formula evaluated.
func TestAuditExportOpensInASpreadsheet(t *testing.T) {
	soffice, err := exec.LookPath("soffice")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("soffice is not installed; .ci/run installs libreoffice-calc-nogui")
		}
		t.Skip("soffice (LibreOffice) is not installed")
	}
	ts := serve(t, hostileHistory(t))
	resp, body := get(t, ts.URL+"/audit/export.xlsx")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export.xlsx: %s", resp.Status)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "audit.xlsx")
	if err := os.WriteFile(in, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, soffice, "-env:UserInstallation=file://"+filepath.Join(dir, "profile"),
		"--headless", "--convert-to", "csv", "--outdir", dir, in)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("soffice: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "audit.csv"))
	if err != nil {
		t.Fatalf("soffice wrote no CSV: %v", err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(hostile)+1 || rows[0][0] != "at (UTC)" {
		t.Fatalf("the spreadsheet shows %d rows, want the header and %d: %q", len(rows), len(hostile), rows)
	}
	for i, v := range hostile {
		if row := rows[i+1]; row[1] != "'"+v || row[3] != "'"+v || row[5] != "'"+v {
			t.Errorf("spreadsheet row %d = %q, want actor, object and detail shown as '%q", i+1, row, v)
		}
	}
}

// TestTaskReportHoldsEveryTaskTheFiltersSelect: the task report of a file
// holds each of its tasks, past the thousand a list shows, with the row
// it came from, in CSV and as a sheet; a file that does not exist is not
// found rather than an empty report.
// manyTasks feeds n daily tasks of host0 from one file and n of host1 from
// another; the eighth of each is named like a formula.
func manyTasks(t *testing.T, n int) (*feed, []string) {
	f := newFeed(t, now)
	files := []string{strings.Repeat("a", 64), strings.Repeat("b", 64)}
	for i, id := range files {
		f.add(topics.Audit, "watcher", record.Audit{ID: "a" + id[:1], At: ms(now), Actor: "watcher",
			Action: record.ActionFileInjected, Object: "jobs.csv", Outcome: record.OutcomeOK,
			Batch: &record.Batch{ID: id, File: fmt.Sprintf("jobs-%d.csv", i), Folder: "inbox", Rows: n}})
	}
	for i := range n {
		for j, id := range files {
			name := fmt.Sprintf("job-%04d", i)
			if i == 7 {
				name = hostile[0]
			}
			d := task.Definition{Host: fmt.Sprintf("host%d", j), Name: name, Action: task.Insert, Topic: "jobs",
				Frequency: &task.Frequency{TimeUnit: task.Days, Time: 1}}
			f.add(topics.State, d.Key(), record.State{Definition: d, Anchor: ms(now), NextFire: ms(now.Add(time.Hour)),
				Source: record.Source{Batch: id, File: fmt.Sprintf("jobs-%d.csv", j), Row: i + 2}, UpdatedAt: ms(now)})
		}
	}
	return f, files
}

func TestTaskReportHoldsEveryTaskTheFiltersSelect(t *testing.T) {
	const n = 1_500
	f, files := manyTasks(t, n)
	ts := serve(t, f)
	if resp, body := get(t, ts.URL+"/api/tasks?file="+files[1]+"&limit=5000"); resp.StatusCode != http.StatusOK ||
		strings.Count(body, `"key"`) != 1000 {
		t.Fatalf("the list API: %s, %d tasks, want its cap of 1,000", resp.Status, strings.Count(body, `"key"`))
	}

	resp, body := get(t, ts.URL+"/tasks/export.csv?file="+files[1])
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Disposition"), "jobdrop-tasks-") {
		t.Fatalf("export.csv: %s %q", resp.Status, resp.Header.Get("Content-Disposition"))
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	check := func(kind string, rows [][]string) {
		t.Helper()
		if len(rows) != n+1 {
			t.Fatalf("%s: %d rows, want the header and %d tasks", kind, len(rows), n)
		}
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		seen, formula := map[string]bool{}, false
		for _, r := range rows[1:] {
			row, _ := strconv.Atoi(r[col["row"]])
			seen[r[col["key"]]] = true
			formula = formula || r[col["name"]] == "'"+hostile[0] && r[col["key"]] == "host1/"+hostile[0]
			if r[col["host"]] != "host1" || r[col["file"]] != "jobs-1.csv" || row < 2 || row > n+1 ||
				r[col["schedule"]] != "every day" || r[col["status"]] != "active" {
				t.Fatalf("%s: row %q, want a task of host1 from jobs-1.csv, with its row", kind, r)
			}
		}
		if len(seen) != n {
			t.Errorf("%s: %d distinct tasks, want %d", kind, len(seen), n)
		}
		if !formula {
			t.Errorf("%s: the task named %q is not there as text behind '", kind, hostile[0])
		}
	}
	check("csv", rows)
	_, sheet := exportXLSX(t, ts.URL+"/tasks/export.xlsx?file="+files[1])
	check("xlsx", sheet)

	if resp, _ := get(t, ts.URL+"/tasks/export.csv?file="+strings.Repeat("c", 64)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("report of a file that does not exist: %s, want 404", resp.Status)
	}
	if resp, _ := get(t, ts.URL+"/tasks/export.xlsx?status=sleeping"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("report with an unknown status: %s, want 400", resp.Status)
	}
	// The file's page and the task list link to the report.
	doc := page(t, ts.URL+"/files/"+files[1])
	if href := attr(byID(t, doc, "export-tasks-csv"), "href"); href != "/tasks/export.csv?file="+files[1] {
		t.Errorf("file page links the report as %q", href)
	}
	doc = page(t, ts.URL+"/tasks?host=host0&status=paused")
	if href := attr(byID(t, doc, "export-xlsx"), "href"); href != "/tasks/export.xlsx?status=paused&host=host0" {
		t.Errorf("task list links the report as %q", href)
	}
}

// TestExportOpensInASpreadsheetTyped opens an executions export in
// LibreOffice: times are dates and counts numbers (they sort, sum and
// filter as such), the header is bold and frozen, and a filter spans
// every row.
func TestExportOpensInASpreadsheetTyped(t *testing.T) {
	soffice, err := exec.LookPath("soffice")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("soffice is not installed; .ci/run installs libreoffice-calc-nogui")
		}
		t.Skip("soffice (LibreOffice) is not installed")
	}
	ts := serve(t, history(t))
	resp, body := get(t, ts.URL+"/executions/export.xlsx?task=acme/nightly&sort=oldest")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export.xlsx: %s", resp.Status)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "executions.xlsx")
	if err := os.WriteFile(in, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, "profile")
	office := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, soffice, append([]string{"-env:UserInstallation=file://" + profile, "--headless"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("soffice %q: %v\n%s", args, err, out)
		}
	}

	// As a flat document, the sheet's filter: over the header and the
	// three executions.
	office("--convert-to", "fods", "--outdir", dir, in)
	fods, err := os.ReadFile(filepath.Join(dir, "executions.fods"))
	if err != nil {
		t.Fatalf("soffice wrote no document: %v", err)
	}
	if !regexp.MustCompile(`<table:database-range [^>]*table:target-range-address="Executions\.A1:Executions\.P4"[^>]*table:display-filter-buttons="true"`).Match(fods) {
		t.Errorf("no filter over A1:P4 in the sheet: %s", regexp.MustCompile(`<table:database-range[^>]*>`).Find(fods))
	}

	// As a person sees it, through a macro of the profile the first run
	// made.
	macro := filepath.Join(profile, "user", "basic", "Standard", "Module1.xba")
	if err := os.WriteFile(macro, []byte(spreadsheetMacro), 0o600); err != nil {
		t.Fatal(err)
	}
	result := filepath.Join(dir, "seen.txt")
	office(fmt.Sprintf(`macro:///Standard.Module1.Look("file://%s","%s","H2,I2,N2,P2,F2")`, in, result))
	seen, err := os.ReadFile(result)
	if err != nil {
		t.Fatalf("the macro wrote nothing: %v", err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(seen)), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), " ")
		lines[k] = v
	}
	scheduled := now.Add(-3 * 24 * time.Hour) // f1, the oldest
	for k, want := range map[string]string{
		"frozen": "True 0 1",
		"weight": "150",
		// A date, shown to the second, worth the days since 1899-12-30.
		"H2": fmt.Sprintf("1 %s %s", strconv.FormatFloat(float64(scheduled.Sub(time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)).Milliseconds())/86_400_000, 'f', -1, 64),
			scheduled.Format("2006-01-02 15:04:05")),
		"N2": "1 10 10", // the target offset, a number
		"F2": "2 0 SUCCESS",
	} {
		if got := lines[k]; k == "H2" {
			// LibreOffice prints the value to about ten digits.
			f := strings.Fields(got)
			w := strings.Fields(want)
			if len(f) != 4 || f[0] != w[0] || !strings.HasPrefix(w[1], f[1][:12]) || f[2]+" "+f[3] != w[2]+" "+w[3] {
				t.Errorf("H2 (scheduled) reads %q, want %q", got, want)
			}
		} else if got != want {
			t.Errorf("%s reads %q, want %q", k, got, want)
		}
	}
	if t.Failed() {
		t.Logf("LibreOffice saw:\n%s", seen)
	}
}
