package web

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"sort"
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
	// timelineMinutes is how far the timeline looks ahead.
	timelineMinutes = 24 * 60
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
	byHost  = "host"
	byTopic = "topic"
)

// timeline is the next 24 hours of fires as computed at Computed.
type timeline struct {
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
	ByHost, ByTopic grouping
}

// grouping is the timeline by host or by topic.
type grouping struct {
	By string
	// Groups are the busiest hosts or topics, most fires first; Other
	// the rest together (Other.Count of them), if any.
	Groups []timelineGroup
	Other  timelineGroup
	// Busiest is the busiest minute; Bursts the busiest bursts, at most
	// burstsMarked, busiest first. Each names the hosts or topics that
	// fire most in it.
	Busiest minuteFires
	Bursts  []minuteFires
}

// timelineGroup is the fires of one host or topic, or of Count of them
// together.
type timelineGroup struct {
	Name  string
	Count int
	Fires int
	// Series holds the fires of each minute.
	Series []int
	// Peak is the fires of its busiest minute, PeakMinute.
	Peak, PeakMinute int
}

// minuteFires is one minute's fires, with the hosts or topics firing
// most in it.
type minuteFires struct {
	Minute int
	Fires  int
	Groups []groupFires
}

// groupFires counts the fires of one host or topic.
type groupFires struct {
	Name  string `json:"name"`
	Fires int    `json:"fires"`
}

// at is the start of minute m.
func (t *timeline) at(m int) time.Time { return t.From.Add(time.Duration(m) * time.Minute) }

// grouped is the timeline by host or by topic.
func (t *timeline) grouped(by string) *grouping {
	if by == byTopic {
		return &t.ByTopic
	}
	return &t.ByHost
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
// definitions read for the last timeline in defs; it returns the
// definitions it read, for the next.
//
// It goes over the tasks twice: once to count every minute's fires and
// each host's and topic's, which says the busiest and the bursts; then
// to count the minutes of the busiest hosts and topics, and the hosts and
// topics of the bursts. Tasks firing the same stream are counted together
// (see fireCounter), each stream once a pass.
func computeTimeline(now time.Time, rows []storetype.TaskSchedule, ch *chains, defs definitions) (*timeline, definitions) {
	started := time.Now()
	now = now.UTC()
	from := now.Truncate(time.Minute)
	t := &timeline{From: from, Computed: now, Total: make([]int, timelineMinutes)}
	hosts, topics := names{}, names{}
	tasks := make([]plannedTask, 0, len(rows))
	read := make(definitions, len(rows))
	for _, r := range rows {
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
	t.ByHost, hostTop = newGrouping(byHost, hosts.list, hostFires)
	t.ByTopic, topicTop = newGrouping(byTopic, topics.list, topicFires)
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
func (g *grouping) fill(uses map[use]int, late, places, named []int) []map[int]int {
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
func newGrouping(by string, names []string, fires []int) (g grouping, places []int) {
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
			g.Groups = append(g.Groups, timelineGroup{Name: names[id], Count: 1, Fires: fires[id], Series: make([]int, timelineMinutes)})
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
func (g *grouping) finish(t *timeline, busiest int, bursts, named []int, in []map[int]int, names []string) {
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
	minute := func(m int) minuteFires {
		f := minuteFires{Minute: m, Fires: t.Total[m]}
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
			f.Groups = append(f.Groups, groupFires{Name: names[id], Fires: counts[id]})
		}
		return f
	}
	g.Busiest = minute(busiest)
	for _, m := range bursts {
		g.Bursts = append(g.Bursts, minute(m))
	}
}

// peak finds the busiest minute of g, the soonest of as busy.
func (g *timelineGroup) peak() {
	for m, n := range g.Series {
		if n > g.Peak {
			g.Peak, g.PeakMinute = n, m
		}
	}
}

// fireCounter counts the fires of tasks in each minute of a timeline,
// as the engine would fire them: an occurrence due before now fires now,
// as the task's misfire policy says (task.Definition.Plan); the others
// fire when due, each after the one before (task.Definition.NextFire).
//
// It steps through a task's fires a minute at a time, never a fire at a
// time: the fires of a fixed interval in a minute are counted (a window
// opens and closes on whole minutes); a cron schedule fires at most once
// a second, and its fires, shared by many tasks, are stepped through once
// (a chain, kept from one timeline to the next). What a task fires from
// its next fire on is a stream, which the tasks that fire the same share:
// those of a cron schedule from the same fire on, those of an interval
// from the same fire on and on the same beat. Streams are kept up to
// streamBudget.
type fireCounter struct {
	now, from, to int64
	chains        *chains
	streams       map[streamKey]*stream
	// kept counts the minutes kept in streams.
	kept int
}

// streamBudget bounds the minutes of the streams kept while a timeline is
// computed (6 bytes each).
const streamBudget = 4 << 20

// streamKey says which tasks fire the same stream: the tasks of one cron
// chain from its fire j on, or those of a fixed interval (period) on the
// same beat (phase) from the same fire (due), up to the same end.
type streamKey struct {
	chain                   *cronChain
	j                       int
	period, phase, due, end int64
	ends                    bool
}

// stream is what tasks fire, minute by minute: count[i] fires in minute
// minute[i] of the timeline.
type stream struct {
	minute []uint16
	count  []int32
	fires  int
}

// add counts n fires in minute m, at or after the last counted.
func (s *stream) add(m, n int) {
	if k := len(s.minute); k > 0 && int(s.minute[k-1]) == m {
		s.count[k-1] += int32(n)
	} else {
		s.minute = append(s.minute, uint16(m))
		s.count = append(s.count, int32(n))
	}
	s.fires += n
}

// addTo adds times its fires of each minute to counts.
func (s *stream) addTo(counts []int, times int) {
	for i, m := range s.minute {
		counts[m] += times * int(s.count[i])
	}
}

// at is the fires of minute m.
func (s *stream) at(m int) int {
	i, ok := slices.BinarySearch(s.minute, uint16(m))
	if !ok {
		return 0
	}
	return int(s.count[i])
}

// none is the stream of a task that fires no more in the timeline.
var none = &stream{}

func newFireCounter(now, from time.Time, ch *chains) *fireCounter {
	f := from.UnixMilli()
	ch.start(f, f+timelineMinutes*minuteMs)
	return &fireCounter{now: now.UnixMilli(), from: f, to: f + timelineMinutes*minuteMs, chains: ch, streams: map[streamKey]*stream{}}
}

// perMinuteCap bounds the fires counted one by one in a minute, for a
// schedule that none of the ways above counts (a fixed interval whose
// next fire is not on it): past it, the task's count jumps to the next
// minute.
const perMinuteCap = 1000

// plan works out what p fires in the timeline: now, for occurrences
// missed (late), and from its next fire on (s, shared with other tasks
// when kept).
func (c *fireCounter) plan(p *plannedTask) (late int, s *stream, shared bool) {
	d := &p.def.Definition
	due, ok := p.next, true
	for ok && due < c.now {
		_, fires, following, more := d.Plan(p.anchor, due, c.now)
		late += btoi(fires)
		due, ok = following, more
	}
	if !ok || due >= c.to {
		return late, none, true
	}
	key, keyed := c.keyOf(p, due)
	if !keyed {
		return late, c.stream(p, due), false
	}
	if s, ok := c.streams[key]; ok {
		return late, s, true
	}
	if key.chain != nil {
		s = key.chain.stream(key.j, c.from)
	} else {
		s = c.stream(p, due)
	}
	if c.kept+len(s.minute) > streamBudget {
		return late, s, false
	}
	c.kept += len(s.minute)
	c.streams[key] = s
	return late, s, true
}

// keyOf says which stream p fires from its fire due on, if it can tell.
func (c *fireCounter) keyOf(p *plannedTask, due int64) (streamKey, bool) {
	d := &p.def.Definition
	if due < p.anchor {
		return streamKey{}, false
	}
	if d.Cron != "" {
		if !p.chained {
			p.chain, p.chained = c.chains.of(p.def), true
		}
		ch := p.chain
		if ch == nil {
			return streamKey{}, false
		}
		j, found := slices.BinarySearch(ch.at, due)
		return streamKey{chain: ch, j: j}, found
	}
	if period := fixedPeriod(d); period > 0 && d.Window == nil {
		k := streamKey{period: period, phase: (p.anchor%period + period) % period, due: due}
		if d.End != nil {
			k.end, k.ends = *d.End, true
		}
		return k, true
	}
	return streamKey{}, false
}

// fixedPeriod is d's interval in milliseconds when its fires are anchor +
// k·period, and 0 otherwise (cron, one-shot, and intervals of days, which
// follow the calendar of their zone).
func fixedPeriod(d *task.Definition) int64 {
	if d.Frequency == nil || d.Cron != "" || d.Frequency.TimeUnit == task.Days {
		return 0
	}
	return d.Frequency.Period().Milliseconds()
}

// stream steps through what p fires from its fire due on, a minute at a
// time.
func (c *fireCounter) stream(p *plannedTask, due int64) *stream {
	d := &p.def.Definition
	s := &stream{}
	period := fixedPeriod(d)
	for ok := true; ok && due < c.to; {
		m := int((due - c.from) / minuteMs)
		hi := c.from + int64(m+1)*minuteMs
		if period > 0 && due >= p.anchor {
			// Every anchor + k·period after due in the minute and not past
			// the end fires too, a window being open for the whole minute
			// if open at due.
			last := hi - 1
			if d.End != nil {
				last = min(last, *d.End)
			}
			n := 1
			if last > due {
				n += int((last-p.anchor)/period - (due-p.anchor)/period)
			}
			s.add(m, n)
			if d.Window == nil {
				// NextFire(anchor, last), without the call.
				due = p.anchor + ((last-p.anchor)/period+1)*period
				ok = d.End == nil || due <= *d.End
			} else {
				due, ok = d.NextFire(p.anchor, hi-1)
			}
			continue
		}
		n := 0
		for ok && due < hi && n < perMinuteCap {
			n++
			due, ok = d.NextFire(p.anchor, due)
		}
		s.add(m, n)
		if ok && due < hi {
			due, ok = d.NextFire(p.anchor, hi-1)
		}
	}
	return s
}

// minuteMs is a minute in milliseconds.
const minuteMs = int64(time.Minute / time.Millisecond)

// chains keeps the chains of the cron schedules of the tasks, from one
// timeline to the next: the next one's 24 hours are mostly this one's,
// and a chain moves on with them, stepping through its new fires only.
// Its zero value keeps none.
type chains struct {
	from, to int64
	byKey    map[string]*cronChain
	// kept counts the fires kept, up to chainBudget.
	kept int
}

// cronChain is every fire of one cron schedule (expression, dialect,
// zone, window and end) over a timeline, with the minute of each.
type cronChain struct {
	sched task.Definition
	at    []int64
	// next is the fire after the last of at, if more.
	next int64
	more bool
	// run is the index in runs of the minute of each fire.
	run  []int32
	runs []chainRun
	// used says whether a task of the timeline has it.
	used bool
}

// chainRun is the fires of one minute of a chain: at[start:end], start
// being the end of the run before; minute is its start, epoch ms.
type chainRun struct {
	minute int64
	end    int32
}

// start begins a timeline from from to to: chains not used by the last
// one are dropped, the others wait to be moved on when asked for.
func (cs *chains) start(from, to int64) {
	if cs.byKey == nil {
		cs.byKey = map[string]*cronChain{}
	}
	cs.from, cs.to = from, to
	cs.kept = 0
	for key, ch := range cs.byKey {
		if ch == nil || !ch.used {
			delete(cs.byKey, key)
			continue
		}
		ch.used = false
		cs.kept += len(ch.at)
	}
}

// of returns the chain of d's cron schedule over the timeline, stepping
// through it the first time and moving it on the first time in a
// timeline; nil when it would not fit in the budget.
func (cs *chains) of(d *definition) *cronChain {
	sched := task.Definition{Cron: d.Cron, CronDialect: d.CronDialect, Timezone: d.Timezone, End: d.End, Window: d.Window}
	if d.schedule == "" {
		b, _ := json.Marshal(&sched)
		d.schedule = string(b)
	}
	key := d.schedule
	ch, ok := cs.byKey[key]
	switch {
	case ok && (ch == nil || ch.used):
		return ch
	case !ok:
		ch = &cronChain{sched: sched}
		ch.next, ch.more = sched.NextFire(cs.from, cs.from-1)
	}
	if !cs.moveOn(ch) {
		ch = nil
	}
	cs.byKey[key] = ch
	return ch
}

// moveOn brings ch to the timeline: drops its fires before it, steps
// through those after its end up to the timeline's, and numbers its
// minutes. It reports false when the fires do not fit in the budget.
func (cs *chains) moveOn(ch *cronChain) bool {
	ch.used = true
	drop := sort.Search(len(ch.at), func(i int) bool { return ch.at[i] >= cs.from })
	ch.at = slices.Delete(ch.at, 0, drop)
	cs.kept -= drop
	for ch.more && ch.next < cs.to {
		if cs.kept >= chainBudget {
			cs.kept -= len(ch.at)
			return false
		}
		if ch.next >= cs.from {
			ch.at = append(ch.at, ch.next)
			cs.kept++
		}
		// Anchored at the timeline's start: past it, a cron schedule's
		// next fire does not depend on its anchor.
		ch.next, ch.more = ch.sched.NextFire(cs.from, ch.next)
	}
	ch.run, ch.runs = ch.run[:0], ch.runs[:0]
	for i, at := range ch.at {
		m := at - (at-cs.from)%minuteMs
		if len(ch.runs) == 0 || ch.runs[len(ch.runs)-1].minute != m {
			ch.runs = append(ch.runs, chainRun{minute: m})
		}
		ch.run = append(ch.run, int32(len(ch.runs)-1))
		ch.runs[len(ch.runs)-1].end = int32(i + 1)
	}
	return true
}

// stream is what a task fires from the chain's fire j on: the chain's
// fires from there.
func (ch *cronChain) stream(j int, from int64) *stream {
	s := &stream{}
	prev := int32(j)
	for _, run := range ch.runs[ch.run[j]:] {
		s.add(int((run.minute-from)/minuteMs), int(run.end-prev))
		prev = run.end
	}
	return s
}
