package watcher

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"
)

func TestDrainRate(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	// every lists n times, step apart, the last at now.
	every := func(n int, step time.Duration) []time.Time {
		var out []time.Time
		for i := n - 1; i >= 0; i-- {
			out = append(out, now.Add(-time.Duration(i)*step))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		since time.Time
		taken []time.Time
		want  float64 // files a second
	}{
		{name: "nothing taken", since: ago(time.Hour), want: 0},
		{name: "five in the ten seconds since it set to work", since: ago(10 * time.Second),
			taken: every(5, 2*time.Second), want: 0.5},
		{name: "over the last minute only", since: ago(time.Hour),
			taken: append([]time.Time{ago(90 * time.Second)}, every(6, 5*time.Second)...), want: 0.1},
		{name: "taken before it last set to work are not counted", since: ago(4 * time.Second),
			taken: append(every(3, 10*time.Second)[:2], ago(2*time.Second), now), want: 0.5},
		{name: "more in the minute than remembered: the last ones", since: ago(time.Hour),
			taken: every(200, 100*time.Millisecond), want: 10},
		{name: "none taken lately", since: ago(time.Hour), taken: []time.Time{ago(2 * time.Minute)}, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d drainRate
			d.started(tc.since)
			for _, at := range tc.taken {
				d.took(at)
			}
			if got := d.rate(now); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("rate %v files/s, want %v", got, tc.want)
			}
		})
	}
}

func TestLeftEstimatesTheQueue(t *testing.T) {
	for _, tc := range []struct {
		s    FolderStatus
		want time.Duration
		ok   bool
	}{
		{FolderStatus{}, 0, true},
		{FolderStatus{Queued: 29, File: "a.csv", Rate: 0.5}, time.Minute, true},
		{FolderStatus{Queued: 10, Rate: 2}, 5 * time.Second, true},
		{FolderStatus{Queued: 10}, 0, false},
	} {
		if got, ok := tc.s.Left(); got != tc.want || ok != tc.ok {
			t.Errorf("%+v: Left %s %v, want %s %v", tc.s, got, ok, tc.want, tc.ok)
		}
	}
}

// TestStatusSaysHowFastTheQueueDrains drops ten files into a folder whose
// handler takes them one at a time when told: the status counts the files
// still queued, and once some were taken, how fast they go and how long
// the rest will take at that pace.
func TestStatusSaysHowFastTheQueueDrains(t *testing.T) {
	dir := t.TempDir()
	next := make(chan struct{})
	h := &recorder{react: func(ctx context.Context, f File) error {
		select {
		case <-next:
		case <-ctx.Done():
		}
		return nil
	}}
	w, err := New(fastConfig(dir), h, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	run(t, w)
	for i := range 10 {
		write(t, filepath.Join(dir, fmt.Sprintf("f%02d.csv", i)), "x\n")
	}
	status := func() FolderStatus { return w.Status()[0] }
	waitFor(t, "nine files queued behind the first", func() bool { s := status(); return s.Queued == 9 && s.File != "" })
	if s := status(); s.Rate != 0 {
		t.Errorf("rate %v before any file was taken, want 0", s.Rate)
	} else if _, ok := s.Left(); ok {
		t.Error("an estimate before any file was taken")
	}
	for range 4 {
		next <- struct{}{}
	}
	waitFor(t, "four files taken", func() bool { s := status(); return s.Queued == 5 && s.File != "" })
	s := status()
	left, ok := s.Left()
	if s.Rate <= 0 || !ok || left <= 0 {
		t.Fatalf("after four files: rate %v files/s, left %s %v; want a rate and an estimate", s.Rate, left, ok)
	}
	if want := time.Duration(6 / s.Rate * float64(time.Second)); left != want {
		t.Errorf("left %s, want the six files at %v files/s: %s", left, s.Rate, want)
	}
	close(next)
	waitFor(t, "the queue drained", func() bool { s := status(); return s.Queued == 0 && s.File == "" })
	if left, ok := status().Left(); left != 0 || !ok {
		t.Errorf("left %s %v with nothing queued, want 0", left, ok)
	}
}
