package web_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/internal/store/storetest"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web"
)

var (
	glanceTasks      = flag.Int("glance-bench-tasks", 50_000, "tasks of BenchmarkGlance")
	glanceExecutions = flag.Int("glance-bench-executions", 200_000, "executions of BenchmarkGlance")
)

// mixedSchedule is task i's schedule in BenchmarkGlance: a quarter fire
// every minute (unix cron), a quarter hourly (cron, at minute i % 60), a
// quarter daily (cron, at a time of day of their own) and a quarter at
// fixed intervals of 5 to 60 seconds, each from a start of its own.
func mixedSchedule(i int, now time.Time) task.Definition {
	d := task.Definition{Host: storetest.Host(i % 50), Name: fmt.Sprintf("mixed-%06d", i), Action: task.Insert, Topic: fmt.Sprintf("topic-%d", i%7)}
	switch i % 4 {
	case 0:
		d.Cron = "* * * * *"
	case 1:
		d.Cron = fmt.Sprintf("%d * * * *", i%60)
	case 2:
		d.Cron = fmt.Sprintf("%d %d * * *", i%60, i/4%24)
	default:
		d.Frequency = &task.Frequency{TimeUnit: task.Seconds, Time: int32(5 + i%56)}
		d.Start = task.Ptr(now.Add(-time.Duration(i%3600) * time.Second).UnixMilli())
	}
	return d
}

// BenchmarkGlance times what the dashboard shows at a glance over 50,000
// tasks of mixed schedules (see mixedSchedule) and 200,000 executions of
// the last ten hours (-glance-bench-tasks, -glance-bench-executions):
// the background computation (Refresh: every task's fires of the next 24
// hours counted minute by minute, and the charts of the last six hours),
// then the dashboard and the timeline's API, which serve what it
// computed.
func BenchmarkGlance(b *testing.B) {
	now := time.Now().UTC().Truncate(time.Second)
	st, err := store.Open(filepath.Join(b.TempDir(), "jobdrop.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	filled := time.Now()
	if err := (storetest.Night{Executions: *glanceExecutions, Now: now, Lean: true}).Fill(ctx, st); err != nil {
		b.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range *glanceTasks {
		d := mixedSchedule(i, now)
		accepted := now.Add(-time.Hour).UnixMilli()
		anchor := d.Anchor(accepted)
		next, _ := d.NextFire(anchor, max(d.StartAfter(anchor, accepted), now.UnixMilli()-1))
		v, err := json.Marshal(record.State{Definition: d, Anchor: anchor, NextFire: next, UpdatedAt: accepted})
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: topics.State, Key: []byte(d.Key()), Value: v, Offset: int64(i)})
		if len(recs) == 10_000 || i == *glanceTasks-1 {
			if _, err := st.Apply(ctx, topics, recs); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	b.Logf("filled %d tasks and %d executions in %s", *glanceTasks, *glanceExecutions, time.Since(filled).Round(time.Second))
	newServer := func() *web.Server {
		srv, err := web.New(web.Config{Clock: clockwork.NewFakeClockAt(now)}, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		return srv
	}
	// The first computation steps through every cron schedule's fires of
	// the next 24 hours.
	b.Run("refresh-first", func(b *testing.B) {
		for b.Loop() {
			if err := newServer().Refresh(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/refresh")
	})
	// The next ones, as Run makes them: the chains of the cron schedules
	// are kept (here the clock stands still, as the tasks' next fires in
	// the store do).
	srv := newServer()
	if err := srv.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("refresh-next", func(b *testing.B) {
		for b.Loop() {
			if err := srv.Refresh(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/refresh")
		// Of which the timeline (tasks read and fires counted), as the
		// last one says; the rest is the charts.
		var a struct {
			TookMs float64 `json:"tookMs"`
			Tasks  int     `json:"tasks"`
			Fires  int     `json:"fires"`
		}
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/api/timeline", nil))
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || a.Tasks != *glanceTasks {
			b.Fatalf("/api/timeline: %v, %d tasks firing of %d: %s", err, a.Tasks, *glanceTasks, w.Body.String()[:min(w.Body.Len(), 300)])
		}
		b.ReportMetric(a.TookMs, "ms/timeline")
		b.ReportMetric(float64(a.Fires), "fires")
	})
	get := func(path string) {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, w.Code, w.Body.String())
		}
	}
	for _, p := range []struct{ name, path string }{
		{"dashboard", "/"},
		{"dashboard-by-topic", "/?by=topic"},
		{"api-timeline", "/api/timeline"},
		{"api-activity", "/api/activity"},
	} {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				get(p.path)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}
