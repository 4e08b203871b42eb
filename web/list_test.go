package web_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/net/html"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// addAll applies many records in one transaction, numbering them per
// topic as a broker would.
func (f *feed) addAll(recs []*kgo.Record) {
	f.t.Helper()
	for _, r := range recs {
		r.Offset = f.next[r.Topic]
		f.next[r.Topic]++
		if r.Timestamp.IsZero() {
			r.Timestamp = f.now
		}
	}
	if _, err := f.st.Apply(context.Background(), topics, recs); err != nil {
		f.t.Fatalf("apply: %v", err)
	}
}

func rec(t *testing.T, topic, key string, v any) *kgo.Record {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Topic: topic, Key: []byte(key), Value: b}
}

// night is a night of executions: host "night" failed 1,500 times in the
// last hour and 300 times before it, and succeeded 500 times; host "day"
// failed 400 times in the last hour.
func night(t *testing.T) *feed {
	f := newFeed(t, now)
	var recs []*kgo.Record
	n := 0
	add := func(host string, at time.Time, status string, topic string) {
		id := fmt.Sprintf("%s-%05d", host, n)
		n++
		recs = append(recs, rec(t, topics.Executions, id, record.Execution{FireID: id, Host: host, Name: fmt.Sprintf("job-%d", n%40),
			Topic: topic, ScheduledAt: ms(at), FiredAt: ms(at), Batch: payrollID}))
		recs = append(recs, rec(t, topics.Status, id, record.Status{FireID: id, Status: status, Message: "exit 1", At: ms(at) + 10}))
	}
	for i := range 1500 {
		// Two fires a second, in the hour before now.
		add("night", now.Add(-time.Duration(i)*1200*time.Millisecond-time.Second), record.StatusFailed, []string{"jobs", "other"}[i%2])
	}
	for i := range 300 {
		add("night", now.Add(-2*time.Hour-time.Duration(i)*time.Second), record.StatusFailed, "jobs")
	}
	for i := range 500 {
		add("night", now.Add(-time.Duration(i)*time.Second), record.StatusSuccess, "jobs")
	}
	for i := range 400 {
		add("day", now.Add(-time.Duration(i)*time.Second), record.StatusFailed, "jobs")
	}
	f.addAll(recs)
	return f
}

// apiPages follows an API list's next links from path to the end.
func apiPages[T any](t *testing.T, base, path string) (rows []T, total int, pages int) {
	t.Helper()
	next := path
	for next != "" {
		resp, body := get(t, base+next)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", next, resp.Status, body)
		}
		var page []T
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatalf("GET %s: %v", next, err)
		}
		rows = append(rows, page...)
		pages++
		n, err := strconv.Atoi(resp.Header.Get("X-Total-Count"))
		if err != nil {
			t.Fatalf("GET %s: X-Total-Count %q", next, resp.Header.Get("X-Total-Count"))
		}
		total = n
		next = ""
		if m := regexp.MustCompile(`<([^>]+)>; rel="next"`).FindStringSubmatch(resp.Header.Get("Link")); m != nil {
			next = m[1]
		}
		if pages > 100 {
			t.Fatal("more than 100 pages")
		}
	}
	return rows, total, pages
}

// TestExecutionsAPIFiltersAndPagesPastAThousand: /api/executions honours
// every filter, FAILED included, and pages with a cursor past 1,000 rows
// to the end, saying how many rows there are.
func TestExecutionsAPIFiltersAndPagesPastAThousand(t *testing.T) {
	ts := serve(t, night(t))
	hourAgo := now.Add(-time.Hour)

	rows, total, pages := apiPages[storetype.Execution](t, ts.URL, "/api/executions?status=FAILED&host=night&from=-1h&limit=1000")
	if total != 1500 || len(rows) != 1500 || pages != 2 {
		t.Fatalf("FAILED of night in the last hour: %d rows in %d pages, total %d; want 1,500 in 2, total 1,500", len(rows), pages, total)
	}
	seen := map[string]bool{}
	for i, e := range rows {
		if e.Status != "FAILED" || e.Host != "night" || e.FiredAt.Before(hourAgo) || seen[e.FireID] {
			t.Fatalf("row %d: %+v (seen %t)", i, e, seen[e.FireID])
		}
		seen[e.FireID] = true
		if i > 0 && e.FiredAt.After(*rows[i-1].FiredAt) {
			t.Fatalf("row %d fired after the row before it: not newest first", i)
		}
	}

	for _, tc := range []struct {
		query string
		want  int
		check func(storetype.Execution) bool
	}{
		{"status=failed&host=day", 400, func(e storetype.Execution) bool { return e.Status == "FAILED" && e.Host == "day" }},
		{"status=SUCCESS", 500, func(e storetype.Execution) bool { return e.Status == "SUCCESS" }},
		{"host=night&to=" + url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339)), 300, func(e storetype.Execution) bool { return e.FiredAt.Before(hourAgo) }},
		{"host=night&topic=other", 750, func(e storetype.Execution) bool { return e.Topic == "other" }},
		{"task=day/job-7", 10, func(e storetype.Execution) bool { return e.TaskKey() == "day/job-7" }},
		{"name=JOB-7&host=day", 10, func(e storetype.Execution) bool { return strings.Contains(e.Name, "job-7") }},
		{"file=" + payrollID, 2700, func(e storetype.Execution) bool { return e.Batch == payrollID }},
		{"file=" + brokenID, 0, nil},
	} {
		rows, total, _ := apiPages[storetype.Execution](t, ts.URL, "/api/executions?limit=1000&"+tc.query)
		if total != tc.want || len(rows) != tc.want {
			t.Errorf("%s: %d rows, total %d; want %d", tc.query, len(rows), total, tc.want)
		}
		for _, e := range rows {
			if !tc.check(e) {
				t.Errorf("%s: row %+v does not match", tc.query, e)
				break
			}
		}
	}

	oldest, _, _ := apiPages[storetype.Execution](t, ts.URL, "/api/executions?host=day&sort=oldest&limit=1000")
	newest, _, _ := apiPages[storetype.Execution](t, ts.URL, "/api/executions?host=day&limit=1000")
	slices.Reverse(oldest)
	if !slices.EqualFunc(oldest, newest, func(a, b storetype.Execution) bool { return a.FireID == b.FireID }) {
		t.Error("oldest first is not newest first reversed")
	}

	for _, bad := range []string{"status=DONE", "cursor=garbage", "from=yesterday", "limit=0", "sort=random"} {
		resp, body := get(t, ts.URL+"/api/executions?"+bad)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"error"`) {
			t.Errorf("?%s: %s %s, want 400 with an error", bad, resp.Status, body)
		}
	}
}

// TestExecutionsPageFiltersAndPagesToTheEnd: the executions page filters
// by a shareable URL, says how many executions match and where the page
// is, and pages to the end.
func TestExecutionsPageFiltersAndPagesToTheEnd(t *testing.T) {
	ts := serve(t, night(t))
	// The form sends every field, empty or not: the page answers at the
	// URL of the filters set, to share.
	resp, _ := get(t, ts.URL+"/executions?status=FAILED&host=night&name=&task=&topic=&file=&from=-1h&to=&sort=&limit=500")
	if resp.StatusCode != http.StatusOK || resp.Request.URL.RawQuery != "status=FAILED&host=night&from=-1h&limit=500" {
		t.Fatalf("filtered page at ?%s (%s), want the filters set alone", resp.Request.URL.RawQuery, resp.Status)
	}
	path := "/executions?" + resp.Request.URL.RawQuery
	var lines []string
	n := 0
	for path != "" {
		doc := page(t, ts.URL+path)
		cells, _ := rows(t, doc, "executions")
		n += len(cells)
		for _, c := range cells {
			if !strings.HasPrefix(c[0], "night/") || c[3] != "FAILED" {
				t.Fatalf("row %q", c)
			}
		}
		pager := byID(t, doc, "pager")
		lines = append(lines, text(findAll(pager, func(n *html.Node) bool { return attr(n, "class") == "total" })[0]))
		path = ""
		for _, a := range findAll(pager, element("a")) {
			if attr(a, "rel") == "next" {
				path = attr(a, "href")
			}
		}
	}
	if want := []string{"1,500 executions: 1–500", "1,500 executions: 501–1,000", "1,500 executions: 1,001–1,500"}; !slices.Equal(lines, want) || n != 1500 {
		t.Errorf("pages say %q with %d rows; want %q, 1,500 rows", lines, n, want)
	}
	doc := page(t, ts.URL+"/executions?status=FAILED&host=night&from=-1h")
	if href := attr(byID(t, doc, "export-csv"), "href"); href != "/executions/export.csv?status=FAILED&host=night&from=-1h" {
		t.Errorf("export link %q", href)
	}
	if resp, _ := get(t, ts.URL+"/executions?cursor=garbage"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a cursor of no page: %s, want 400", resp.Status)
	}
}

// TestDashboardCountsLinkToTheirLists: every count on the dashboard links
// to the list of what it counts, and that list says the same number.
func TestDashboardCountsLinkToTheirLists(t *testing.T) {
	f := history(t)
	paused := task.Definition{Host: "beta", Name: "held", Action: task.Insert, Topic: "jobs",
		Frequency: &task.Frequency{TimeUnit: task.Hours, Time: 1}, Active: task.Ptr(false)}
	f.add(topics.State, paused.Key(), record.State{Definition: paused, Anchor: ms(now), NextFire: ms(now.Add(time.Hour)), UpdatedAt: ms(now)})
	f.add(topics.Executions, "late", record.Execution{FireID: "late", Host: "beta", Name: "held", Topic: "jobs",
		ScheduledAt: ms(now.Add(-10 * time.Minute)), FiredAt: ms(now.Add(-10 * time.Minute)), Timeout: 60_000})
	f.add(topics.Executions, "recent", record.Execution{FireID: "recent", Host: "beta", Name: "held", Topic: "jobs",
		ScheduledAt: ms(now.Add(-5 * time.Minute)), FiredAt: ms(now.Add(-5 * time.Minute))})
	f.add(topics.Status, "recent", record.Status{FireID: "recent", Status: record.StatusFailed, At: ms(now.Add(-4 * time.Minute))})
	ts := serve(t, f)
	doc := page(t, ts.URL+"/")
	counts := findAll(doc, func(n *html.Node) bool { return attr(n, "class") == "count-line" })
	if len(counts) < 14 {
		t.Fatalf("%d counts on the dashboard", len(counts))
	}
	shown := map[string]string{}
	for _, c := range counts {
		a := findAll(c, element("a"))[0]
		href := attr(a, "href")
		n := text(findAll(c, func(n *html.Node) bool { return attr(n, "class") == "count" })[0])
		list := page(t, ts.URL+href)
		pager := text(findAll(byID(t, list, "pager"), func(n *html.Node) bool { return attr(n, "class") == "total" })[0])
		total, _, _ := strings.Cut(pager, " ")
		if total == "no" {
			total = "0"
		}
		if total != n {
			t.Errorf("%q shows %s; its list %s says %q", text(c), n, href, pager)
		}
		shown[attr(findAll(c, func(n *html.Node) bool { return attr(n, "class") == "count" })[0], "id")] = n
	}
	// Paused and overdue are states of their own, counted apart.
	for id, want := range map[string]string{"tasks-active": "3", "tasks-paused": "1", "executions-overdue": "1",
		"executions-failed": "2", "executions-total": "6", "hour-fires": "3", "hour-failures": "1"} {
		if shown[id] != want {
			t.Errorf("%s shows %q, want %s", id, shown[id], want)
		}
	}
}

// TestListAPIsPagePastAThousand: /api/tasks, /api/files and /api/audit
// page with a cursor past 1,000 rows and honour every filter.
func TestListAPIsPagePastAThousand(t *testing.T) {
	f := newFeed(t, now)
	var recs []*kgo.Record
	batchID := func(i int) string { return fmt.Sprintf("%064d", i) }
	for i := range 1200 {
		// Files: 1,200 injected, in two folders, one a minute.
		at := now.Add(-time.Duration(i) * time.Minute)
		file := fmt.Sprintf("jobs-%04d.csv", i)
		recs = append(recs, rec(t, topics.Audit, "watcher", record.Audit{ID: "file-" + file, At: ms(at), Actor: "watcher",
			Action: record.ActionFileInjected, Object: file, Outcome: record.OutcomeOK,
			Batch: &record.Batch{ID: batchID(i), File: file, Folder: []string{"/in/a", "/in/b"}[i%2], Rows: 1}}))
		// Tasks: 1,200, one from each file, every third paused, due
		// one a minute from now.
		d := task.Definition{Host: []string{"acme", "beta"}[i%2], Name: fmt.Sprintf("job-%04d", i), Action: task.Insert,
			Topic: []string{"jobs", "reports", "other"}[i%3], Frequency: &task.Frequency{TimeUnit: task.Days, Time: 1}}
		if i%3 == 0 {
			d.Active = task.Ptr(false)
		}
		recs = append(recs, rec(t, topics.State, d.Key(), record.State{Definition: d, Anchor: ms(now), NextFire: ms(now.Add(time.Duration(i+1) * time.Minute)),
			Source: record.Source{Batch: batchID(i), File: file, Row: 1}, UpdatedAt: ms(now)}))
		// Audit: the file's event, and 1,200 task events of two users.
		outcome := record.OutcomeOK
		if i%4 == 0 {
			outcome = record.OutcomeRejected
		}
		recs = append(recs, rec(t, topics.Audit, "u", record.Audit{ID: fmt.Sprintf("t-%04d", i), At: ms(at), Actor: []string{"ada", "otto"}[i%2],
			Action: record.ActionTaskPaused, Object: d.Key(), Outcome: outcome}))
	}
	f.addAll(recs)
	ts := serve(t, f)

	type check struct {
		query string
		want  int
	}
	for _, c := range []check{
		{"", 1200}, {"status=paused", 400}, {"status=active", 800}, {"status=live", 1200}, {"status=completed", 0},
		{"host=beta", 600}, {"name=job-00", 100}, {"topic=reports", 400}, {"file=" + batchID(7), 1},
		{"from=" + url.QueryEscape(now.Add(100*time.Minute).Format(time.RFC3339)) + "&to=%2B200m", 100},
		{"status=paused&host=acme&sort=key", 200},
	} {
		rows, total, _ := apiPages[storetype.Task](t, ts.URL, "/api/tasks?limit=1000&"+c.query)
		if len(rows) != c.want || total != c.want {
			t.Errorf("/api/tasks?%s: %d rows, total %d; want %d", c.query, len(rows), total, c.want)
		}
		for _, r := range rows {
			if strings.Contains(c.query, "status=paused") && (r.Status != storetype.TaskPaused || !r.Paused) {
				t.Errorf("/api/tasks?%s: %s is %s", c.query, r.Key, r.Status)
				break
			}
		}
	}
	for _, c := range []check{
		{"", 1200}, {"status=injected", 1200}, {"status=rejected", 0}, {"folder=%2Fin%2Fb", 600}, {"name=jobs-001", 10},
		{"from=-30m", 31}, {"to=" + url.QueryEscape(now.Add(-1000*time.Minute).Format(time.RFC3339)), 199},
	} {
		rows, total, _ := apiPages[json.RawMessage](t, ts.URL, "/api/files?limit=1000&"+c.query)
		if len(rows) != c.want || total != c.want {
			t.Errorf("/api/files?%s: %d rows, total %d; want %d", c.query, len(rows), total, c.want)
		}
	}
	for _, c := range []check{
		{"", 2400}, {"actor=ada", 600}, {"action=task.paused", 1200}, {"object=acme%2Fjob-01", 50},
		{"outcome=rejected", 300}, {"from=-60m", 122}, {"actor=otto&action=task.paused&outcome=ok&sort=oldest", 600},
	} {
		rows, total, _ := apiPages[storetype.AuditEvent](t, ts.URL, "/api/audit?limit=1000&"+c.query)
		if len(rows) != c.want || total != c.want {
			t.Errorf("/api/audit?%s: %d rows, total %d; want %d", c.query, len(rows), total, c.want)
		}
	}
}

// TestExecutionsExport: the executions the list's filters select export
// whole, as CSV and as a sheet, in the list's order, each with the status
// it shows now.
func TestExecutionsExport(t *testing.T) {
	f := night(t)
	f.add(topics.Executions, "late", record.Execution{FireID: "late", Host: "beta", Name: "slow", Topic: "jobs",
		ScheduledAt: ms(now.Add(-10 * time.Minute)), FiredAt: ms(now.Add(-10 * time.Minute)), Timeout: 60_000})
	ts := serve(t, f)
	resp, body := get(t, ts.URL+"/executions/export.csv?status=FAILED&host=night&from=-1h")
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Disposition"), "jobdrop-executions-") {
		t.Fatalf("export: %s %s", resp.Status, resp.Header.Get("Content-Disposition"))
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1501 || rows[0][0] != "fire id" || rows[0][5] != "status" {
		t.Fatalf("%d rows, header %q; want a header and 1,500 rows", len(rows), rows[0])
	}
	for _, r := range rows[1:] {
		if r[2] != "night" || r[5] != "FAILED" {
			t.Fatalf("row %q", r)
		}
	}
	_, sheet := exportXLSX(t, ts.URL+"/executions/export.xlsx?host=beta")
	if len(sheet) != 2 || sheet[1][0] != "late" || sheet[1][5] != "OVERDUE" || sheet[1][6] != "FIRED" {
		t.Errorf("sheet of beta's executions: %q; want the late one, OVERDUE, recorded FIRED", sheet)
	}
	if resp, _ := get(t, ts.URL+"/executions/export.csv?status=SLEEPING"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("export with an unknown status: %s, want 400", resp.Status)
	}
}

// TestDashboardShowsWhatNeedsAttentionFirst: before any count, the
// dashboard lists what needs someone (held and failed files, files
// rejected and executions failed in the last hour, tasks the fault policy
// paused, overdue executions), each linked to its list, which holds as
// many; held files are named. With none of it, it says so.
func TestDashboardShowsWhatNeedsAttentionFirst(t *testing.T) {
	calm := newFeed(t, now)
	doc := page(t, serve(t, calm).URL+"/")
	if got := text(byID(t, doc, "attention")); !strings.Contains(got, "Nothing") {
		t.Errorf("a calm dashboard says %q", got)
	}

	f := history(t) // broken.csv was rejected 30 minutes ago; f2 failed two days ago
	heldID := strings.Repeat("3", 64)
	f.add(topics.Audit, "watcher", record.Audit{ID: "held", At: ms(now.Add(-time.Minute)), Actor: "watcher", Action: record.ActionFileHeld,
		Object: "crontab", Outcome: record.OutcomeOK, Batch: &record.Batch{ID: heldID, File: "crontab", Folder: "inbox", Rows: 1,
			Diff: &record.Diff{Removed: 40, Unchanged: 1, Held: "would remove 40 of 41"}}})
	f.add(topics.Audit, "watcher", record.Audit{ID: "unreadable", At: ms(now.Add(-time.Minute)), Actor: "watcher", Action: record.ActionFileFailed,
		Object: "huge.csv", Outcome: record.OutcomeFailed, Detail: "too large",
		Arrival: &record.Arrival{ID: record.ArrivalID("inbox", "huge.csv"), File: "huge.csv", Folder: "inbox"}})
	def := task.Definition{Host: "acme", Name: "export", Action: task.Insert, Topic: "exports", Active: task.Ptr(false)}
	f.add(topics.State, def.Key(), record.State{Definition: def, Anchor: ms(now), UpdatedAt: ms(now),
		Fault: &record.Fault{Occurrence: ms(now), Attempts: 5, Reason: "TOPIC_AUTHORIZATION_FAILED", At: ms(now), Paused: true}})
	f.add(topics.Executions, "late", record.Execution{FireID: "late", Host: "acme", Name: "nightly", Topic: "jobs",
		ScheduledAt: ms(now.Add(-10 * time.Minute)), FiredAt: ms(now.Add(-10 * time.Minute)), Timeout: 60_000})
	f.add(topics.Executions, "f5", record.Execution{FireID: "f5", Host: "acme", Name: "nightly", Topic: "jobs",
		ScheduledAt: ms(now.Add(-5 * time.Minute)), FiredAt: ms(now.Add(-5 * time.Minute))})
	f.add(topics.Status, "f5", record.Status{FireID: "f5", Status: record.StatusFailed, Message: "exit 2", At: ms(now.Add(-4 * time.Minute))})
	ts := serve(t, f)
	doc = page(t, ts.URL+"/")

	main := findAll(doc, element("main"))[0]
	var order []string
	for _, n := range findAll(main, func(n *html.Node) bool { return attr(n, "id") == "attention" || attr(n, "id") == "summary" }) {
		order = append(order, attr(n, "id"))
	}
	if !slices.Equal(order, []string{"attention", "summary"}) {
		t.Errorf("dashboard sections in order %q, want what needs attention first", order)
	}
	for id, want := range map[string]string{"attention-held": "1", "attention-files-failed": "1", "attention-rejected": "1",
		"attention-fault-paused": "1", "attention-failed": "1", "attention-overdue": "1"} {
		item := byID(t, doc, id)
		n := text(findAll(item, func(n *html.Node) bool { return attr(n, "class") == "count" })[0])
		href := attr(findAll(item, element("a"))[0], "href")
		list := page(t, ts.URL+href)
		total := text(findAll(byID(t, list, "pager"), func(n *html.Node) bool { return attr(n, "class") == "total" })[0])
		if n != want || !strings.HasPrefix(total, want+" ") {
			t.Errorf("%s: %q counts %s, its list %s says %q; want %s", id, text(item), n, href, total, want)
		}
		if w := strings.Fields(text(item)); len(w) < 2 || strings.HasSuffix(w[1], "s") {
			t.Errorf("%s: one of them reads %q", id, text(item))
		}
	}
	if href := linkTo(t, byID(t, doc, "attention"), "crontab"); href != "/files/"+heldID {
		t.Errorf("held file links to %q", href)
	}

	// Paused and overdue show as such, in words, wherever they are listed.
	cells, _ := rowWith(t, page(t, ts.URL+"/tasks"), "tasks", def.Key())
	if !strings.HasPrefix(cells[2], "paused") || strings.Contains(cells[2], "active") {
		t.Errorf("the paused task's state cell says %q", cells[2])
	}
	execs, _ := rows(t, page(t, ts.URL+"/executions?status=OVERDUE"), "executions")
	if len(execs) != 1 || !strings.HasPrefix(execs[0][3], "OVERDUE FIRED, past its 1m0s timeout") {
		t.Errorf("overdue executions: %q", execs)
	}
	var got storetype.Task
	if _, body := get(t, ts.URL+"/api/tasks/"+def.Key()); json.Unmarshal([]byte(body), &got) != nil || got.Status != "paused" || !got.Paused {
		t.Errorf("/api/tasks/%s: %s", def.Key(), body)
	}
}
