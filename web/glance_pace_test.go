package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/pace"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web"
)

// TestGlanceGivesWayToLateFires: the dashboard's timeline, which reads
// every task, waits between two tasks while the node's scheduler fires
// late; a scheduler late all along holds it back at most Pacing.MaxWait.
func TestGlanceGivesWayToLateFires(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	f := newFeed(t, now)
	for i := range 3 {
		d := task.Definition{Host: "acme", Name: fmt.Sprintf("every-minute-%d", i), Topic: "jobs", Action: task.Insert, Cron: "* * * * *"}
		if err := d.Validate(); err != nil {
			t.Fatal(err)
		}
		f.add(topics.State, d.Key(), record.State{Definition: d, Anchor: now.UnixMilli(), NextFire: now.Add(time.Minute).UnixMilli(), UpdatedAt: now.UnixMilli()})
	}
	for _, tc := range []struct {
		name    string
		maxWait time.Duration
		onTime  bool // the scheduler is on time again once the timeline waits
	}{
		{name: "computed once the scheduler is on time", maxWait: time.Hour, onTime: true},
		{name: "late all along: computed after max wait", maxWait: 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// On time for the first task read, late from the second.
			var looks, late atomic.Int64
			late.Store(int64(time.Hour))
			waiting := make(chan struct{})
			srv, err := web.New(web.Config{Clock: clockwork.NewFakeClockAt(now),
				Late: func() time.Duration {
					n := looks.Add(1)
					if n == 3 { // asked again once late: waiting
						close(waiting)
					}
					if n < 2 {
						return 0
					}
					return time.Duration(late.Load())
				},
				Pacing: pace.Pacing{RecorderLateness: 20 * time.Millisecond, MaxWait: tc.maxWait}}, f.st, nil)
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv.Handler())
			t.Cleanup(ts.Close)
			started := time.Now()
			done := make(chan error, 1)
			go func() { done <- srv.Refresh(context.Background()) }()
			var waited, onTime time.Time
			var computedIn time.Duration
			if tc.onTime {
				select {
				case <-waiting:
				case <-time.After(10 * time.Second):
					t.Fatal("the timeline never looked how late the scheduler fires")
				}
				waited = time.Now()
				if resp, body := get(t, ts.URL+"/api/timeline"); resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("computed while the scheduler fires late: /api/timeline answers %s: %s", resp.Status, body)
				}
				onTime = time.Now()
				late.Store(0)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				computedIn = time.Since(started)
			case <-time.After(10 * time.Second):
				t.Fatal("the timeline was not computed within 10s")
			}
			resp, body := get(t, ts.URL+"/api/timeline")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("once computed, /api/timeline answers %s: %s", resp.Status, body)
			}
			// What it says it took is its work, not its waits.
			var a struct {
				TookMs int64 `json:"tookMs"`
			}
			if err := json.Unmarshal([]byte(body), &a); err != nil {
				t.Fatal(err)
			}
			// It gave way until on time, or max wait: what it says it
			// took leaves that out.
			gaveWay := onTime.Sub(waited)
			if !tc.onTime {
				gaveWay = tc.maxWait
			}
			if took := time.Duration(a.TookMs) * time.Millisecond; took > computedIn-gaveWay {
				t.Errorf("the timeline says it took %s of the %s it was computed in, counting the %s or more it gave way", took, computedIn, gaveWay)
			}
			switch took := time.Since(started); {
			case !tc.onTime && took < tc.maxWait:
				t.Errorf("computed after %s while the scheduler fires late all along, want %s (max wait)", took, tc.maxWait)
			case !tc.onTime && took > tc.maxWait+5*time.Second:
				t.Errorf("computed after %s while the scheduler fires late all along: max wait %s is not a bound", took, tc.maxWait)
			}
		})
	}
}
