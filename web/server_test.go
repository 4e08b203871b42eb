package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/net/html"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web"
)

var now = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

const (
	payrollID = "1111111111111111111111111111111111111111111111111111111111111111"
	brokenID  = "2222222222222222222222222222222222222222222222222222222222222222"
	scriptKey = `acme/<script>alert("x")</script>`
	slashKey  = "acme/reports/monthly"
)

func ms(t time.Time) int64 { return t.UnixMilli() }

// history fills a store the way the recorder would: two files, three
// tasks, four executions in every state.
func history(t *testing.T) *feed {
	f := newFeed(t, now)
	f.add(topics.Audit, "watcher", record.Audit{ID: "a1", At: ms(now.Add(-time.Hour)), Actor: "watcher",
		Action: record.ActionFileInjected, Object: "payroll.csv", Outcome: record.OutcomeOK,
		Batch: &record.Batch{ID: payrollID, File: "payroll.csv", Folder: "inbox/finance", Size: 2048, Rows: 5}})
	f.add(topics.Audit, "watcher", record.Audit{ID: "a2", At: ms(now.Add(-30 * time.Minute)), Actor: "watcher",
		Action: record.ActionFileRejected, Object: "broken.csv", Outcome: record.OutcomeRejected,
		Batch: &record.Batch{ID: brokenID, File: "broken.csv", Folder: "inbox", Size: 100, Rows: 4, Rejected: 3,
			Errors: []string{`row 2: column timeUnit: unknown unit "FORTNIGHTS"`, "row 3: column host: is required", "row 4: column start: <b>not a time</b>"}}})

	src := func(row int) record.Source { return record.Source{Batch: payrollID, File: "payroll.csv", Row: row} }
	script := task.Definition{Host: "acme", Name: `<script>alert("x")</script>`, Action: task.Insert, Topic: "jobs", Start: task.Ptr(ms(now.Add(4 * time.Minute)))}
	f.add(topics.State, scriptKey, record.State{Definition: script, Anchor: ms(now.Add(4 * time.Minute)),
		NextFire: ms(now.Add(4 * time.Minute)), Source: src(2), UpdatedAt: ms(now.Add(-time.Hour))})
	nightly := task.Definition{Host: "acme", Name: "nightly", Action: task.Insert, Topic: "jobs",
		Frequency: &task.Frequency{TimeUnit: task.Days, Time: 1}, Data: map[string]string{"cmd": "pay"}}
	f.add(topics.State, "acme/nightly", record.State{Definition: nightly, Anchor: ms(now.Add(-70 * time.Hour)),
		NextFire: ms(now.Add(2 * time.Hour)), FireCount: 3, LastFire: ms(now.Add(-22 * time.Hour)), Source: src(1), UpdatedAt: ms(now.Add(-22 * time.Hour))})
	monthly := task.Definition{Host: "acme", Name: "reports/monthly", Action: task.Insert, Topic: "reports", Cron: "0 6 1 * *"}
	f.add(topics.State, slashKey, record.State{Definition: monthly, Anchor: ms(now), NextFire: ms(time.Date(2026, 4, 1, 6, 0, 0, 0, time.UTC)),
		Source: record.Source{Actor: "console"}, UpdatedAt: ms(now)})

	for i, id := range []string{"f1", "f2", "f3"} {
		at := now.Add(time.Duration(i-3) * 24 * time.Hour)
		f.add(topics.Executions, id, record.Execution{FireID: id, Host: "acme", Name: "nightly", Topic: "jobs",
			Partition: 1, Offset: int64(10 + i), ScheduledAt: ms(at), FiredAt: ms(at.Add(3 * time.Millisecond)), Batch: payrollID})
	}
	f.add(topics.Status, "f1", record.Status{FireID: "f1", Status: record.StatusSuccess, Message: "paid 12 people", At: ms(now.Add(-71 * time.Hour))})
	f.add(topics.Status, "f2", record.Status{FireID: "f2", Status: record.StatusFailed, Message: "disk full", At: ms(now.Add(-47 * time.Hour))})
	// A worker's report whose execution record is not here yet.
	f.add(topics.Status, "f4", record.Status{FireID: "f4", Status: record.StatusRunning, At: ms(now.Add(-time.Minute))})
	return f
}

func TestDashboard(t *testing.T) {
	ts := serve(t, history(t))
	doc := page(t, ts.URL+"/")

	payroll, row := rowWith(t, doc, "files", "payroll.csv")
	if got, want := payroll[1:7], []string{"inbox/finance", "injected", "5", "5", "0", "2"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("payroll.csv row = %q, want folder, status, rows, injected, rejected, tasks = %q", got, want)
	}
	if href := linkTo(t, row, "payroll.csv"); href != "/files/"+payrollID {
		t.Errorf("file link = %q", href)
	}
	broken, _ := rowWith(t, doc, "files", "broken.csv")
	// Rejected whole: its one valid row was rejected too.
	if got, want := broken[2:7], []string{"rejected", "4", "0", "4 (3 invalid)", "—"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("broken.csv row = %q, want status, rows, injected, rejected, tasks = %q", got, want)
	}

	// The task name is shown as text, never run as a script.
	scriptRow, _ := rowWith(t, doc, "tasks", scriptKey)
	onlyStaticScripts(t, doc)
	if want := "2026-03-14T09:30:53Z in 4m"; scriptRow[3] != want {
		t.Errorf("next fire = %q, want %q", scriptRow[3], want)
	}
	nightly, _ := rowWith(t, doc, "tasks", "acme/nightly")
	if nightly[1] != "every day" || nightly[3] != "2026-03-14T11:26:53Z in 2h" || nightly[4] != "3" {
		t.Errorf("nightly row = %q, want every day, next fire in 2h, 3 executions", nightly)
	}
	cells, _ := rows(t, doc, "tasks")
	if cells[0][0] != scriptKey {
		t.Errorf("first task = %q, want the one due soonest", cells[0][0])
	}

	execs, _ := rows(t, doc, "executions")
	if len(execs) != 4 {
		t.Errorf("%d executions shown, want 4: %q", len(execs), execs)
	}
	if got := text(byID(t, doc, "executions-total")); got != "4" {
		t.Errorf("executions count = %q, want 4", got)
	}
	if got := text(byID(t, doc, "executions-failed")); got != "1" {
		t.Errorf("failed executions = %q, want 1", got)
	}
	if got := text(byID(t, doc, "files-rejected")); got != "1" {
		t.Errorf("rejected files = %q, want 1", got)
	}
}

func TestFilePage(t *testing.T) {
	ts := serve(t, history(t))
	doc := page(t, ts.URL+"/files/"+payrollID)
	if h1 := text(findAll(doc, element("h1"))[0]); h1 != "payroll.csv" {
		t.Errorf("heading = %q", h1)
	}
	if got := text(byID(t, doc, "file-rows")) + "/" + text(byID(t, doc, "file-accepted")) + "/" + text(byID(t, doc, "file-rejected")); got != "5/5/0" {
		t.Errorf("rows/accepted/rejected = %s", got)
	}
	cells, _ := rows(t, doc, "tasks")
	if len(cells) != 2 {
		t.Fatalf("tasks of payroll.csv = %q, want the two it defined", cells)
	}
	_, row := rowWith(t, doc, "tasks", "acme/nightly")
	taskHref := linkTo(t, row, "acme/nightly")

	// The file's task links to its executions.
	task := page(t, ts.URL+taskHref)
	if got := text(byID(t, task, "task-executions")); got != "3" {
		t.Errorf("executions count on the task page = %q", got)
	}
	execs, _ := rows(t, task, "executions")
	if len(execs) != 3 {
		t.Fatalf("executions of nightly = %q", execs)
	}
	var statuses []string
	for _, e := range execs {
		statuses = append(statuses, e[3]+":"+e[5])
	}
	if got, want := strings.Join(statuses, ","), "FIRED:—,FAILED:disk full,SUCCESS:paid 12 people"; got != want {
		t.Errorf("executions (status:message) = %s, want %s", got, want)
	}
	if def := text(byID(t, task, "task-definition")); !strings.Contains(def, `"cmd": "pay"`) {
		t.Errorf("definition = %s", def)
	}

	bad := page(t, ts.URL+"/files/"+brokenID)
	errs := findAll(byID(t, bad, "file-errors"), element("li"))
	if len(errs) != 3 || text(errs[2]) != "row 4: column start: <b>not a time</b>" {
		t.Errorf("row errors = %d, last %q", len(errs), text(errs[len(errs)-1]))
	}
	if empty := findAll(bad, func(n *html.Node) bool { return attr(n, "class") == "empty" }); len(empty) == 0 {
		t.Error("a rejected file shows no 'no tasks' message")
	}
	if cut := findAll(bad, func(n *html.Node) bool { return attr(n, "id") == "file-errors-cut" }); len(cut) != 0 {
		t.Error("all of broken.csv's errors are shown, yet the page says the list is cut")
	}
}

// TestFilePageSaysItsErrorListIsCut: a file with more bad rows than its
// record carries says so under the errors it lists.
func TestFilePageSaysItsErrorListIsCut(t *testing.T) {
	f := newFeed(t, now)
	var errs []string
	for i := range record.MaxBatchErrors {
		errs = append(errs, fmt.Sprintf("row %d: column time: must be a positive whole number", i+2))
	}
	f.add(topics.Audit, "watcher", record.Audit{ID: "a1", At: ms(now), Actor: "watcher",
		Action: record.ActionFileRejected, Object: "big.csv", Outcome: record.OutcomeRejected,
		Batch: &record.Batch{ID: brokenID, File: "big.csv", Size: 100, Rows: 50_000, Rejected: 20_000, Errors: errs}})
	ts := serve(t, f)
	doc := page(t, ts.URL+"/files/"+brokenID)
	if got := text(byID(t, doc, "file-errors-cut")); !strings.Contains(got, "The first 100 problems of 20000 rejected rows") {
		t.Errorf("note under the errors = %q", got)
	}
}

func TestTaskPages(t *testing.T) {
	ts := serve(t, history(t))
	list := page(t, ts.URL+"/tasks")
	for _, key := range []string{scriptKey, "acme/nightly", slashKey} {
		_, row := rowWith(t, list, "tasks", key)
		href := linkTo(t, row, key)
		doc := page(t, ts.URL+href)
		if h1 := text(findAll(doc, element("h1"))[0]); h1 != key {
			t.Errorf("link %s opens %q, want %q", href, h1, key)
		}
	}
	script := page(t, ts.URL+"/tasks/acme/"+url.PathEscape(`<script>alert("x")</script>`))
	if got := text(byID(t, script, "task-name")); got != `<script>alert("x")</script>` {
		t.Errorf("task name = %q", got)
	}
	if got := text(byID(t, script, "task-next-fire")); got != "2026-03-14T09:30:53Z in 4m" {
		t.Errorf("next fire = %q", got)
	}
	onlyStaticScripts(t, script)

	completed := page(t, ts.URL+"/tasks?status=completed")
	if len(findAll(completed, func(n *html.Node) bool { return attr(n, "id") == "tasks" })) != 0 {
		t.Error("completed tasks listed, but none has completed")
	}
}

func TestExecutionsAndAuditPages(t *testing.T) {
	ts := serve(t, history(t))
	execs, _ := rows(t, page(t, ts.URL+"/executions"), "executions")
	if len(execs) != 4 {
		t.Fatalf("executions = %q", execs)
	}
	// The newest first: the running report, then the latest fire.
	if execs[0][0] != "unknown task" || execs[0][3] != "RUNNING" || execs[1][3] != "FIRED" {
		t.Errorf("executions order = %q", execs)
	}
	audit, _ := rows(t, page(t, ts.URL+"/audit"), "audit")
	if len(audit) != 2 || audit[0][3] != "broken.csv" || audit[0][2] != record.ActionFileRejected {
		t.Errorf("audit = %q", audit)
	}
}

func TestErrors(t *testing.T) {
	ts := serve(t, history(t))
	tests := []struct {
		path   string
		status int
		ctype  string
	}{
		{"/files/" + strings.Repeat("9", 64), http.StatusNotFound, "text/html"},
		{"/tasks/acme/nobody", http.StatusNotFound, "text/html"},
		{"/no/such/page", http.StatusNotFound, "text/html"},
		{"/tasks?status=sleeping", http.StatusBadRequest, "text/html"},
		{"/api/nothing", http.StatusNotFound, "application/json"},
		{"/api/files/" + strings.Repeat("9", 64), http.StatusNotFound, "application/json"},
		{"/api/tasks?limit=lots", http.StatusBadRequest, "application/json"},
		{"/api/tasks?status=sleeping", http.StatusBadRequest, "application/json"},
		{"/static/console.css", http.StatusOK, "text/css"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := get(t, ts.URL+tt.path)
			if resp.StatusCode != tt.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.ctype) {
				t.Errorf("%s %s, want %d %s\n%s", resp.Status, resp.Header.Get("Content-Type"), tt.status, tt.ctype, body)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("content security policy = %q", csp)
			}
		})
	}
	resp, err := http.Post(ts.URL+"/files", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /files: %s, want 405", resp.Status)
	}
}

func TestAPI(t *testing.T) {
	ts := serve(t, history(t))
	decode := func(path string, v any) {
		t.Helper()
		resp, body := get(t, ts.URL+path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %s %s\n%s", path, resp.Status, resp.Header.Get("Content-Type"), body)
		}
		if err := json.Unmarshal([]byte(body), v); err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, body)
		}
	}
	var files []struct {
		ID, File, Status         string
		Rows, Accepted, Rejected int
		UpdatedAt                string
	}
	decode("/api/files", &files)
	if len(files) != 2 || files[0].File != "broken.csv" || files[0].Rejected != 3 || files[1].Accepted != 5 {
		t.Errorf("files = %+v", files)
	}
	if files[1].UpdatedAt != "2026-03-14T08:26:53Z" {
		t.Errorf("updatedAt = %q, want RFC 3339 UTC", files[1].UpdatedAt)
	}
	var tasks []struct {
		Key, Status, NextFire string
		Executions            int
	}
	decode("/api/tasks", &tasks)
	if len(tasks) != 3 || tasks[0].Key != scriptKey || tasks[0].NextFire != "2026-03-14T09:30:53Z" || tasks[1].Executions != 3 {
		t.Errorf("tasks = %+v", tasks)
	}
	decode("/api/tasks?file="+payrollID+"&limit=1", &tasks)
	if len(tasks) != 1 {
		t.Errorf("tasks of payroll.csv with limit 1 = %+v", tasks)
	}
	var task struct{ Key, Definition string }
	decode("/api/tasks/acme/reports%2Fmonthly", &task)
	if task.Key != slashKey || !strings.Contains(task.Definition, "0 6 1 * *") {
		t.Errorf("task = %+v", task)
	}
	var execs []struct{ FireID, Status, StatusMessage string }
	decode("/api/executions", &execs)
	if len(execs) != 4 {
		t.Errorf("executions = %+v", execs)
	}
	decode("/api/executions?task=acme/nightly", &execs)
	if len(execs) != 3 || execs[1].StatusMessage != "disk full" {
		t.Errorf("executions of nightly = %+v", execs)
	}
	var empty []any
	decode("/api/tasks?status=deleted", &empty)
	if empty == nil {
		t.Error("an empty list is null, want []")
	}
	var sum struct{ TasksActive, ExecutionsFailed int }
	decode("/api/summary", &sum)
	if sum.TasksActive != 3 || sum.ExecutionsFailed != 1 {
		t.Errorf("summary = %+v", sum)
	}
}

// TestNoticeShowsAbovePagesWhileSet: a warning from Notice shows, as
// text, on every page while it is set, and not once it is cleared.
func TestNoticeShowsAbovePagesWhileSet(t *testing.T) {
	f := history(t)
	var notice atomic.Value
	notice.Store("The console's database is being rebuilt from Kafka <b>now</b>")
	srv, err := web.New(web.Config{Clock: clockwork.NewFakeClockAt(f.now), Notice: func() string { return notice.Load().(string) }}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	for _, path := range []string{"/", "/files", "/tasks", "/executions", "/audit"} {
		doc := page(t, ts.URL+path)
		if got := text(byID(t, doc, "notice")); !strings.Contains(got, "being rebuilt from Kafka <b>now</b>") {
			t.Errorf("%s: notice %q", path, got)
		}
	}
	notice.Store("")
	doc := page(t, ts.URL+"/")
	if n := findAll(doc, func(n *html.Node) bool { return attr(n, "id") == "notice" }); len(n) != 0 {
		t.Error("the notice stays after it was cleared")
	}
}

// TestTaskListPages: a list longer than a page says how many match and
// where the page is, and links the next page; the last page links back.
func TestTaskListPages(t *testing.T) {
	ts := serve(t, history(t))
	doc := page(t, ts.URL+"/tasks?host=acme&limit=2")
	if cells, _ := rows(t, doc, "tasks"); len(cells) != 2 {
		t.Fatalf("listed %d tasks, want 2", len(cells))
	}
	pager := byID(t, doc, "pager")
	if got := text(pager); !strings.HasPrefix(got, "3 tasks: 1–2") {
		t.Errorf("pager = %q, want 3 tasks: 1–2", got)
	}
	next := linkTo(t, pager, "Next →")
	doc = page(t, ts.URL+next)
	if cells, _ := rows(t, doc, "tasks"); len(cells) != 1 {
		t.Fatalf("next page lists %d tasks, want 1", len(cells))
	}
	pager = byID(t, doc, "pager")
	if got := text(pager); !strings.HasPrefix(got, "3 tasks: 3–3") || strings.Contains(got, "Next") {
		t.Errorf("last page's pager = %q", got)
	}
	if first := linkTo(t, pager, "First"); first != "/tasks?host=acme&limit=2" {
		t.Errorf("first page = %q", first)
	}
	back := page(t, ts.URL+linkTo(t, pager, "← Previous"))
	if cells, _ := rows(t, back, "tasks"); len(cells) != 2 {
		t.Errorf("previous page lists %d tasks, want 2", len(cells))
	}
	all := page(t, ts.URL+"/tasks?limit=3")
	if got := text(byID(t, all, "pager")); got != "3 tasks" {
		t.Errorf("a list of every match says %q", got)
	}
}
