package web

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/web/api"
	"github.com/jobdrop/jobdrop/web/forecast"
)

// What the dashboard shows at a glance, below what needs attention: the
// timeline of the next 24 hours of fires and the charts of the last
// hours' fires, failures and lateness. Both read every task or every
// execution of hours, too much for each page: Run computes them in the
// background, and pages show the last computed, saying when that was.

const (
	// chartSpan and chartStep are the span of the charts of the last
	// hours and the length of each of their bars.
	chartSpan = 6 * time.Hour
	chartStep = 5 * time.Minute
	// glanceRest is the least time between two computations after a
	// change of the data; glanceShare makes it longer when they take
	// long, so that they take at most 1/glanceShare of a core.
	glanceRest  = 10 * time.Second
	glanceShare = 20
)

// glance holds the last timeline and charts computed. Its zero value
// holds none.
type glance struct {
	// refreshing lets one computation run at a time; the forecaster
	// keeps what one read for the next, under it.
	refreshing sync.Mutex
	forecaster forecast.Forecaster
	mu         sync.Mutex
	timeline   *forecast.Timeline
	chart      *recentChart
	// updated is closed at the next update.
	updated chan struct{}
}

// recentChart is the charts of the last hours, as computed at Computed.
type recentChart struct {
	storetype.ActivityChart
	Computed time.Time
	Took     time.Duration
}

// last returns the timeline and charts last computed; nil before the
// first computation.
func (g *glance) last() (*forecast.Timeline, *recentChart) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.timeline, g.chart
}

// next returns a channel closed at the next update.
func (g *glance) next() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.updated == nil {
		g.updated = make(chan struct{})
	}
	return g.updated
}

func (g *glance) set(t *forecast.Timeline, c *recentChart) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.timeline, g.chart = t, c
	if g.updated != nil {
		close(g.updated)
		g.updated = nil
	}
}

// Refresh computes now, from the source, what the dashboard shows at a
// glance: the fires of the next 24 hours, minute by minute, and the
// charts of the last six hours. Pages show it from then on; open pages
// refresh. Run calls it whenever it is due. It gives way to the node's
// scheduler (see Config.Late) between two tasks it reads from the
// database or from their JSON, and between its steps, for at most
// Pacing.MaxWait (and Ahead) in all: over 100,000 new tasks it takes a core for about
// half a second, and a burst due meanwhile waited for it.
func (s *Server) Refresh(ctx context.Context) error {
	s.glance.refreshing.Lock()
	defer s.glance.refreshing.Unlock()
	pauses := s.cfg.Pacing.Background(s.cfg.Late).Within(ctx)
	started := time.Now()
	now := s.now()
	var tasks []storetype.TaskSchedule
	if err := s.src.TaskSchedules(ctx, now.Truncate(time.Minute).Add(forecast.Minutes*time.Minute), func(t storetype.TaskSchedule) error {
		pauses.Pause()
		tasks = append(tasks, t)
		return nil
	}); err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	t := s.glance.forecaster.Compute(now, tasks, pauses.Pause)
	t.Took = time.Since(started) - pauses.Waited()

	pauses.Pause()
	started = time.Now()
	to := now.Truncate(chartStep).Add(chartStep)
	chart, err := s.src.ActivityChart(ctx, to.Add(-chartSpan), to, chartStep)
	if err != nil {
		return fmt.Errorf("activity chart: %w", err)
	}
	s.glance.set(t, &recentChart{ActivityChart: chart, Computed: now, Took: time.Since(started)})
	return nil
}

// Run keeps what the dashboard shows at a glance fresh (see Refresh)
// until ctx ends: it computes it at once, then at the start of every
// minute, and after a change of the data once glanceRest has passed (or
// glanceShare times as long as the last computation took), each time
// after the scheduler's fires due (see Config.Late). It logs what fails
// and tries again at the next turn.
func (s *Server) Run(ctx context.Context) error {
	for {
		var changed <-chan struct{}
		if s.cfg.Changes != nil {
			changed = s.cfg.Changes()
		}
		s.cfg.Pacing.Background(s.cfg.Late).Wait(ctx)
		if err := s.Refresh(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Error("compute the dashboard's timeline and charts", "err", err)
		}
		rest := glanceRest
		if t, c := s.glance.last(); t != nil && c != nil {
			// What the computation took, not what it gave way.
			rest = max(rest, glanceShare*(t.Took+c.Took))
		}
		now := s.now()
		if !s.wait(ctx, now.Truncate(time.Minute).Add(time.Minute).Sub(now), rest, changed) {
			return nil
		}
	}
}

// wait returns after untilMinute, or once rest has passed and changed is
// closed, whichever comes first; false when ctx ends first.
func (s *Server) wait(ctx context.Context, untilMinute, rest time.Duration, changed <-chan struct{}) bool {
	minute := time.NewTimer(untilMinute)
	defer minute.Stop()
	rested := time.NewTimer(rest)
	defer rested.Stop()
	var isChanged, isRested bool
	for !isChanged || !isRested {
		select {
		case <-ctx.Done():
			return false
		case <-minute.C:
			return true
		case <-rested.C:
			isRested = true
		case <-changed:
			isChanged, changed = true, nil
		}
	}
	return true
}

// byParam reads ?by=, host (the default) or topic.
func byParam(r *http.Request) (string, error) {
	switch by := r.URL.Query().Get("by"); by {
	case "", forecast.ByHost:
		return forecast.ByHost, nil
	case forecast.ByTopic:
		return forecast.ByTopic, nil
	default:
		return "", fmt.Errorf("by %q: want host or topic", by)
	}
}

// timelineAnswer is GET /api/timeline: the fires of the next 24 hours,
// minute by minute, by host or topic.
type timelineAnswer struct {
	ComputedAt time.Time `json:"computedAt"`
	TookMs     int64     `json:"tookMs"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	By         string    `json:"by"`
	Tasks      int       `json:"tasks"`
	Unread     int       `json:"unreadTasks"`
	Fires      int       `json:"fires"`
	// PerMinute holds the fires of each minute from From.
	PerMinute       []int          `json:"perMinute"`
	MedianPerMinute float64        `json:"medianPerMinute"`
	BurstThreshold  int            `json:"burstThreshold"`
	BurstMinutes    int            `json:"burstMinutes"`
	Busiest         minuteAnswer   `json:"busiest"`
	Bursts          []minuteAnswer `json:"bursts"`
	Groups          []groupAnswer  `json:"groups"`
	Other           *groupAnswer   `json:"other,omitempty"`
}

// groupAnswer is the fires of a host or topic, or of Count of them.
type groupAnswer struct {
	Name      string    `json:"name,omitempty"`
	Count     int       `json:"count"`
	Fires     int       `json:"fires"`
	Peak      int       `json:"peak"`
	PeakAt    time.Time `json:"peakAt"`
	PerMinute []int     `json:"perMinute"`
}

// minuteAnswer is a minute's fires and the hosts or topics firing most
// in it.
type minuteAnswer struct {
	At     time.Time             `json:"at"`
	Fires  int                   `json:"fires"`
	Groups []forecast.GroupFires `json:"groups"`
}

func newTimelineAnswer(t *forecast.Timeline, by string) timelineAnswer {
	g := t.Grouped(by)
	minute := func(f forecast.Minute) minuteAnswer {
		return minuteAnswer{At: t.At(f.Minute), Fires: f.Fires, Groups: api.NonNil(f.Groups)}
	}
	group := func(gr forecast.Group) groupAnswer {
		return groupAnswer{Name: gr.Name, Count: gr.Count, Fires: gr.Fires, Peak: gr.Peak, PeakAt: t.At(gr.PeakMinute), PerMinute: gr.Series}
	}
	a := timelineAnswer{ComputedAt: t.Computed, TookMs: t.Took.Milliseconds(), From: t.From, To: t.At(forecast.Minutes), By: by,
		Tasks: t.Tasks, Unread: t.Unread, Fires: t.Fires, PerMinute: t.Total, MedianPerMinute: t.Median, BurstThreshold: t.Threshold,
		BurstMinutes: t.BurstMinutes, Busiest: minute(g.Busiest), Bursts: []minuteAnswer{}, Groups: []groupAnswer{}}
	for _, b := range g.Bursts {
		a.Bursts = append(a.Bursts, minute(b))
	}
	for _, gr := range g.Groups {
		a.Groups = append(a.Groups, group(gr))
	}
	if g.Other.Count > 0 {
		o := group(g.Other)
		a.Other = &o
	}
	return a
}

// apiTimeline answers the timeline last computed, by ?by= host or topic;
// 503 until the first is.
func (s *Server) apiTimeline(w http.ResponseWriter, r *http.Request) {
	by, err := byParam(r)
	if err != nil {
		api.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	t, _ := s.glance.last()
	if t == nil {
		w.Header().Set("Retry-After", "5")
		api.Error(w, http.StatusServiceUnavailable, "the timeline is being computed: try again in a few seconds")
		return
	}
	s.writeJSON(w, r, newTimelineAnswer(t, by))
}

// apiActivity answers the last hour's counts and the charts of the last
// hours (see activityAnswer).
func (s *Server) apiActivity(w http.ResponseWriter, r *http.Request) {
	a, err := s.src.ActivitySince(r.Context(), s.now().Add(-time.Hour))
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	answer := activityAnswer{Activity: a}
	if _, c := s.glance.last(); c != nil {
		answer.Chart = &chartAnswer{ComputedAt: c.Computed, ActivityChart: c.ActivityChart}
	}
	s.writeJSON(w, r, answer)
}

// activityAnswer is GET /api/activity: the last hour's counts, as the
// dashboard shows them, and the charts of the last hours as last
// computed (none until the first are).
type activityAnswer struct {
	storetype.Activity
	Chart *chartAnswer `json:"chart,omitempty"`
}

// chartAnswer is the charts of the last hours and when they were
// computed.
type chartAnswer struct {
	ComputedAt time.Time `json:"computedAt"`
	storetype.ActivityChart
}
