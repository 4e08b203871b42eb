package forecast

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// The timeline is what fires over the next 24 hours, minute by minute,
// by host or by topic: the busiest hosts or topics each on its own, the
// rest together, and the minutes far busier than is typical (bursts)
// named with what fires in them. It is computed in the background from
// every task's definition, the way the engine computes fires
// (task.Definition's NextFire and Plan), and served from memory.

const (
	// Minutes is how far the timeline looks ahead.
	Minutes = 24 * 60
	// timelineGroups is how many hosts or topics it shows each on its
	// own; the rest are shown together.
	timelineGroups = 8
	// burstFactor and burstAtLeast say how far above the typical minute
	// (the median) a burst is: at least burstFactor times the median and
	// burstAtLeast fires more than it.
	burstFactor  = 5
	burstAtLeast = 10
	// burstsMarked bounds the bursts marked on the chart and listed in
	// the API, busiest first; burstGroups the hosts or topics named for
	// each.
	burstsMarked = 10
	burstGroups  = 3
	// chainBudget bounds the fires of cron schedules kept (12 bytes
	// each): a schedule shared by many tasks is stepped through once;
	// past the budget, each task's own.
	chainBudget = 1 << 20
)

// Groupings of the timeline.
const (
	ByHost  = "host"
	ByTopic = "topic"
)

// Timeline is the next 24 hours of fires as computed at Computed.
type Timeline struct {
	// From is the first minute, UTC; minute m is From + m minutes.
	From     time.Time
	Computed time.Time
	// Took is how long computing it took.
	Took time.Duration
	// Tasks counts the tasks that fire in the next 24 hours; Unread
	// those whose definition could not be read, left out.
	Tasks, Unread int
	// Fires counts every fire; Total the fires of each minute.
	Fires int
	Total []int
	// Median is the typical minute's fires; Threshold the fires from
	// which a minute is a burst; BurstMinutes counts the bursts.
	Median       float64
	Threshold    int
	BurstMinutes int
	// ByHost and ByTopic are the fires by host and by topic.
	ByHost, ByTopic Grouping
}

// Grouping is the timeline by host or by topic.
type Grouping struct {
	By string
	// Groups are the busiest hosts or topics, most fires first; Other
	// the rest together (Other.Count of them), if any.
	Groups []Group
	Other  Group
	// Busiest is the busiest minute; Bursts the busiest bursts, at most
	// burstsMarked, busiest first. Each names the hosts or topics that
	// fire most in it.
	Busiest Minute
	Bursts  []Minute
}

// Group is the fires of one host or topic, or of Count of them
// together.
type Group struct {
	Name  string
	Count int
	Fires int
	// Series holds the fires of each minute.
	Series []int
	// Peak is the fires of its busiest minute, PeakMinute.
	Peak, PeakMinute int
}

// Minute is one minute's fires, with the hosts or topics firing
// most in it.
type Minute struct {
	Minute int
	Fires  int
	Groups []GroupFires
}

// GroupFires counts the fires of one host or topic.
type GroupFires struct {
	Name  string `json:"name"`
	Fires int    `json:"fires"`
}

// At is the start of minute m.
func (t *Timeline) At(m int) time.Time { return t.From.Add(time.Duration(m) * time.Minute) }

// Grouped is the timeline by host or by topic.
func (t *Timeline) Grouped(by string) *Grouping {
	if by == ByTopic {
		return &t.ByTopic
	}
	return &t.ByHost
}

// Forecaster computes timelines one after another, keeping what one
// computation read (the definitions, the chains of cron schedules) for
// the next. Its zero value is ready; it is not safe for concurrent use.
type Forecaster struct {
	chains      chains
	definitions definitions
}

// Compute is the timeline of the 24 hours from the minute of now, of
// the tasks of rows: those that fire before its end. It calls pause, when
// not nil, before each task it reads: the caller's way to give the cores
// up for a while (a task new since the last timeline is read from its
// JSON, 100,000 of them in about a tenth of a second of a core).
func (f *Forecaster) Compute(now time.Time, rows []storetype.TaskSchedule, pause func()) *Timeline {
	if pause == nil {
		pause = func() {}
	}
	t, defs := computeTimeline(now, rows, &f.chains, f.definitions, pause)
	f.definitions = defs
	return t
}

// plannedTask is a task read for the timeline.
type plannedTask struct {
	def          *definition
	anchor, next int64
	host, topic  int
	// chain is the chain of its cron schedule, once chained.
	chain   *cronChain
	chained bool
}

// use is a stream fired by tasks of one host or topic.
type use struct {
	s     *stream
	group int
}

// definitions keeps the definitions read for one timeline, by their
// JSON, for the next: most tasks are the same from one to the next, and
// reading JSON costs more than counting fires.
type definitions map[string]*definition

// definition is a task's definition as read for the timeline.
type definition struct {
	task.Definition
	// schedule names its cron schedule (see chains.of), once asked.
	schedule string
}

// read returns the definition of JSON def, from last if it was read for
// the last timeline, and keeps it in next.
func (last definitions) read(def string, next definitions) (*definition, error) {
	d, ok := last[def]
	if !ok {
		// The payload (data) is never read here: skipped, not decoded.
		var schedule struct {
			task.Definition
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(def), &schedule); err != nil {
			return nil, err
		}
		d = &definition{Definition: schedule.Definition}
	}
	next[def] = d
	return d, nil
}

// computeTimeline computes the fires of tasks over the 24 hours from the
// minute of now, with the chains of cron schedules kept in ch and the
// definitions read for the last timeline in defs, calling pause before
// each task it reads; it returns the definitions it read, for the next.
//
// It goes over the tasks twice: once to count every minute's fires and
// each host's and topic's, which says the busiest and the bursts; then
// to count the minutes of the busiest hosts and topics, and the hosts and
// topics of the bursts. Tasks firing the same stream are counted together
// (see fireCounter), each stream once a pass.
func computeTimeline(now time.Time, rows []storetype.TaskSchedule, ch *chains, defs definitions, pause func()) (*Timeline, definitions) {
	started := time.Now()
	now = now.UTC()
	from := now.Truncate(time.Minute)
	t := &Timeline{From: from, Computed: now, Total: make([]int, Minutes)}
	hosts, topics := names{}, names{}
	tasks := make([]plannedTask, 0, len(rows))
	read := make(definitions, len(rows))
	for _, r := range rows {
		pause()
		var p plannedTask
		d, err := defs.read(r.Definition, read)
		if err != nil || d.Paused() {
			t.Unread += btoi(err != nil)
			continue
		}
		p.def = d
		p.anchor, p.next = r.Anchor.UnixMilli(), r.NextFire.UnixMilli()
		p.host, p.topic = hosts.id(r.Host), topics.id(r.Topic)
		tasks = append(tasks, p)
	}
	c := newFireCounter(now, from, ch)
	// Fires now of occurrences missed, by host and topic; streams kept,
	// by host and topic with how many tasks fire each; tasks whose stream
	// is their own.
	hostLate, topicLate := make([]int, len(hosts.list)), make([]int, len(topics.list))
	hostUse, topicUse := map[use]int{}, map[use]int{}
	kept := map[*stream]int{}
	var own []int
	hostFires, topicFires := make([]int, len(hosts.list)), make([]int, len(topics.list))
	for i := range tasks {
		p := &tasks[i]
		late, s, shared := c.plan(p)
		fires := late + s.fires
		t.Total[0] += late
		hostLate[p.host] += late
		topicLate[p.topic] += late
		hostFires[p.host] += fires
		topicFires[p.topic] += fires
		t.Fires += fires
		t.Tasks += btoi(fires > 0)
		if shared {
			kept[s]++
			hostUse[use{s, p.host}]++
			topicUse[use{s, p.topic}]++
			continue
		}
		s.addTo(t.Total, 1)
		own = append(own, i)
	}
	for s, n := range kept {
		s.addTo(t.Total, n)
	}

	sorted := slices.Clone(t.Total)
	slices.Sort(sorted)
	t.Median = float64(sorted[len(sorted)/2-1]+sorted[len(sorted)/2]) / 2
	t.Threshold = max(int(math.Ceil(burstFactor*t.Median)), int(math.Ceil(t.Median))+burstAtLeast)
	busiest := 0
	var bursts []int
	for m, n := range t.Total {
		if n > t.Total[busiest] {
			busiest = m
		}
		if n >= t.Threshold {
			bursts = append(bursts, m)
		}
	}
	t.BurstMinutes = len(bursts)
	// Busiest first; of minutes as busy, the soonest.
	slices.SortStableFunc(bursts, func(a, b int) int { return cmp.Compare(t.Total[b], t.Total[a]) })
	bursts = bursts[:min(len(bursts), burstsMarked)]
	// The minutes whose hosts and topics are named: the bursts and the
	// busiest minute.
	var named []int
	for _, m := range append([]int{busiest}, bursts...) {
		if !slices.Contains(named, m) {
			named = append(named, m)
		}
	}

	var hostTop, topicTop []int
	t.ByHost, hostTop = newGrouping(ByHost, hosts.list, hostFires)
	t.ByTopic, topicTop = newGrouping(ByTopic, topics.list, topicFires)
	for _, own := range own {
		p := &tasks[own]
		_, s, _ := c.plan(p)
		hostUse[use{s, p.host}]++
		topicUse[use{s, p.topic}]++
	}
	hostIn := t.ByHost.fill(hostUse, hostLate, hostTop, named)
	topicIn := t.ByTopic.fill(topicUse, topicLate, topicTop, named)
	t.ByHost.finish(t, busiest, bursts, named, hostIn, hosts.list)
	t.ByTopic.finish(t, busiest, bursts, named, topicIn, topics.list)
	t.Took = time.Since(started)
	return t, read
}

// fill counts the minutes of g's groups from the streams their tasks
// fire (uses, with the tasks firing each) and their fires now of
// occurrences missed (late); places says which group a host or topic is
// (-1: none). It returns the fires of every host or topic in each minute
// of named.
func (g *Grouping) fill(uses map[use]int, late, places, named []int) []map[int]int {
	in := make([]map[int]int, len(named))
	for i := range in {
		in[i] = map[int]int{}
	}
	for u, n := range uses {
		if place := places[u.group]; place >= 0 {
			u.s.addTo(g.Groups[place].Series, n)
		}
		for i, m := range named {
			if f := u.s.at(m); f > 0 {
				in[i][u.group] += n * f
			}
		}
	}
	for id, n := range late {
		if n == 0 {
			continue
		}
		if place := places[id]; place >= 0 {
			g.Groups[place].Series[0] += n
		}
		if i := slices.Index(named, 0); i >= 0 {
			in[i][id] += n
		}
	}
	return in
}

// names numbers the names of hosts or topics.
type names struct {
	ids  map[string]int
	list []string
}

func (n *names) id(name string) int {
	if n.ids == nil {
		n.ids = map[string]int{}
	}
	id, ok := n.ids[name]
	if !ok {
		id = len(n.list)
		n.ids[name] = id
		n.list = append(n.list, name)
	}
	return id
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newGrouping picks the busiest of the hosts or topics named names,
// which fire fires each, the most first (of as many, by name); the
// others, if they fire, are Other. places maps each host or topic to its
// place among the groups, -1 for none.
func newGrouping(by string, names []string, fires []int) (g Grouping, places []int) {
	g.By = by
	places = make([]int, len(names))
	order := make([]int, 0, len(names))
	for id, n := range fires {
		places[id] = -1
		if n > 0 {
			order = append(order, id)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(fires[b], fires[a]), cmp.Compare(names[a], names[b]))
	})
	for i, id := range order {
		if i < timelineGroups {
			places[id] = len(g.Groups)
			g.Groups = append(g.Groups, Group{Name: names[id], Count: 1, Fires: fires[id], Series: make([]int, Minutes)})
			continue
		}
		g.Other.Count++
		g.Other.Fires += fires[id]
	}
	return g, places
}

// finish works out the rest of g once its groups' series are in: the
// other hosts or topics together, each group's peak, and what fires in
// the minutes named.
func (g *Grouping) finish(t *Timeline, busiest int, bursts, named []int, in []map[int]int, names []string) {
	if g.Other.Count > 0 {
		g.Other.Series = slices.Clone(t.Total)
		for _, gr := range g.Groups {
			for m, n := range gr.Series {
				g.Other.Series[m] -= n
			}
		}
	}
	for i := range g.Groups {
		g.Groups[i].peak()
	}
	g.Other.peak()
	minute := func(m int) Minute {
		f := Minute{Minute: m, Fires: t.Total[m]}
		counts := in[slices.Index(named, m)]
		ids := make([]int, 0, len(counts))
		for id, n := range counts {
			if n > 0 {
				ids = append(ids, id)
			}
		}
		slices.SortFunc(ids, func(a, b int) int {
			return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(names[a], names[b]))
		})
		for _, id := range ids[:min(len(ids), burstGroups)] {
			f.Groups = append(f.Groups, GroupFires{Name: names[id], Fires: counts[id]})
		}
		return f
	}
	g.Busiest = minute(busiest)
	for _, m := range bursts {
		g.Bursts = append(g.Bursts, minute(m))
	}
}

// peak finds the busiest minute of g, the soonest of as busy.
func (g *Group) peak() {
	for m, n := range g.Series {
		if n > g.Peak {
			g.Peak, g.PeakMinute = n, m
		}
	}
}
