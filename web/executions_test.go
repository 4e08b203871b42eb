package web_test

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/jobdrop/jobdrop/internal/record"
)

// TestCatchUpFireSaysHowManyMissedFiresItStandsFor: a FIRE_ONCE task
// whose node was down for half an hour fires once for the 30 occurrences
// it missed; its row says so on the executions page and the task's page,
// and no other row says anything of the kind.
func TestCatchUpFireSaysHowManyMissedFiresItStandsFor(t *testing.T) {
	f := history(t)
	at := now.Add(-time.Minute)
	f.add(topics.Executions, "catch-up", record.Execution{FireID: "catch-up", Host: "acme", Name: "nightly", Topic: "jobs",
		Partition: 1, Offset: 20, ScheduledAt: ms(at), FiredAt: ms(at.Add(2 * time.Second)), Batch: payrollID, Collapsed: 30})
	ts := serve(t, f)
	for _, path := range []string{"/executions", "/tasks/acme/nightly"} {
		cells, _ := rows(t, page(t, ts.URL+path), "executions")
		var said []string
		for _, r := range cells {
			if strings.Contains(r[1], "missed") {
				said = append(said, r[0]+" "+r[1])
			}
		}
		if want := "acme/nightly 2026-03-14T09:25:53Z 1 fire for 30 missed"; len(said) != 1 || said[0] != want {
			t.Errorf("%s: rows saying what they stand for: %q, want only %q", path, said, want)
		}
	}
}

// TestMessagesReadAsWrittenWhereTheyMayFold: a task key, a message and a
// target may fold at a slash to keep a table within the page; what a
// person reads (and copies) is still exactly what was written, no space
// added.
func TestMessagesReadAsWrittenWhereTheyMayFold(t *testing.T) {
	f := history(t)
	const msg = "exported 12,431 rows to s3://finance-reports-eu/2026/11/ledger-eu-west-1.parquet, see ledger-replica-03.internal.example.com"
	f.add(topics.Status, "f3", record.Status{FireID: "f3", Status: record.StatusSuccess, Message: msg, At: ms(now.Add(-time.Minute))})
	ts := serve(t, f)
	_, trs := rows(t, page(t, ts.URL+"/executions"), "executions")
	for _, tr := range trs {
		cells := findAll(tr, element("td"))
		if shownText(cells[5]) != msg {
			continue
		}
		// As copied from the page: one space between words, as written.
		var raw strings.Builder
		for _, n := range findAll(cells[5], func(n *html.Node) bool { return n.Type == html.TextNode }) {
			raw.WriteString(n.Data)
		}
		if got := strings.TrimSpace(raw.String()); got != msg {
			t.Errorf("the message's text is %q, want %q", got, msg)
		}
		if got := shownText(cells[0]) + " | " + shownText(cells[6]); got != "acme/nightly | jobs/1@12" {
			t.Errorf("task and target read %q, want %q", got, "acme/nightly | jobs/1@12")
		}
		return
	}
	t.Errorf("no execution's message reads %q", msg)
}
