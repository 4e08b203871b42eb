package web_test

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/jobdrop/jobdrop/internal/record"
)

// shownText is n's text as a browser lays it out: text nodes joined as
// they are, whitespace collapsed, so that two words written with no space
// between them read as one.
func shownText(n *html.Node) string {
	var b strings.Builder
	for _, t := range findAll(n, func(n *html.Node) bool { return n.Type == html.TextNode }) {
		b.WriteString(t.Data)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// duplicate records that the content of payroll.csv was dropped again,
// as name, at.
func duplicate(f *feed, name string, at time.Time) {
	f.t.Helper()
	f.add(topics.Audit, "watcher", record.Audit{ID: "dup-" + name, At: ms(at), Actor: "watcher",
		Action: record.ActionFileDuplicate, Object: name, Outcome: record.OutcomeNoChange,
		Detail: "same content as a file injected before; nothing injected",
		Batch:  &record.Batch{ID: payrollID, File: name, Folder: "inbox/finance", Size: 2048, Arrival: record.ArrivalID("inbox/finance", name)}})
}

func TestFilePageSaysWhenItWasDroppedAgain(t *testing.T) {
	f := history(t)
	duplicate(f, "payroll-copy.csv", now.Add(-10*time.Minute))
	ts := serve(t, f)
	doc := page(t, ts.URL+"/files/"+payrollID)
	if got, want := shownText(byID(t, doc, "file-dropped-again")), "1× (nothing injected), last at 2026-03-14T09:16:53Z"; got != want {
		t.Errorf("dropped again = %q, want %q", got, want)
	}
}

// TestFilesListSaysWhatEachFileInjected checks the numbers a person reads
// in the files list: a file dropped again shows as itself, a duplicate
// that injected nothing, beside the file it repeats, which keeps its own
// numbers and place; a file rejected whole says all its rows were
// rejected, not only the invalid ones, and made no task.
func TestFilesListSaysWhatEachFileInjected(t *testing.T) {
	f := history(t)
	duplicate(f, "payroll-copy.csv", now.Add(-10*time.Minute))
	ts := serve(t, f)
	doc := page(t, ts.URL+"/files")

	var heads []string
	for _, th := range findAll(byID(t, doc, "files"), element("th")) {
		heads = append(heads, text(th))
	}
	if got, want := strings.Join(heads, "|"), "File|Folder|Status|Rows|Injected|Rejected|Tasks|Updated"; got != want {
		t.Errorf("columns = %s, want %s", got, want)
	}
	cells, trs := rows(t, doc, "files")
	var files []string
	for _, r := range cells {
		files = append(files, r[0])
	}
	if got, want := strings.Join(files, "|"), "payroll-copy.csv same content as payroll.csv|broken.csv|payroll.csv dropped again 1×"; got != want {
		t.Fatalf("files, newest first = %s, want %s", got, want)
	}
	for i, want := range [][]string{
		{"inbox/finance", "duplicate watcher", "—", "0", "—", "—", "2026-03-14T09:16:53Z"},
		{"inbox", "rejected", "4", "0", "4 (3 invalid)", "—", "2026-03-14T08:56:53Z"},
		{"inbox/finance", "injected", "5", "5", "0", "2", "2026-03-14T08:26:53Z"},
	} {
		if got := cells[i][1:]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: %q, want folder, status, rows, injected, rejected, tasks, updated %q", files[i], got, want)
		}
	}
	if href := linkTo(t, trs[0], "payroll.csv"); href != "/files/"+payrollID {
		t.Errorf("the duplicate links to %q, want the file it repeats", href)
	}
}

func TestFilePageOfARejectedFileSaysEveryRowWasRejected(t *testing.T) {
	ts := serve(t, history(t))
	doc := page(t, ts.URL+"/files/"+brokenID)
	if got := text(byID(t, doc, "file-rows")) + "/" + text(byID(t, doc, "file-accepted")) + "/" + text(byID(t, doc, "file-rejected")); got != "4/0/4 (3 invalid)" {
		t.Errorf("rows/injected/rejected = %s, want 4/0/4 (3 invalid)", got)
	}
}
