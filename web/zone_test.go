package web_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/xuri/excelize/v2"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/net/html"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web"
)

// TestTimesShowInTheZoneEachUserPicks: a user shows times in UTC (the
// default), their browser's zone or each task's own; the choice holds for
// them on every page and in their exports, which say the zone, and not
// for another user of the same browser.
func TestTimesShowInTheZoneEachUserPicks(t *testing.T) {
	f := history(t)
	india := task.Definition{Host: "acme", Name: "india", Action: task.Insert, Topic: "jobs", Cron: "30 9 * * *", Timezone: "Asia/Kolkata"}
	f.add(topics.State, india.Key(), record.State{Definition: india, Anchor: ms(now), NextFire: ms(time.Date(2026, 3, 15, 4, 0, 0, 0, time.UTC)), UpdatedAt: ms(now)})
	srv, err := web.New(web.Config{Clock: clockwork.NewFakeClockAt(f.now), Users: users(t, bcrypt.MinCost)}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = srv.HTTPServer()
	ts.Start()
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}

	as := func(user, method, path string, form url.Values) (*http.Response, string) {
		t.Helper()
		var req *http.Request
		if form != nil {
			req, _ = http.NewRequest(method, ts.URL+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", ts.URL)
		} else {
			req, _ = http.NewRequest(method, ts.URL+path, nil)
		}
		req.SetBasicAuth(user, backwards(user))
		return send(t, browser, req)
	}
	nextFires := func(user string) map[string]string {
		t.Helper()
		resp, body := as(user, "GET", "/tasks", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/tasks as %s: %s", user, resp.Status)
		}
		out := map[string]string{}
		cells, _ := rows(t, parse(t, body), "tasks")
		for _, c := range cells {
			out[c[0]] = strings.Fields(c[3])[0]
		}
		return out
	}
	pick := func(user, tz, zone string) {
		t.Helper()
		resp, _ := as(user, "POST", "/settings/timezone", url.Values{"tz": {tz}, "zone": {zone}, "back": {"/tasks"}})
		if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/tasks" {
			t.Fatalf("%s picks %s %s: %s at %s", user, tz, zone, resp.Status, resp.Request.URL)
		}
	}

	if got := nextFires("ada"); got["acme/nightly"] != "2026-03-14T11:26:53Z" || got["acme/india"] != "2026-03-15T04:00:00Z" {
		t.Errorf("by default, next fires %q; want UTC", got)
	}
	pick("ada", "local", "America/New_York")
	if got := nextFires("ada"); got["acme/nightly"] != "2026-03-14T07:26:53-04:00" || got["acme/india"] != "2026-03-15T00:00:00-04:00" {
		t.Errorf("in ada's browser's zone, next fires %q", got)
	}
	_, body := as("ada", "GET", "/executions", nil)
	if doc := parse(t, body); !strings.Contains(text(byID(t, doc, "tz-label")), "America/New_York") {
		t.Errorf("the page says times are in %q", text(byID(t, doc, "tz-label")))
	}
	// Another user of the same browser keeps UTC.
	if got := nextFires("vera"); got["acme/nightly"] != "2026-03-14T11:26:53Z" {
		t.Errorf("vera, who picked nothing, sees %q", got)
	}
	// ada's exports are in her zone, and say so.
	_, csvBody := as("ada", "GET", "/executions/export.csv?task=acme/nightly&sort=oldest", nil)
	if !strings.Contains(csvBody, "2026-03-11T05:26:53-04:00") {
		t.Errorf("ada's CSV export holds no time in her zone:\n%s", csvBody)
	}
	_, xlsx := as("ada", "GET", "/audit/export.xlsx", nil)
	if _, sheet := readSheet(t, xlsx); sheet[0][0] != "at (America/New_York)" {
		t.Errorf("ada's sheet's header %q does not name her zone", sheet[0])
	}

	pick("ada", "task", "")
	if got := nextFires("ada"); got["acme/nightly"] != "2026-03-14T11:26:53Z" || got["acme/india"] != "2026-03-15T09:30:00+05:30" {
		t.Errorf("in each task's zone, next fires %q", got)
	}
	// A zone no one knows is UTC.
	pick("ada", "local", "Mars/Olympus_Mons")
	if got := nextFires("ada"); got["acme/india"] != "2026-03-15T04:00:00Z" {
		t.Errorf("with an unknown zone, next fires %q", got)
	}
}

// parse parses a page's HTML.
func parse(t *testing.T, body string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// readSheet reads the first sheet of a workbook.
func readSheet(t *testing.T, body string) (*excelize.File, [][]string) {
	t.Helper()
	book, err := excelize.OpenReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { book.Close() })
	rows, err := book.GetRows(book.GetSheetName(0))
	if err != nil {
		t.Fatal(err)
	}
	return book, rows
}
