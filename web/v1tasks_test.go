package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web"
)

// seedTask is a task as seed 004's API answers it.
type seedTask struct {
	TaskID     string `json:"task_id"`
	ID         string `json:"id"`
	Source     string `json:"source"`
	Collection string `json:"collection"`
	Priority   int    `json:"priority"`
	CreatedAt  string `json:"created_at"`
	StartedAt  string `json:"started_at"`
	FinishedAt string `json:"finished_at"`
	Status     string `json:"status"`
}

type seedLogs struct {
	Logs []struct {
		Time, Message, Level string
	} `json:"logs"`
	Dropped int `json:"dropped"`
}

// call sends a request and decodes a JSON answer into v (when not nil),
// returning the status and the body.
func call(t *testing.T, method, url, body string, v any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, url, err, b)
		}
	}
	return resp.StatusCode, string(b)
}

// TestSeedTaskAPIRoundTrips: a caller of EventNative's task API runs a
// collection's synchronisation, finds it in the list, reads it while a
// worker runs it and logs, and reads its log back, in the seed's shapes.
func TestSeedTaskAPIRoundTrips(t *testing.T) {
	f := newFeed(t, now)
	for _, d := range []task.Definition{
		{Host: "shop", Name: "orders", Action: task.Insert, Topic: "jobs", Frequency: &task.Frequency{TimeUnit: task.Hours, Time: 1}},
		{Host: "shop", Name: "held", Action: task.Insert, Topic: "jobs", Frequency: &task.Frequency{TimeUnit: task.Hours, Time: 1}, Active: task.Ptr(false)},
	} {
		f.add(topics.State, d.Key(), record.State{Definition: d, Anchor: ms(now), NextFire: ms(now.Add(time.Hour)), UpdatedAt: ms(now)})
	}
	loop := &engineLoop{f: f, clock: newTickingClock(now)}
	srv, err := web.New(web.Config{Clock: loop.clock, Commander: loop}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	api := ts.URL + "/api/v1/tasks"

	var created seedTask
	if code, body := call(t, "POST", api+"?source=shop&collection=orders", "", &created); code != http.StatusCreated ||
		created.TaskID == "" || created.TaskID != created.ID || created.Status != "SCHEDULED" || created.Source != "shop" || created.Collection != "orders" {
		t.Fatalf("POST: %d %s", code, body)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", created.CreatedAt); err != nil || created.StartedAt != "" || created.FinishedAt != "" {
		t.Errorf("new task's times: created %q (%v), started %q, finished %q", created.CreatedAt, err, created.StartedAt, created.FinishedAt)
	}
	id := created.ID

	var list struct{ Tasks []seedTask }
	call(t, "GET", api+"?source=shop&collection=orders&status=scheduled&start=2026-03-14&end=2026-03-14", "", &list)
	if len(list.Tasks) != 1 || list.Tasks[0].ID != id || list.Tasks[0].Status != "SCHEDULED" {
		t.Fatalf("list of SCHEDULED: %+v", list.Tasks)
	}
	call(t, "GET", api+"?source=shop&status=RUNNING", "", &list)
	if len(list.Tasks) != 0 {
		t.Errorf("RUNNING before any worker said so: %+v", list.Tasks)
	}

	// A worker takes it and logs.
	started := now.Add(time.Second)
	f.add(topics.Status, id, record.Status{FireID: id, Status: "RUNNING", Worker: "w1", At: ms(started)})
	if code, body := call(t, "POST", ts.URL+"/api/executions/"+id+"/logs",
		`{"time":"2026-03-14T09:27:00.000Z","message":"fetching page 1","level":"info"}`, nil); code != http.StatusOK {
		t.Fatalf("POST one log line: %d %s", code, body)
	}
	if code, body := call(t, "POST", ts.URL+"/api/executions/"+id+"/logs",
		`{"worker":"w1","logs":[{"time":1773480430000,"message":"page 2 refused","level":"ERROR"},{"message":"retrying"}]}`, nil); code != http.StatusOK {
		t.Fatalf("POST two log lines: %d %s", code, body)
	}

	var again seedTask
	if code, body := call(t, "POST", api+"?source=shop&collection=orders", "", &again); code != http.StatusOK || again.TaskID != id || again.Status != "RUNNING" {
		t.Errorf("POST while it runs: %d %s; want 200 with the running one", code, body)
	}
	var got seedTask
	call(t, "GET", api+"/"+id, "", &got)
	if got.Status != "RUNNING" || got.StartedAt != started.Format("2006-01-02T15:04:05.000Z") || got.FinishedAt != "" {
		t.Errorf("GET while running: %+v", got)
	}
	var logs seedLogs
	call(t, "GET", api+"/"+id+"/logs", "", &logs)
	if len(logs.Logs) != 3 || logs.Logs[0].Message != "fetching page 1" || logs.Logs[0].Time != "2026-03-14T09:27:00.000Z" ||
		logs.Logs[1].Level != "error" || logs.Logs[1].Time != "2026-03-14T09:27:10.000Z" || logs.Logs[2].Level != "info" {
		t.Errorf("logs: %+v", logs)
	}
	call(t, "GET", api+"/"+id+"/logs?start=2026-03-14T09:27:05Z&end=2026-03-14T09:27:15Z", "", &logs)
	if len(logs.Logs) != 1 || logs.Logs[0].Message != "page 2 refused" {
		t.Errorf("logs between 09:27:05 and 09:27:15: %+v", logs)
	}

	// It ends.
	f.add(topics.Status, id, record.Status{FireID: id, Status: "SUCCESS", Worker: "w1", At: ms(now.Add(time.Minute))})
	call(t, "GET", api+"/"+id, "", &got)
	if got.Status != "SUCCESS" || got.FinishedAt != "2026-03-14T09:27:53.000Z" {
		t.Errorf("GET once done: %+v", got)
	}
	var next seedTask
	if code, body := call(t, "POST", api+"?source=shop&collection=orders", "", &next); code != http.StatusCreated || next.ID == id {
		t.Errorf("POST once done: %d %s; want 201 with a new one", code, body)
	}

	// What it refuses, and why.
	for _, c := range []struct {
		method, url, body string
		status            int
		says              string
	}{
		{"POST", api + "?source=shop&collection=nothing", "", 404, "not found"},
		{"POST", api + "?source=shop&collection=held", "", 409, "paused"},
		{"POST", api + "?source=shop", "", 400, "collection"},
		{"GET", api + "?collection=orders", "", 400, "source"},
		{"GET", api + "?status=DONE", "", 400, "SCHEDULED, RUNNING, FAILED or SUCCESS"},
		{"GET", api + "?start=yesterday", "", 400, "start"},
		{"GET", api + "/nothing", "", 404, "not found"},
		{"GET", api + "/nothing/logs", "", 404, "not found"},
		{"POST", ts.URL + "/api/executions/nothing/logs", `{"message":"x"}`, 404, "not found"},
		{"POST", ts.URL + "/api/executions/" + id + "/logs", `{"message":"x","level":"debug"}`, 400, "info or error"},
		{"POST", ts.URL + "/api/executions/" + id + "/logs", `{"level":"info"}`, 400, "message: required"},
		{"POST", ts.URL + "/api/executions/" + id + "/logs", `{"message":"x","time":"yesterday"}`, 400, "ISO 8601"},
		{"POST", ts.URL + "/api/executions/" + id + "/logs", `{"msg":"x"}`, 400, "unknown field"},
		{"POST", ts.URL + "/api/executions/" + id + "/logs", `[]`, 400, "no log entry"},
	} {
		code, body := call(t, c.method, c.url, c.body, nil)
		if code != c.status || !strings.Contains(body, c.says) {
			t.Errorf("%s %s %s: %d %s; want %d saying %q", c.method, c.url, c.body, code, body, c.status, c.says)
		}
	}
}

// TestExecutionPageShowsItsLog: an execution's page lists its log lines,
// and, past the cap, says how many of the oldest went.
func TestExecutionPageShowsItsLog(t *testing.T) {
	f := newFeed(t, now)
	f.add(topics.Executions, "fire-1", record.Execution{FireID: "fire-1", Host: "shop", Name: "orders", Topic: "jobs", FiredAt: ms(now), Timeout: 60_000})
	f.add(topics.Status, "fire-1", record.Status{FireID: "fire-1", Status: "RUNNING", Worker: "w1", At: ms(now),
		Logs: []record.LogLine{{At: ms(now), Level: "info", Message: "starting"}, {At: ms(now) + 1, Level: "error", Message: "disk <full>"}}})
	ts := serve(t, f)
	doc := page(t, ts.URL+"/executions/fire-1")
	cells, _ := rows(t, doc, "log")
	if len(cells) != 2 || cells[0][2] != "starting" || cells[1][1] != "error" || cells[1][2] != "disk <full>" || cells[1][3] != "w1" {
		t.Errorf("log rows: %q", cells)
	}
	if st := text(byID(t, doc, "execution-status")); st != "RUNNING" {
		t.Errorf("status: %q", st)
	}
	// A long log: the page shows its newest lines and says so.
	var many []record.LogLine
	for i := range 600 {
		many = append(many, record.LogLine{At: ms(now) + int64(i), Level: "info", Message: fmt.Sprintf("line %d", i)})
	}
	f.add(topics.Status, "fire-1", record.Status{FireID: "fire-1", At: ms(now), Logs: many})
	doc = page(t, ts.URL+"/executions/fire-1")
	cells, _ = rows(t, doc, "log")
	if len(cells) != 500 || cells[499][2] != "line 599" || !strings.HasPrefix(text(byID(t, doc, "log-newest")), "The newest 500 of 602 lines") {
		t.Errorf("a log of 602 lines: %d rows, the last %q", len(cells), cells[len(cells)-1])
	}
	if resp, _ := get(t, ts.URL+"/executions/nothing"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown execution's page: %s", resp.Status)
	}
	// The executions list leads to it.
	_, trs := rows(t, page(t, ts.URL+"/executions"), "executions")
	links := findAll(trs[0], func(n *html.Node) bool { return n.Type == html.ElementNode && attr(n, "href") == "/executions/fire-1" })
	if len(links) != 1 {
		t.Errorf("the list's row has %d links to the execution's page", len(links))
	}
}
