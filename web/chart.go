package web

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/web/forecast"
	"github.com/jobdrop/jobdrop/web/list"
)

// The dashboard's charts are SVG drawn here, on the server: no script, and
// a live refresh swaps them with the rest of the page. Each says what it
// shows in words too (its title and description, and the text beside
// it), and marks what colour marks with a shape or a number as well.

// glanceModel is what the dashboard shows at a glance: the timeline by
// By, and the charts of the last hours.
type glanceModel struct {
	By       string
	Timeline *forecast.Timeline
	Chart    *recentChart
}

// Geometry of the timeline, in SVG user units: a gutter for the labels,
// then a unit a minute.
const (
	tlGutter   = 190
	tlPad      = 12
	tlWidth    = tlGutter + forecast.Minutes + tlPad
	tlTop      = 30
	tlTotalH   = 150
	tlRowH     = 36
	tlRowGap   = 12
	tlAxisH    = 34
	tlMarkHalf = 4
)

// timelineChart is the timeline drawn: the fires of every minute, then
// those of each group, over one time axis.
type timelineChart struct {
	// By is what the groups are: host or topic.
	By            string
	Width, Height int
	Rows          []chartRow
	Bursts        []burstMark
	Ticks         []chartTick
	// AxisY is where the time labels stand.
	AxisY int
}

// chartRow is one band of the timeline: all fires, or a group's.
type chartRow struct {
	// Label and Sub are the band's name and figure, in the gutter;
	// Title says it all, for a pointer resting on it.
	Label, Sub, Title string
	Class             string
	Y, Height         int
	// Path draws the fires of each minute as steps, scaled to the band's
	// busiest minute.
	Path string
}

// burstMark marks a burst: a band over its minute, numbered as in the
// list of bursts.
type burstMark struct {
	N          int
	X, Y, W, H int
	Title      string
}

// chartTick is a time on the axis: a line, and a label if it has one.
type chartTick struct {
	X     int
	Label string
}

// newTimelineChart draws t grouped by g, with times in loc.
func newTimelineChart(t *forecast.Timeline, g *forecast.Grouping, loc *time.Location) timelineChart {
	c := timelineChart{By: g.By, Width: tlWidth}
	y := tlTop
	c.Rows = append(c.Rows, chartRow{Label: "all", Sub: list.Thousands(t.Fires) + " fires", Class: "total", Y: y, Height: tlTotalH,
		Title: fmt.Sprintf("All: %s fires; at most %s in a minute (%s)", list.Thousands(t.Fires), list.Thousands(t.Total[g.Busiest.Minute]), clock(t.At(g.Busiest.Minute), loc)),
		Path:  stepPath(t.Total, y, tlTotalH)})
	y += tlTotalH + tlRowGap
	rows := g.Groups
	if g.Other.Count > 0 {
		rows = append(rows[:len(rows):len(rows)], g.Other)
	}
	for i, gr := range rows {
		name, class := g.By+" "+gr.Name, "group"
		if i == len(g.Groups) {
			name, class = otherGroups(g.By, gr.Count), "other"
		}
		c.Rows = append(c.Rows, chartRow{Label: shorten(name, 20), Sub: list.Thousands(gr.Fires) + " fires", Class: class, Y: y, Height: tlRowH,
			Title: fmt.Sprintf("%s: %s fires; at most %s in a minute (%s)", name, list.Thousands(gr.Fires), list.Thousands(gr.Peak), clock(t.At(gr.PeakMinute), loc)),
			Path:  stepPath(gr.Series, y, tlRowH)})
		y += tlRowH + tlRowGap
	}
	for i, b := range g.Bursts {
		c.Bursts = append(c.Bursts, burstMark{N: i + 1, X: tlGutter + b.Minute - tlMarkHalf, Y: tlTop, W: 2*tlMarkHalf + 1, H: y - tlRowGap - tlTop,
			Title: fmt.Sprintf("Burst %d: %s", i+1, minuteWords(t, g, b, loc))})
	}
	c.AxisY = y + 14
	c.Height = c.AxisY + tlAxisH - 14
	for _, tk := range hourTicks(t.From, forecast.Minutes*time.Minute, 3, loc) {
		c.Ticks = append(c.Ticks, chartTick{X: tlGutter + int(tk.at.Sub(t.From)/time.Minute), Label: tk.label})
	}
	return c
}

// otherGroups names n hosts or topics taken together.
func otherGroups(by string, n int) string {
	if n == 1 {
		return "1 other " + by
	}
	return list.Thousands(n) + " other " + by + "s"
}

// shorten cuts s to n characters, marking the cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// stepPath draws counts as steps in a band from top, height high, one
// unit a count, scaled to the largest: the area under them, closed on the
// band's base.
func stepPath(counts []int, top, height int) string {
	peak := 0
	for _, n := range counts {
		peak = max(peak, n)
	}
	base := top + height
	var b strings.Builder
	fmt.Fprintf(&b, "M%d %d", tlGutter, base)
	level := base
	for m, n := range counts {
		y := base
		if peak > 0 && n > 0 {
			// At least a unit high: a minute that fires is never flat.
			y = base - max(1, int(math.Round(float64(n)*float64(height)/float64(peak))))
		}
		if y != level {
			fmt.Fprintf(&b, "H%dV%d", tlGutter+m, y)
			level = y
		}
	}
	fmt.Fprintf(&b, "H%dV%dZ", tlGutter+len(counts), base)
	return b.String()
}

// tick is a time on an axis and its label.
type tick struct {
	at    time.Time
	label string
}

// hourTicks are the whole hours of loc from from over span, labelled
// every every hours of the day (local midnight included).
func hourTicks(from time.Time, span time.Duration, every int, loc *time.Location) []tick {
	var out []tick
	// The whole hour of loc at or after from: Truncate would cut UTC
	// hours, which are not loc's in a zone half an hour off.
	l := from.In(loc)
	t := time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), 0, 0, 0, loc)
	if t.Before(from) {
		t = t.Add(time.Hour)
	}
	for ; t.Before(from.Add(span)); t = t.Add(time.Hour) {
		label := ""
		if t.In(loc).Hour()%every == 0 {
			label = t.In(loc).Format("15:04")
		}
		out = append(out, tick{at: t, label: label})
	}
	return out
}

// clock is the time of day of t in loc, with the zone: "02:00 UTC".
func clock(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("15:04 MST")
}

// displayLoc is where the request's user sees times that belong to no
// task.
func displayLoc(ctx context.Context) *time.Location { return zoneOf(ctx).in("") }

// minuteWords says what fires in one minute: "02:00 UTC: 4,120 fires
// (host acme: 4,000; host beta: 120)".
func minuteWords(t *forecast.Timeline, g *forecast.Grouping, f forecast.Minute, loc *time.Location) string {
	return clock(t.At(f.Minute), loc) + ": " + minuteGroupWords(g, f)
}

// minuteGroupWords says how many fire in a minute, and of which hosts or
// topics most: "4,120 fires (host acme: 4,000; host beta: 120)".
func minuteGroupWords(g *forecast.Grouping, f forecast.Minute) string {
	s := fires(f.Fires)
	if len(f.Groups) > 0 {
		parts := make([]string, len(f.Groups))
		for i, gf := range f.Groups {
			parts[i] = g.By + " " + gf.Name + ": " + list.Thousands(gf.Fires)
		}
		s += " (" + strings.Join(parts, "; ") + ")"
	}
	return s
}

// fires counts fires in words.
func fires(n int) string {
	if n == 1 {
		return "1 fire"
	}
	return list.Thousands(n) + " fires"
}

// typical says the median of a minute's fires: whole, or to a half.
func typical(m float64) string {
	if m == math.Trunc(m) {
		return list.Thousands(int(m))
	}
	return strconv.FormatFloat(m, 'f', 1, 64)
}

// timelineWords says in a sentence or two what the timeline shows.
func timelineWords(t *forecast.Timeline, g *forecast.Grouping, loc *time.Location) string {
	if t.Fires == 0 {
		return "Nothing fires in the next 24 hours."
	}
	tasks := list.Thousands(t.Tasks) + " tasks"
	if t.Tasks == 1 {
		tasks = "1 task"
	}
	usual := "a typical minute has " + typical(t.Median) + " (the median)"
	if t.Median == 0 {
		usual = "most minutes have none"
	}
	s := fmt.Sprintf("%s of %s in the next 24 hours; %s. Busiest minute %s.",
		fires(t.Fires), tasks, usual, minuteWords(t, g, g.Busiest, loc))
	switch t.BurstMinutes {
	case 0:
		s += fmt.Sprintf(" No burst: no minute has %s or more.", fires(t.Threshold))
	case 1:
		s += fmt.Sprintf(" 1 minute is a burst, with %s or more.", fires(t.Threshold))
	default:
		s += fmt.Sprintf(" %s minutes are bursts, with %s or more.", list.Thousands(t.BurstMinutes), fires(t.Threshold))
	}
	return s
}

// Geometry of the charts of the last hours.
const (
	acGutter = 64
	acBar    = 6
	acTop    = 14
	acHeight = 140
	acAxisH  = 26
	acPad    = 8
)

// barChart is one chart of the last hours: a bar a step.
type barChart struct {
	ID          string
	Title, Desc string
	// Caption is said under the chart: its title, and how to read it.
	Caption       string
	Width, Height int
	Base          int
	Bars          []chartBar
	// Grid are the levels marked across the chart, with their labels.
	Grid  []chartLevel
	Ticks []chartTick
	AxisY int
}

// chartBar is a step's bar, linked to the list of what it counts; Inner
// is a narrower bar inside (the median of lateness), and MaxY, when set,
// a mark at the step's largest value.
type chartBar struct {
	X, Y, W, H int
	Href       string
	Title      string
	Inner      *chartBar
	MaxY       int
}

// chartLevel is a level of a chart's scale.
type chartLevel struct {
	Y     int
	Label string
}

// activityCharts draws the fires, the failures and the lateness of the
// last hours, with times in loc.
func activityCharts(c *recentChart, loc *time.Location) []barChart {
	span := fmt.Sprintf("from %s to %s, by %s", clock(c.From, loc), clock(c.To, loc), coarse(time.Duration(c.StepSeconds)*time.Second))
	counts := func(id, what string, of func(i int) int, href func(from, to time.Time) string) barChart {
		ch := newBarChart(id, c, loc)
		peak, peakAt := 0, 0
		for i := range c.Buckets {
			if n := of(i); n > peak {
				peak, peakAt = n, i
			}
		}
		top := niceCeil(peak)
		ch.Grid = []chartLevel{{ch.Base - acHeight, list.Thousands(top)}, {ch.Base, "0"}}
		total := 0
		for i, b := range c.Buckets {
			n := of(i)
			total += n
			h := 0
			if n > 0 {
				h = max(1, int(math.Round(float64(n)*acHeight/float64(top))))
			}
			end := b.Start.Add(time.Duration(c.StepSeconds) * time.Second)
			ch.Bars[i].Y, ch.Bars[i].H = ch.Base-h, h
			ch.Bars[i].Href = href(b.Start, end)
			ch.Bars[i].Title = fmt.Sprintf("%s to %s: %s %s", clock(b.Start, loc), clock(end, loc), list.Thousands(n), what)
		}
		ch.Title = fmt.Sprintf("%s%s, %s", strings.ToUpper(what[:1]), what[1:], span)
		ch.Caption = ch.Title + "; each bar leads to its executions."
		ch.Desc = fmt.Sprintf("%s %s in all", list.Thousands(total), what)
		if peak > 0 {
			ch.Desc += fmt.Sprintf("; the most, %s, from %s", list.Thousands(peak), clock(c.Buckets[peakAt].Start, loc))
		}
		ch.Desc += "."
		return ch
	}
	charts := []barChart{
		counts("chart-fires", "executions", func(i int) int { return c.Buckets[i].Fires }, func(from, to time.Time) string {
			return "/executions?" + url.Values{"from": {utc(from)}, "to": {utc(to)}}.Encode()
		}),
		counts("chart-failures", "failed", func(i int) int { return c.Buckets[i].Failures }, func(from, to time.Time) string {
			return "/executions?" + url.Values{"status": {"FAILED"}, "from": {utc(from)}, "to": {utc(to)}}.Encode()
		}),
	}
	return append(charts, latenessChart(c, loc, span))
}

// newBarChart lays out a chart of c's steps, bars not yet drawn.
func newBarChart(id string, c *recentChart, loc *time.Location) barChart {
	ch := barChart{ID: id, Width: acGutter + len(c.Buckets)*acBar + acPad, Base: acTop + acHeight}
	ch.AxisY = ch.Base + 18
	ch.Height = ch.Base + acAxisH
	ch.Bars = make([]chartBar, len(c.Buckets))
	for i := range ch.Bars {
		ch.Bars[i] = chartBar{X: acGutter + i*acBar, W: acBar - 1}
	}
	for _, tk := range hourTicks(c.From, c.To.Sub(c.From), 1, loc) {
		ch.Ticks = append(ch.Ticks, chartTick{X: acGutter + int(tk.at.Sub(c.From)*acBar/(time.Duration(c.StepSeconds)*time.Second)), Label: tk.label})
	}
	return ch
}

// latenessChart draws how late the fires of each step fired, on a
// logarithmic scale (lateness goes from milliseconds to minutes): the
// 99th percentile as a bar, the median as a narrower bar inside it, the
// largest as a mark.
func latenessChart(c *recentChart, loc *time.Location, span string) barChart {
	ch := newBarChart("chart-lateness", c, loc)
	var worst int64
	worstAt := -1
	for i, b := range c.Buckets {
		if b.Fires > 0 && (worstAt < 0 || b.LatenessP99Ms > worst) {
			worst, worstAt = b.LatenessP99Ms, i
		}
	}
	// Powers of ten of milliseconds, up to the first above every largest.
	top := int64(10)
	for top < c.LatenessMaxMs {
		top *= 10
	}
	scale := func(ms int64) int {
		if ms <= 0 {
			return 0
		}
		return max(1, int(math.Round(math.Log10(float64(ms)+1)/math.Log10(float64(top)+1)*acHeight)))
	}
	for level := int64(1); level <= top; level *= 10 {
		label := strconv.FormatInt(level, 10) + " ms"
		if level >= 1000 {
			label = strconv.FormatInt(level/1000, 10) + " s"
		}
		ch.Grid = append(ch.Grid, chartLevel{ch.Base - scale(level), label})
	}
	ch.Grid = append(ch.Grid, chartLevel{ch.Base, "0"})
	for i, b := range c.Buckets {
		bar := &ch.Bars[i]
		end := b.Start.Add(time.Duration(c.StepSeconds) * time.Second)
		bar.Href = "/executions?" + url.Values{"from": {utc(b.Start)}, "to": {utc(end)}}.Encode()
		if b.Fires == 0 {
			bar.Title = fmt.Sprintf("%s to %s: no fires", clock(b.Start, loc), clock(end, loc))
			continue
		}
		h := scale(b.LatenessP99Ms)
		bar.Y, bar.H = ch.Base-h, h
		in := scale(b.LatenessP50Ms)
		bar.Inner = &chartBar{X: bar.X + 1, W: max(1, bar.W-2), Y: ch.Base - in, H: in}
		bar.MaxY = ch.Base - scale(b.LatenessMaxMs)
		bar.Title = fmt.Sprintf("%s to %s: lateness median %s, 99th percentile %s, worst %s", clock(b.Start, loc), clock(end, loc),
			lateness(b.LatenessP50Ms), lateness(b.LatenessP99Ms), lateness(b.LatenessMaxMs))
	}
	ch.Title = "Lateness (fired less scheduled), " + span + ", logarithmic scale"
	ch.Caption = ch.Title + ": the tall bar is the 99th percentile, the narrow dark bar inside it the median, the dash the worst."
	if worstAt < 0 {
		ch.Desc = "No fires."
		return ch
	}
	ch.Desc = fmt.Sprintf("Over the span: median %s, 99th percentile %s, worst %s. The latest step by its 99th percentile is from %s: %s.",
		lateness(c.LatenessP50Ms), lateness(c.LatenessP99Ms), lateness(c.LatenessMaxMs), clock(c.Buckets[worstAt].Start, loc), lateness(worst))
	return ch
}

// niceCeil rounds n up to 1, 2 or 5 times a power of ten, for the top of
// a scale; 1 for nothing.
func niceCeil(n int) int {
	for p := 1; ; p *= 10 {
		for _, f := range []int{1, 2, 5} {
			if f*p >= n {
				return f * p
			}
		}
	}
}

// lateness writes a lateness in milliseconds for people: "3 ms",
// "1.2 s", "2m5s".
func lateness(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", ms)
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	}
	return d.Round(time.Second).String()
}

// activityWords says in a sentence what the charts of the last hours
// show.
func activityWords(c *recentChart, loc *time.Location) string {
	s := fmt.Sprintf("From %s to %s: %s", clock(c.From, loc), clock(c.To, loc), list.Thousands(c.Fires))
	if c.Fires == 1 {
		s += " execution"
	} else {
		s += " executions"
	}
	if c.Fires == 0 {
		return s + "."
	}
	s += fmt.Sprintf(", %s failed (%s%%). Lateness: median %s, 99th percentile %s, worst %s.", list.Thousands(c.Failures),
		strconv.FormatFloat(100*float64(c.Failures)/float64(c.Fires), 'f', 1, 64),
		lateness(c.LatenessP50Ms), lateness(c.LatenessP99Ms), lateness(c.LatenessMaxMs))
	return s
}

// timelineURL is the dashboard with the timeline by by.
func timelineURL(by string) string { return "/?by=" + url.QueryEscape(by) }

// viewBox is the viewBox of a chart width wide and height high.
func viewBox(width, height int) string { return fmt.Sprintf("0 0 %d %d", width, height) }

// took says how long a computation took: "12 ms", "1.4 s".
func took(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}
