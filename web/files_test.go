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
