package web_test

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/internal/store/storetest"
	"github.com/jobdrop/jobdrop/web"
)

var (
	benchTasks      = flag.Int("console-bench-tasks", 50_000, "tasks of BenchmarkConsolePages")
	benchExecutions = flag.Int("console-bench-executions", 200_000, "executions of BenchmarkConsolePages")
)

// benchNight is the store every run of BenchmarkConsolePages in this
// process reads (-count=5 fills it once): filling 50,000 tasks and
// 200,000 executions takes about half a minute. TestMain removes it.
var benchNight struct {
	once sync.Once
	dir  string
	st   *store.Store
	now  time.Time
	err  error
}

// nightStore fills benchNight once and returns it.
func nightStore(b *testing.B) (*store.Store, time.Time) {
	b.Helper()
	benchNight.once.Do(func() {
		benchNight.now = time.Now().UTC().Truncate(time.Second)
		start := time.Now()
		if benchNight.dir, benchNight.err = os.MkdirTemp("", "jobdrop-console-bench-"); benchNight.err != nil {
			return
		}
		if benchNight.st, benchNight.err = store.Open(filepath.Join(benchNight.dir, "jobdrop.db")); benchNight.err != nil {
			return
		}
		benchNight.err = storetest.Night{Tasks: *benchTasks, Executions: *benchExecutions, Now: benchNight.now}.Fill(context.Background(), benchNight.st)
		b.Logf("filled %d tasks and %d executions in %s", *benchTasks, *benchExecutions, time.Since(start).Round(time.Millisecond))
	})
	if benchNight.err != nil {
		b.Fatal(benchNight.err)
	}
	return benchNight.st, benchNight.now
}

// closeBenchNight closes and removes the store of the benchmarks, if any
// was filled.
func closeBenchNight() {
	if benchNight.st != nil {
		benchNight.st.Close()
	}
	if benchNight.dir != "" {
		os.RemoveAll(benchNight.dir)
	}
}

// errEnough ends an export once its first bytes are in.
var errEnough = errors.New("enough bytes")

// firstBytes is a response writer that takes the first write of an
// answer's body, then hangs up, as a client that closes the connection
// would: the request's context ends and every write after fails.
type firstBytes struct {
	header http.Header
	code   int
	n      int
	hangUp context.CancelFunc
}

func (w *firstBytes) Header() http.Header { return w.header }

func (w *firstBytes) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *firstBytes) Write(p []byte) (int, error) {
	if w.n > 0 {
		return 0, errEnough
	}
	w.WriteHeader(http.StatusOK)
	w.n = len(p)
	w.hangUp()
	return len(p), nil
}

// BenchmarkConsolePages times each page and list API of the console, from
// the request to the last byte of the answer, over 50,000 tasks and
// 200,000 executions (-console-bench-tasks, -console-bench-executions):
// what a person waits for after a click. Deep pages are reached by cursor
// as a person or a client paging through would. Exports are timed to
// their first bytes (the first write of the body: what a browser shows as
// the download starting), as they stream. The store is filled once per
// process through its apply path (storetest.Night) and is the same for
// every page: pages that change nothing.
func BenchmarkConsolePages(b *testing.B) {
	st, now := nightStore(b)
	srv, err := web.New(web.Config{Clock: clockwork.NewFakeClockAt(now)}, st, nil)
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
	head := func(path string) int {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1"+path, nil)
		w := &firstBytes{header: http.Header{}, hangUp: cancel}
		h.ServeHTTP(w, req)
		if w.code != http.StatusOK {
			b.Fatalf("GET %s: %d", path, w.code)
		}
		return w.n
	}
	nextLink := regexp.MustCompile(`<([^>]+)>; rel="next"`)
	// pageOf follows a list API's next pages from path, n times or to
	// its end (n < 0), and says where the page reached is.
	pageOf := func(path string, n int) string {
		for ; n != 0; n-- {
			m := nextLink.FindStringSubmatch(get(path).Header().Get("Link"))
			if m == nil {
				break
			}
			path = m[1]
		}
		return path
	}
	// asPage is the console page of a list API's URL.
	asPage := func(api, page string) string { return page + api[len("/api"+page):] }

	hourAgo := url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339))
	file := storetest.Batch(7)
	pages := []struct{ name, path string }{
		{"dashboard", "/"},
		{"files", "/files"},
		{"files-by-name", "/files?name=host-07"},
		{"file", "/files/" + file},
		{"tasks", "/tasks"},
		{"tasks-paused", "/tasks?status=paused"},
		{"tasks-of-a-host", "/tasks?host=host-07"},
		{"tasks-by-name", "/tasks?name=job-0421"},
		{"tasks-by-common-name", "/tasks?name=job"},
		{"tasks-by-absent-name", "/tasks?name=no-such-job"},
		{"tasks-of-a-topic", "/tasks?topic=topic-3"},
		{"tasks-of-a-file", "/tasks?file=" + file},
		{"tasks-due-in-ten-minutes", "/tasks?from=%2B10m&to=%2B20m"},
		{"tasks-held-back", "/tasks?fault=any"},
		{"tasks-paused-of-a-host-by-key", "/tasks?status=paused&host=host-07&sort=key"},
		{"tasks-page-100", asPage(pageOf("/api/tasks", 99), "/tasks")},
		{"tasks-last-page", asPage(pageOf("/api/tasks?limit=1000", -1), "/tasks")},
		{"task", "/tasks/host-07/job-000007"},
		{"executions", "/executions"},
		{"executions-failed", "/executions?status=FAILED"},
		{"executions-failed-host-hour", "/executions?status=FAILED&host=host-07&from=" + hourAgo},
		{"executions-failed-host-last-hour", "/executions?status=FAILED&host=host-07&from=-1h"},
		{"executions-failed-host-hour-last-page", asPage(pageOf("/api/executions?status=FAILED&host=host-07&from="+hourAgo+"&limit=5", -1), "/executions")},
		{"executions-overdue", "/executions?status=OVERDUE"},
		{"executions-by-name", "/executions?name=job-0421"},
		{"executions-by-common-name", "/executions?name=job"},
		{"executions-by-absent-name", "/executions?name=no-such-job"},
		{"executions-failed-by-common-name", "/executions?status=FAILED&name=job"},
		{"executions-of-a-task", "/executions?task=host-07%2Fjob-000007"},
		{"executions-of-a-topic", "/executions?topic=topic-3"},
		{"executions-of-a-file", "/executions?file=" + file},
		{"executions-oldest", "/executions?sort=oldest"},
		{"executions-before-nine-hours-ago", "/executions?to=-9h"},
		{"executions-page-100", asPage(pageOf("/api/executions", 99), "/executions")},
		{"executions-last-page", asPage(pageOf("/api/executions?limit=1000", -1), "/executions")},
		{"audit", "/audit"},
		{"audit-by-action", "/audit?action=file.injected"},
		{"audit-by-object", "/audit?object=job-0421"},
		{"audit-by-absent-object", "/audit?object=no-such-job"},
		{"audit-of-an-actor-oldest", "/audit?actor=watcher&sort=oldest"},
		{"audit-page-100", asPage(pageOf("/api/audit", 99), "/audit")},
		{"audit-last-page", asPage(pageOf("/api/audit?limit=1000", -1), "/audit")},
		{"api-summary", "/api/summary"},
		{"api-activity", "/api/activity"},
		{"api-tasks", "/api/tasks"},
		{"api-tasks-1000", "/api/tasks?limit=1000"},
		{"api-tasks-1000-page-2", pageOf("/api/tasks?limit=1000", 1)},
		{"api-executions", "/api/executions"},
		{"api-executions-1000", "/api/executions?limit=1000"},
		{"api-executions-failed", "/api/executions?status=FAILED&limit=1000"},
		{"api-executions-1000-page-2", pageOf("/api/executions?limit=1000", 1)},
		{"api-files", "/api/files"},
		{"api-files-1000", "/api/files?limit=1000"},
		{"api-audit", "/api/audit"},
		{"api-audit-1000", "/api/audit?limit=1000"},
		{"api-audit-1000-page-2", pageOf("/api/audit?limit=1000", 1)},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				get(p.path)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
	for _, p := range []struct{ name, path string }{
		{"export-executions-csv", "/executions/export.csv"},
		{"export-executions-xlsx", "/executions/export.xlsx"},
		{"export-tasks-csv", "/tasks/export.csv"},
		{"export-tasks-xlsx", "/tasks/export.xlsx"},
		{"export-audit-csv", "/audit/export.csv"},
		{"export-audit-xlsx", "/audit/export.xlsx"},
	} {
		b.Run(p.name+"-first-bytes", func(b *testing.B) {
			for b.Loop() {
				if head(p.path) == 0 {
					b.Fatalf("GET %s: no body", p.path)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}
