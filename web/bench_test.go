package web_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web"
)

var (
	benchTasks      = flag.Int("console-bench-tasks", 50_000, "tasks of BenchmarkConsolePages")
	benchExecutions = flag.Int("console-bench-executions", 200_000, "executions of BenchmarkConsolePages")
)

// fillNight fills the store at path, through its apply path, with a
// schedule after a night of work: tasks (a tenth paused) of 50 hosts,
// each from one of 50 files, and executions over the last hours, a tenth
// of them failed, a few of the last ones overdue; an audit event for
// each task created and each file injected.
func fillNight(tb testing.TB, path string, tasks, executions int, now time.Time) *store.Store {
	tb.Helper()
	st, err := store.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	next := map[string]int64{}
	var recs []*kgo.Record
	flush := func(force bool) {
		if len(recs) < 20_000 && !force {
			return
		}
		if _, err := st.Apply(context.Background(), topics, recs); err != nil {
			tb.Fatal(err)
		}
		recs = recs[:0]
	}
	add := func(topic, key string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: b, Offset: next[topic], Timestamp: now})
		next[topic]++
		flush(false)
	}
	const hosts = 50
	batch := func(h int) string { return fmt.Sprintf("%064x", h+1) }
	for h := range hosts {
		file := fmt.Sprintf("host-%02d.csv", h)
		add(topics.Audit, "watcher", record.Audit{ID: "file-" + file, At: now.Add(-12 * time.Hour).UnixMilli(), Actor: "watcher",
			Action: record.ActionFileInjected, Object: file, Outcome: record.OutcomeOK,
			Batch: &record.Batch{ID: batch(h), File: file, Folder: "inbox", Rows: tasks / hosts}})
	}
	for i := range tasks {
		h := i % hosts
		d := task.Definition{Host: fmt.Sprintf("host-%02d", h), Name: fmt.Sprintf("job-%06d", i), Action: task.Insert,
			Topic: fmt.Sprintf("topic-%d", i%7), Frequency: &task.Frequency{TimeUnit: task.Hours, Time: int32(1 + i%6)}}
		if i%10 == 9 {
			d.Active = task.Ptr(false)
		}
		nextFire := now.Add(time.Duration(i%3600) * time.Second)
		add(topics.State, d.Key(), record.State{Definition: d, Anchor: now.Add(-12 * time.Hour).UnixMilli(), NextFire: nextFire.UnixMilli(),
			FireCount: 4, Source: record.Source{Batch: batch(h), File: fmt.Sprintf("host-%02d.csv", h), Row: i/hosts + 1}, UpdatedAt: now.UnixMilli()})
		add(topics.Audit, "watcher", record.Audit{ID: "created-" + d.Key(), At: now.Add(-12 * time.Hour).UnixMilli(), Actor: "watcher",
			Action: record.ActionTaskCreated, Object: d.Key(), Outcome: record.OutcomeOK})
	}
	// The executions spread over the last ten hours, newest last.
	span := 10 * time.Hour
	for i := range executions {
		t := i % tasks
		at := now.Add(-span + time.Duration(i)*span/time.Duration(executions))
		id := fmt.Sprintf("x%08d", i)
		ex := record.Execution{FireID: id, Host: fmt.Sprintf("host-%02d", t%hosts), Name: fmt.Sprintf("job-%06d", t),
			Topic: fmt.Sprintf("topic-%d", t%7), ScheduledAt: at.UnixMilli(), FiredAt: at.UnixMilli() + 3, Batch: batch(t % hosts)}
		if i >= executions-50 {
			ex.Timeout = 1000 // the last ones are overdue
		}
		add(topics.Executions, id, ex)
		switch {
		case i >= executions-100:
			// still running, or no report yet
		case i%10 == 3:
			add(topics.Status, id, record.Status{FireID: id, Status: record.StatusFailed, Message: "exit status 1", At: at.UnixMilli() + 900})
		default:
			add(topics.Status, id, record.Status{FireID: id, Status: record.StatusSuccess, At: at.UnixMilli() + 900})
		}
	}
	flush(true)
	return st
}

// BenchmarkConsolePages times each page and list API of the console, from
// the request to the last byte of the answer, over 50,000 tasks and
// 200,000 executions (-console-bench-tasks, -console-bench-executions).
// The deep pages are the last ones of their lists, reached by cursor.
func BenchmarkConsolePages(b *testing.B) {
	now := time.Now().UTC().Truncate(time.Second)
	start := time.Now()
	st := fillNight(b, filepath.Join(b.TempDir(), "jobdrop.db"), *benchTasks, *benchExecutions, now)
	b.Logf("filled %d tasks and %d executions in %s", *benchTasks, *benchExecutions, time.Since(start).Round(time.Millisecond))
	srv, err := web.New(web.Config{Now: func() time.Time { return now }}, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	get := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, w.Code, w.Body.String())
		}
		return w
	}
	// last follows a list's next pages to its end.
	last := func(path string) string {
		for {
			w := get(path)
			m := regexp.MustCompile(`<([^>]+)>; rel="next"`).FindStringSubmatch(w.Header().Get("Link"))
			if m == nil {
				return path
			}
			path = m[1]
		}
	}
	hourAgo := url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339))
	pages := []struct{ name, path string }{
		{"dashboard", "/"},
		{"files", "/files"},
		{"tasks", "/tasks"},
		{"tasks-paused", "/tasks?status=paused"},
		{"tasks-of-a-host", "/tasks?host=host-07"},
		{"tasks-by-name", "/tasks?name=job-0421"},
		{"tasks-by-common-name", "/tasks?name=job"},
		{"tasks-last-page", ""},
		{"task", "/tasks/host-07/job-000007"},
		{"executions", "/executions"},
		{"executions-failed", "/executions?status=FAILED"},
		{"executions-failed-host-hour", "/executions?status=FAILED&host=host-07&from=" + hourAgo},
		{"executions-failed-host-hour-last-page", ""},
		{"executions-overdue", "/executions?status=OVERDUE"},
		{"executions-by-name", "/executions?name=job-0421"},
		{"executions-by-common-name", "/executions?name=job"},
		{"executions-last-page", ""},
		{"audit", "/audit"},
		{"audit-last-page", ""},
		{"api-executions-failed", "/api/executions?status=FAILED&limit=1000"},
		{"api-tasks", "/api/tasks?limit=1000"},
	}
	for i := range pages {
		switch pages[i].name {
		case "tasks-last-page":
			pages[i].path = last("/api/tasks?limit=1000")
			pages[i].path = "/tasks" + pages[i].path[len("/api/tasks"):]
		case "executions-failed-host-hour-last-page":
			pages[i].path = last("/api/executions?status=FAILED&host=host-07&from=" + hourAgo + "&limit=5")
			pages[i].path = "/executions" + pages[i].path[len("/api/executions"):]
		case "executions-last-page":
			pages[i].path = last("/api/executions?limit=1000")
			pages[i].path = "/executions" + pages[i].path[len("/api/executions"):]
		case "audit-last-page":
			pages[i].path = last("/api/audit?limit=1000")
			pages[i].path = "/audit" + pages[i].path[len("/api/audit"):]
		}
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				get(p.path)
			}
		})
	}
}
