package web_test

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/internal/store/storetest"
	"github.com/jobdrop/jobdrop/web"
)

var (
	benchTasks      = flag.Int("console-bench-tasks", 50_000, "tasks of BenchmarkConsolePages")
	benchExecutions = flag.Int("console-bench-executions", 200_000, "executions of BenchmarkConsolePages")
)

// fillNight opens a store at path filled with a Night of this size.
func fillNight(tb testing.TB, path string, tasks, executions int, now time.Time) *store.Store {
	tb.Helper()
	st, err := store.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	if err := (storetest.Night{Tasks: tasks, Executions: executions, Now: now}).Fill(context.Background(), st); err != nil {
		tb.Fatal(err)
	}
	return st
}

// BenchmarkConsolePages times each page and list API of the console, from
// the request to the last byte of the answer, over 50,000 tasks and
// 200,000 executions (-console-bench-tasks, -console-bench-executions).
// The deep pages are the last ones of their lists, reached by cursor. The
// store is filled through its apply path (storetest.Night).
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
