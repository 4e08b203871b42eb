package web_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/net/html"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web"
)

// timelineAnswer is what GET /api/timeline answers, as a client reads it.
type timelineAnswer struct {
	From           time.Time      `json:"from"`
	By             string         `json:"by"`
	Tasks          int            `json:"tasks"`
	Fires          int            `json:"fires"`
	PerMinute      []int          `json:"perMinute"`
	Median         float64        `json:"medianPerMinute"`
	BurstThreshold int            `json:"burstThreshold"`
	BurstMinutes   int            `json:"burstMinutes"`
	Busiest        minuteAnswer   `json:"busiest"`
	Bursts         []minuteAnswer `json:"bursts"`
	Groups         []struct {
		Name      string `json:"name"`
		Fires     int    `json:"fires"`
		PerMinute []int  `json:"perMinute"`
	} `json:"groups"`
	Other *struct{} `json:"other"`
}

type minuteAnswer struct {
	At     time.Time `json:"at"`
	Fires  int       `json:"fires"`
	Groups []struct {
		Name  string `json:"name"`
		Fires int    `json:"fires"`
	} `json:"groups"`
}

// plannedTask is a task of the timeline test, with where the engine
// stands on it.
type plannedTask struct {
	def          task.Definition
	anchor, next int64
}

// expectedFires is what the engine would fire of p from now to to, each
// at the instant it would fire, by task.Definition's own computation: an
// occurrence missed at now as its misfire policy says (Plan), the others
// one after another (NextFire).
func expectedFires(p plannedTask, now, to time.Time) []time.Time {
	d := p.def
	var out []time.Time
	due, ok := p.next, true
	for ok && due < now.UnixMilli() {
		_, fires, following, more := d.Plan(p.anchor, due, now.UnixMilli())
		if fires {
			out = append(out, now)
		}
		due, ok = following, more
	}
	for ok && due < to.UnixMilli() {
		out = append(out, task.Time(due))
		due, ok = d.NextFire(p.anchor, due)
	}
	return out
}

// TestTimelineCountsEachMinuteAsTheTasksFire gives the console tasks of
// every kind of schedule (unix and Quartz cron, intervals of seconds, of
// hours and of days in a zone, a window, an end, a one-shot, a task late
// at now, a paused task) and a night's batch of a hundred tasks due at
// 02:00, with a fixed clock, and checks the timeline's count of every
// minute of the next 24 hours, in all and per host and per topic, against
// the fires task.Definition computes for each task; then that the burst
// at 02:00 is named with the host and the topic firing most in it, on the
// dashboard in words and in the API.
func TestTimelineCountsEachMinuteAsTheTasksFire(t *testing.T) {
	now := time.Date(2026, 11, 25, 1, 17, 42, 0, time.UTC)
	from := now.Truncate(time.Minute)
	to := from.Add(24 * time.Hour)
	f := newFeed(t, now)
	every := func(u task.TimeUnit, n int32) *task.Frequency { return &task.Frequency{TimeUnit: u, Time: n} }
	defs := []task.Definition{
		{Host: "beta", Name: "every-minute", Topic: "jobs", Cron: "* * * * *"},
		{Host: "beta", Name: "every-7s", Topic: "pings", Frequency: every(task.Seconds, 7)},
		{Host: "gamma", Name: "hourly", Topic: "jobs", Frequency: every(task.Hours, 1), Start: task.Ptr(now.Add(-90*time.Minute + 13*time.Second).UnixMilli())},
		{Host: "gamma", Name: "quartz-15s", Topic: "pings", Cron: "*/15 * * * * ?"},
		{Host: "gamma", Name: "quartz-paris", Topic: "reports", Cron: "0 30 7 ? * MON-FRI", Timezone: "Europe/Paris"},
		{Host: "gamma", Name: "window", Topic: "reports", Frequency: every(task.Minutes, 10), Timezone: "Europe/Paris",
			Window: &task.Window{From: "08:00", To: "09:30"}},
		{Host: "gamma", Name: "window-seconds", Topic: "pings", Frequency: every(task.Seconds, 20), Timezone: "Europe/Paris",
			Window: &task.Window{From: "10:00", To: "10:03"}},
		{Host: "beta", Name: "ends", Topic: "jobs", Frequency: every(task.Seconds, 30), End: task.Ptr(now.Add(3 * time.Hour).UnixMilli())},
		{Host: "acme", Name: "daily-paris", Topic: "reports", Frequency: every(task.Days, 1), Timezone: "Europe/Paris",
			Start: task.Ptr(time.Date(2026, 11, 1, 22, 30, 0, 0, time.UTC).UnixMilli())},
		{Host: "acme", Name: "once", Topic: "reports", Start: task.Ptr(now.Add(3*time.Hour + 5*time.Second).UnixMilli())},
		{Host: "acme", Name: "tomorrow", Topic: "reports", Start: task.Ptr(now.Add(30 * time.Hour).UnixMilli())},
		{Host: "acme", Name: "cron-new-york", Topic: "jobs", Cron: "*/5 9-17 * * 1-5", Timezone: "America/New_York"},
	}
	for i := range 100 {
		defs = append(defs, task.Definition{Host: "acme", Name: fmt.Sprintf("nightly-%03d", i), Topic: "batch", Cron: "0 2 * * *"})
	}
	var planned []plannedTask
	for _, d := range defs {
		d.Action = task.Insert
		if err := d.Validate(); err != nil {
			t.Fatalf("%s: %v", d.Key(), err)
		}
		// Each as the engine holds it, accepted an hour ago: its anchor and
		// the next fire after now.
		accepted := now.Add(-time.Hour).UnixMilli()
		anchor := d.Anchor(accepted)
		next, ok := d.NextFire(anchor, max(d.StartAfter(anchor, accepted), now.UnixMilli()-1))
		if !ok {
			t.Fatalf("%s never fires", d.Key())
		}
		planned = append(planned, plannedTask{d, anchor, next})
	}
	// Late: an hourly task whose occurrence of 10 minutes ago has not fired
	// (fires once now, then on the hour), and one that skips what it missed.
	late := task.Definition{Host: "beta", Name: "late", Topic: "jobs", Action: task.Insert, Frequency: every(task.Hours, 1)}
	planned = append(planned, plannedTask{late, now.Add(-70 * time.Minute).UnixMilli(), now.Add(-10 * time.Minute).UnixMilli()})
	skips := task.Definition{Host: "gamma", Name: "skips", Topic: "jobs", Action: task.Insert, Frequency: every(task.Minutes, 30), Misfire: task.Skip}
	planned = append(planned, plannedTask{skips, now.Add(-2 * time.Hour).UnixMilli(), now.Add(-20 * time.Minute).UnixMilli()})
	for _, p := range planned {
		f.add(topics.State, p.def.Key(), record.State{Definition: p.def, Anchor: p.anchor, NextFire: p.next, UpdatedAt: now.UnixMilli()})
	}
	// Paused: it fires nothing.
	paused := task.Definition{Host: "beta", Name: "paused", Topic: "jobs", Action: task.Insert, Cron: "* * * * *", Active: task.Ptr(false)}
	f.add(topics.State, paused.Key(), record.State{Definition: paused, Anchor: now.UnixMilli(), NextFire: now.Add(time.Minute).UnixMilli(), UpdatedAt: now.UnixMilli()})

	// What each minute should count, in all and by host and by topic.
	total := make([]int, 24*60)
	byHost, byTopic := map[string][]int{}, map[string][]int{}
	count := func(m map[string][]int, key string, i int) {
		if m[key] == nil {
			m[key] = make([]int, 24*60)
		}
		m[key][i]++
	}
	fired, firing := 0, 0
	for _, p := range planned {
		fires := expectedFires(p, now, to)
		if len(fires) > 0 {
			firing++
		}
		for _, at := range fires {
			i := int(at.Sub(from) / time.Minute)
			total[i]++
			count(byHost, p.def.Host, i)
			count(byTopic, p.def.Topic, i)
			fired++
		}
	}

	srv, err := web.New(web.Config{Clock: clockwork.NewFakeClockAt(now)}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	if resp, body := get(t, ts.URL+"/api/timeline"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("before it is computed, /api/timeline answers %s: %s", resp.Status, body)
	}
	if err := srv.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}

	busiest := 0
	for i, n := range total {
		if n > total[busiest] {
			busiest = i
		}
	}
	if at := from.Add(time.Duration(busiest) * time.Minute); at.Hour() != 2 || at.Minute() != 0 {
		t.Fatalf("the busiest minute by the tasks' own fires is %s, not 02:00: the test's tasks are not what it means", at)
	}
	for _, by := range []struct {
		name   string
		groups map[string][]int
	}{{"host", byHost}, {"topic", byTopic}} {
		t.Run(by.name, func(t *testing.T) {
			resp, body := get(t, ts.URL+"/api/timeline?by="+by.name)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/api/timeline?by=%s: %s %s", by.name, resp.Status, body)
			}
			var a timelineAnswer
			if err := json.Unmarshal([]byte(body), &a); err != nil {
				t.Fatal(err)
			}
			if !a.From.Equal(from) || a.By != by.name || a.Fires != fired || a.Tasks != firing || a.Other != nil {
				t.Errorf("from %s by %s: %d fires of %d tasks (other: %v); want from %s, %d fires of %d tasks", a.From, a.By, a.Fires, a.Tasks, a.Other != nil, from, fired, firing)
			}
			diffMinutes(t, "all", from, a.PerMinute, total)
			var names []string
			for _, g := range a.Groups {
				names = append(names, g.Name)
				diffMinutes(t, by.name+" "+g.Name, from, g.PerMinute, by.groups[g.Name])
			}
			want := mostFirst(by.groups)
			if !slices.Equal(names, want) {
				t.Errorf("groups %q, want %q, most fires first", names, want)
			}

			// The burst at 02:00, named with what fires most in it.
			sorted := slices.Clone(total)
			slices.Sort(sorted)
			median := float64(sorted[len(sorted)/2-1]+sorted[len(sorted)/2]) / 2
			if a.Median != median || total[busiest] < a.BurstThreshold || float64(a.BurstThreshold) < 5*median {
				t.Errorf("median %v, threshold %d: want the median %v, and %d fires at 02:00 over a threshold of 5 times the median at least", a.Median, a.BurstThreshold, median, total[busiest])
			}
			named := namedIn(by.groups, busiest)
			for _, m := range []minuteAnswer{a.Busiest, a.Bursts[0]} {
				var got []string
				for _, g := range m.Groups {
					got = append(got, fmt.Sprintf("%s: %d", g.Name, g.Fires))
				}
				if !m.At.Equal(from.Add(time.Duration(busiest)*time.Minute)) || m.Fires != total[busiest] || !slices.Equal(got, named) {
					t.Errorf("busiest minute and first burst %s: %d fires of %q; want 02:00: %d fires of %q", m.At, m.Fires, got, total[busiest], named)
				}
			}
			for _, b := range a.Bursts {
				if b.Fires < a.BurstThreshold || b.Fires != total[int(b.At.Sub(from)/time.Minute)] {
					t.Errorf("burst at %s of %d fires: under the threshold %d, or not the %d fires of that minute", b.At, b.Fires, a.BurstThreshold, total[int(b.At.Sub(from)/time.Minute)])
				}
			}

			// The dashboard says it in words, and its chart has them as its
			// title and description.
			doc := page(t, ts.URL+"/?by="+by.name)
			words := fmt.Sprintf("Busiest minute 02:00 UTC: %s fires (%s %s).", thousands(total[busiest]), by.name, strings.Join(named, "; "+by.name+" "))
			if s := text(byID(t, doc, "timeline-summary")); !strings.Contains(s, words) {
				t.Errorf("the timeline says %q; want %q in it", s, words)
			}
			burst := strings.TrimPrefix(strings.TrimSuffix(words, "."), "Busiest minute ")
			if first := strings.ReplaceAll(text(findAll(byID(t, doc, "bursts"), element("li"))[0]), " :", ":"); first != "1 "+burst {
				t.Errorf("first burst listed: %q, want %q", first, "1 "+burst)
			}
			svg := findAll(byID(t, doc, "timeline"), element("svg"))[0]
			if attr(svg, "role") != "img" || attr(svg, "aria-labelledby") != "timeline-title timeline-desc" ||
				!strings.Contains(text(byID(t, doc, "timeline-desc")), words) || text(byID(t, doc, "timeline-title")) != "Fires a minute over the next 24 hours, by "+by.name {
				t.Errorf("the timeline's chart: role %q, labelled by %q, title %q, description %q", attr(svg, "role"), attr(svg, "aria-labelledby"),
					text(byID(t, doc, "timeline-title")), text(byID(t, doc, "timeline-desc")))
			}
			if current := findAll(doc, func(n *html.Node) bool {
				return attr(n, "aria-current") == "page" && attr(n, "href") == "/?by="+by.name
			}); len(current) != 1 {
				t.Errorf("the link to the timeline by %s is not marked as the page's", by.name)
			}
		})
	}
	if resp, _ := get(t, ts.URL+"/?by=colour"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("/?by=colour: %s, want 400", resp.Status)
	}
	if resp, _ := get(t, ts.URL+"/api/timeline?by=colour"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("/api/timeline?by=colour: %s, want 400", resp.Status)
	}
}

// diffMinutes fails for every minute whose count differs, naming it.
func diffMinutes(t *testing.T, what string, from time.Time, got, want []int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d minutes, want %d", what, len(got), len(want))
		return
	}
	bad := 0
	for i := range want {
		if got[i] != want[i] {
			if bad++; bad <= 5 {
				t.Errorf("%s: %s counts %d fires, the tasks fire %d", what, from.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), got[i], want[i])
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d minutes wrong in all", what, bad)
	}
}

// mostFirst names the groups by their fires, most first, then by name.
func mostFirst(groups map[string][]int) []string {
	sum := map[string]int{}
	var names []string
	for name, minutes := range groups {
		for _, n := range minutes {
			sum[name] += n
		}
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(sum[b], sum[a]), cmp.Compare(a, b)) })
	return names
}

// namedIn names the groups firing in minute i, most first, at most 3, as
// "name: fires".
func namedIn(groups map[string][]int, i int) []string {
	var names []string
	for name, minutes := range groups {
		if minutes[i] > 0 {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(groups[b][i], groups[a][i]), cmp.Compare(a, b)) })
	var out []string
	for _, n := range names[:min(len(names), 3)] {
		out = append(out, fmt.Sprintf("%s: %d", n, groups[n][i]))
	}
	return out
}

// thousands writes n with commas, as the console does.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestChartsOfTheLastHoursSayWhatHappened records fires over the last
// six hours, a fifth of those of one quarter hour failed and one fire
// very late, and checks with a fixed clock that the dashboard says the
// figures in words and gives each chart its title and description, that
// /api/activity answers the same buckets, and that a bar leads to the
// list of as many executions as it counts.
func TestChartsOfTheLastHoursSayWhatHappened(t *testing.T) {
	now := time.Date(2026, 11, 25, 3, 2, 0, 0, time.UTC)
	f := newFeed(t, now)
	// 02:00 to 03:00 UTC, a fire a minute, 40 ms late; those from 02:30 to
	// 02:45 failed but every fifth, save 02:35 (so that one five minutes
	// holds the most); the one at 02:50, 95 s late.
	failed, fires := 0, 0
	for m := range 60 {
		at := time.Date(2026, 11, 25, 2, m, 0, 0, time.UTC)
		late := 40 * time.Millisecond
		if m == 50 {
			late = 95 * time.Second
		}
		id := fmt.Sprintf("f%02d", m)
		f.add(topics.Executions, id, record.Execution{FireID: id, Host: "acme", Name: "job", Topic: "jobs", ScheduledAt: at.UnixMilli(), FiredAt: at.Add(late).UnixMilli()})
		fires++
		if m >= 30 && m < 45 && (m%5 != 0 || m == 35) {
			f.add(topics.Status, id, record.Status{FireID: id, Status: record.StatusFailed, Message: "exit status 1", At: at.Add(time.Second).UnixMilli()})
			failed++
		}
	}
	srv, err := web.New(web.Config{Clock: clockwork.NewFakeClockAt(now)}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	if doc := page(t, ts.URL+"/"); !strings.Contains(text(byID(t, doc, "activity-pending")), "being computed") {
		t.Errorf("before the charts are computed the dashboard says %q", text(byID(t, doc, "last-hours")))
	}
	if err := srv.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}

	var a struct {
		Fires int `json:"fires"`
		Chart struct {
			From          time.Time `json:"from"`
			To            time.Time `json:"to"`
			Fires         int       `json:"fires"`
			Failures      int       `json:"failures"`
			LatenessP50Ms int64     `json:"latenessP50Ms"`
			LatenessMaxMs int64     `json:"latenessMaxMs"`
			Buckets       []struct {
				Start    time.Time `json:"start"`
				Fires    int       `json:"fires"`
				Failures int       `json:"failures"`
			} `json:"buckets"`
		} `json:"chart"`
	}
	if resp, body := get(t, ts.URL+"/api/activity"); resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &a) != nil {
		t.Fatalf("/api/activity: %s %s", resp.Status, body)
	}
	c := a.Chart
	if !c.From.Equal(now.Add(5*time.Minute-6*time.Hour).Truncate(5*time.Minute)) || !c.To.Equal(time.Date(2026, 11, 25, 3, 5, 0, 0, time.UTC)) ||
		len(c.Buckets) != 72 || c.Fires != fires || c.Failures != failed || c.LatenessP50Ms != 40 || c.LatenessMaxMs != 95_000 {
		t.Fatalf("chart from %s to %s, %d buckets: %d fires, %d failed, median %d ms, worst %d ms; want the six hours to 03:05 by 72, %d fires, %d failed, median 40 ms, worst 95 s",
			c.From, c.To, len(c.Buckets), c.Fires, c.Failures, c.LatenessP50Ms, c.LatenessMaxMs, fires, failed)
	}
	worst := 0
	for i, b := range c.Buckets {
		if b.Failures > c.Buckets[worst].Failures {
			worst = i
		}
	}

	doc := page(t, ts.URL+"/")
	words := fmt.Sprintf("From 21:05 UTC to 03:05 UTC: %d executions, %d failed (%.1f%%). Lateness: median 40 ms, 99th percentile 1m35s, worst 1m35s.",
		fires, failed, 100*float64(failed)/float64(fires))
	if s := text(byID(t, doc, "activity-summary")); s != words {
		t.Errorf("the charts say %q, want %q", s, words)
	}
	for _, id := range []string{"chart-fires", "chart-failures", "chart-lateness"} {
		svg := findAll(byID(t, doc, id), element("svg"))[0]
		title, desc := text(byID(t, doc, id+"-title")), text(byID(t, doc, id+"-desc"))
		if attr(svg, "role") != "img" || attr(svg, "aria-labelledby") != id+"-title "+id+"-desc" || title == "" || desc == "" {
			t.Errorf("%s: role %q, labelled by %q, title %q, description %q", id, attr(svg, "role"), attr(svg, "aria-labelledby"), title, desc)
		}
	}
	if desc, want := text(byID(t, doc, "chart-failures-desc")), fmt.Sprintf("%d failed in all; the most, %d, from %s UTC.", failed, c.Buckets[worst].Failures, c.Buckets[worst].Start.Format("15:04")); desc != want {
		t.Errorf("the failures chart says %q, want %q", desc, want)
	}
	// The busiest bar of failures leads to as many failed executions.
	bars := findAll(byID(t, doc, "chart-failures"), element("a"))
	if len(bars) != 72 {
		t.Fatalf("%d bars of failures, want 72", len(bars))
	}
	href := attr(bars[worst], "href")
	list := page(t, ts.URL+href)
	if total := text(findAll(byID(t, list, "pager"), func(n *html.Node) bool { return attr(n, "class") == "total" })[0]); !strings.HasPrefix(total, fmt.Sprintf("%d executions", c.Buckets[worst].Failures)) {
		t.Errorf("the bar of %d failures leads to %s, which says %q", c.Buckets[worst].Failures, href, total)
	}
}
