package web_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// libreOffice runs soffice headless with args, in dir, under a profile
// of dir's own (so that runs side by side do not share one; the first
// run creates it). Without soffice the test is skipped, or fails on CI.
func libreOffice(t *testing.T, dir string, args ...string) {
	t.Helper()
	soffice, err := exec.LookPath("soffice")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("soffice is not installed; .ci/run installs libreoffice-calc-nogui")
		}
		t.Skip("soffice (LibreOffice) is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, soffice, append([]string{"-env:UserInstallation=file://" + filepath.Join(dir, "profile"), "--headless"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("soffice %q: %v\n%s", args, err, out)
	}
}

// odsCell is a cell of a flat OpenDocument spreadsheet as LibreOffice
// wrote it: its type ("float", "date", "string", or "" when empty), its
// value (office:value or office:date-value), its text and its style.
type odsCell struct {
	kind, value, text, style string
}

// flatSheet is what a test reads of a flat OpenDocument spreadsheet
// (.fods).
type flatSheet struct {
	// rows of the first table, empty trailing cells left out.
	rows [][]odsCell
	// table is the first table's name.
	table string
	// bold holds the names of the cell styles whose text is bold.
	bold map[string]bool
	// filters are the target ranges of the database ranges that show
	// filter buttons ("Tasks.A1:Tasks.N4").
	filters []string
}

// readFlatSheet reads a .fods file.
func readFlatSheet(t *testing.T, path string) flatSheet {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const (
		office = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
		table  = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
		style  = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
		fo     = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
		text   = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
	)
	attr := func(e xml.StartElement, space, local string) string {
		for _, a := range e.Attr {
			if a.Name.Space == space && a.Name.Local == local {
				return a.Value
			}
		}
		return ""
	}
	s := flatSheet{bold: map[string]bool{}}
	dec := xml.NewDecoder(bytes.NewReader(b))
	var (
		tables    int
		cell      *odsCell
		paras     int // the text paragraphs of cell so far
		inPara    bool
		repeat    int
		styleName string
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			switch {
			case e.Name.Space == table && e.Name.Local == "table":
				if tables++; tables == 1 {
					s.table = attr(e, table, "name")
				}
			case tables == 1 && e.Name.Space == table && e.Name.Local == "table-row":
				s.rows = append(s.rows, nil)
			case tables == 1 && e.Name.Space == table && e.Name.Local == "table-cell":
				cell = &odsCell{kind: attr(e, office, "value-type"), value: attr(e, office, "value"), style: attr(e, table, "style-name")}
				if d := attr(e, office, "date-value"); d != "" {
					cell.value = d
				}
				paras, repeat = 0, 1
				if r := attr(e, table, "number-columns-repeated"); r != "" {
					repeat, _ = strconv.Atoi(r)
				}
			case cell != nil && e.Name.Space == text && e.Name.Local == "p":
				if inPara = true; paras > 0 {
					cell.text += "\n"
				}
				paras++
			case e.Name.Space == style && e.Name.Local == "style":
				styleName = attr(e, style, "name")
			case e.Name.Space == style && e.Name.Local == "text-properties":
				if attr(e, fo, "font-weight") == "bold" {
					s.bold[styleName] = true
				}
			case e.Name.Space == table && e.Name.Local == "database-range":
				if attr(e, table, "display-filter-buttons") == "true" {
					s.filters = append(s.filters, attr(e, table, "target-range-address"))
				}
			}
		case xml.CharData:
			if inPara {
				cell.text += string(e)
			}
		case xml.EndElement:
			switch {
			case cell != nil && e.Name.Space == text && e.Name.Local == "p":
				inPara = false
			case cell != nil && e.Name.Space == table && e.Name.Local == "table-cell":
				last := len(s.rows) - 1
				for range min(repeat, 100) {
					s.rows[last] = append(s.rows[last], *cell)
				}
				cell = nil
			case tables == 1 && e.Name.Space == table && e.Name.Local == "table-row":
				// Empty cells to the sheet's edge are not cells of ours.
				row := s.rows[len(s.rows)-1]
				for len(row) > 0 && row[len(row)-1] == (odsCell{style: row[len(row)-1].style}) {
					row = row[:len(row)-1]
				}
				s.rows[len(s.rows)-1] = row
			}
		}
	}
	// Empty rows to the sheet's foot are not rows of ours.
	for len(s.rows) > 0 && len(s.rows[len(s.rows)-1]) == 0 {
		s.rows = s.rows[:len(s.rows)-1]
	}
	return s
}

// TestTaskExportOpensInLibreOfficeTyped exports tasks as a sheet through
// the console and opens it in LibreOffice, as a person would, reading
// back the flat document it saves: the next fire is a date cell worth
// the time exported, the fires and the file's row are numbers, the header
// is bold and frozen (the first row stays while the rest scrolls), and
// the filter spans the header and every task.
func TestTaskExportOpensInLibreOfficeTyped(t *testing.T) {
	f := newFeed(t, now)
	const tasks = 3
	next := now.Add(90 * time.Minute) // the first task's; the others' an hour apart
	for i := range tasks {
		d := task.Definition{Host: "acme", Name: fmt.Sprintf("report-%d", i), Action: task.Insert, Topic: "reports",
			Frequency: &task.Frequency{TimeUnit: task.Hours, Time: 1}}
		f.add(topics.State, d.Key(), record.State{Definition: d, Anchor: ms(now), NextFire: ms(next.Add(time.Duration(i) * time.Hour)),
			FireCount: int64(40 + i), Source: record.Source{Batch: payrollID, File: "reports.csv", Row: i + 2}, UpdatedAt: ms(now)})
	}
	ts := serve(t, f)
	resp, body := get(t, ts.URL+"/tasks/export.xlsx?host=acme")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export.xlsx: %s", resp.Status)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "tasks.xlsx")
	if err := os.WriteFile(in, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	libreOffice(t, dir, "--convert-to", "fods", "--outdir", dir, in)
	sheet := readFlatSheet(t, filepath.Join(dir, "tasks.fods"))

	if len(sheet.rows) != tasks+1 {
		t.Fatalf("LibreOffice shows %d rows, want the header and %d tasks: %+v", len(sheet.rows), tasks, sheet.rows)
	}
	col := map[string]int{}
	for i, c := range sheet.rows[0] {
		col[c.text] = i
		if !sheet.bold[c.style] {
			t.Errorf("header %q is not bold (style %q)", c.text, c.style)
		}
	}
	at, ok := col["next fire (UTC)"]
	if !ok {
		t.Fatalf("no column \"next fire (UTC)\" in the header %+v", sheet.rows[0])
	}
	for i, row := range sheet.rows[1:] {
		key := fmt.Sprintf("acme/report-%d", i)
		if c := row[col["key"]]; c.kind != "string" || c.text != key {
			t.Errorf("row %d: key is a %q cell reading %q, want text %s", i+2, c.kind, c.text, key)
		}
		want := next.Add(time.Duration(i) * time.Hour)
		if c := row[at]; c.kind != "date" {
			t.Errorf("row %d: next fire is a %q cell (%+v), want a date", i+2, c.kind, c)
		} else if got, err := time.Parse("2006-01-02T15:04:05", c.value); err != nil || !got.Equal(want) {
			t.Errorf("row %d: next fire is worth %q, want %s", i+2, c.value, want.Format(time.RFC3339))
		}
		for name, want := range map[string]int{"fires": 40 + i, "row": i + 2} {
			if c := row[col[name]]; c.kind != "float" || c.value != strconv.Itoa(want) {
				t.Errorf("row %d: %s is a %q cell worth %q, want a number worth %d", i+2, name, c.kind, c.value, want)
			}
		}
	}
	lastCol := string(rune('A' + len(sheet.rows[0]) - 1))
	want := fmt.Sprintf("%s.A1:%s.%s%d", sheet.table, sheet.table, lastCol, tasks+1)
	if len(sheet.filters) != 1 || sheet.filters[0] != want {
		t.Errorf("filters over %q, want one over %s", sheet.filters, want)
	}

	// Frozen: LibreOffice headless saves no view settings (settings.xml
	// holds no VerticalSplitMode), so the frozen pane is asked of the
	// view of the sheet loaded hidden, through the profile the
	// conversion made.
	macro := filepath.Join(dir, "profile", "user", "basic", "Standard", "Module1.xba")
	if err := os.WriteFile(macro, []byte(spreadsheetMacro), 0o600); err != nil {
		t.Fatal(err)
	}
	seen := filepath.Join(dir, "seen.txt")
	libreOffice(t, dir, fmt.Sprintf(`macro:///Standard.Module1.Look("file://%s","%s","A1")`, in, seen))
	look, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the macro wrote nothing: %v", err)
	}
	if frozen := strings.SplitN(string(look), "\n", 2)[0]; frozen != "frozen True 0 1" {
		t.Errorf("LibreOffice says %q, want \"frozen True 0 1\": the first row frozen, no column", frozen)
	}
}
