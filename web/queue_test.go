package web_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/net/html"

	"github.com/jobdrop/jobdrop/web"
)

// TestDashboardShowsQueuesDraining: a folder with files waiting shows how
// many, how fast they go and about how long the rest will take; one whose
// pace is not known yet says so; an idle folder shows no queue.
func TestDashboardShowsQueuesDraining(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	f := newFeed(t, now)
	srv, err := web.New(web.Config{
		Clock:   clockwork.NewFakeClockAt(now),
		Folders: []string{"/srv/estate", "/srv/export", "/srv/quiet", "/srv/fresh", "/srv/last/", "/srv/fast"},
		Queues: func() []web.FolderQueue {
			return []web.FolderQueue{
				{Dir: "/srv/estate", Queued: 480, PerMinute: 95.4, Left: 5*time.Minute + 2*time.Second},
				{Dir: "/srv/export", Queued: 393, PerMinute: 133, Left: 2*time.Minute + 57*time.Second},
				{Dir: "/srv/quiet"},
				{Dir: "/srv/fresh", Queued: 12},
				{Dir: "/srv/last", Queued: 1, PerMinute: 2.5, Left: 48*time.Second + 600*time.Millisecond},
				{Dir: "/srv/fast", Queued: 3, PerMinute: 600, Left: 400 * time.Millisecond},
			}
		},
	}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	got := map[string]string{}
	for _, p := range findAll(page(t, ts.URL+"/"), func(n *html.Node) bool { return attr(n, "class") == "queue" }) {
		got[attr(p, "data-folder")] = text(p)
	}
	want := map[string]string{
		"/srv/estate": "480 files queued, 95 handled a minute: about 5m left",
		"/srv/export": "393 files queued, 133 handled a minute: about 3m left",
		"/srv/fresh":  "12 files queued: estimating the time left",
		"/srv/last/":  "1 file queued, 2.5 handled a minute: about 49s left",
		"/srv/fast":   "3 files queued, 600 handled a minute: less than a second left",
	}
	if len(got) != len(want) {
		t.Errorf("queues shown %q, want %q", got, want)
	}
	for dir, line := range want {
		if got[dir] != line {
			t.Errorf("%s: dashboard says %q, want %q", dir, got[dir], line)
		}
	}
}
