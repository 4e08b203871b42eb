package forecast

// Counting a timeline's fires: each task's from its next fire on, minute
// by minute, sharing what tasks of one schedule fire alike (see
// timeline.go for what the counts make).

import (
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

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
	ch.start(f, f+Minutes*minuteMs)
	return &fireCounter{now: now.UnixMilli(), from: f, to: f + Minutes*minuteMs, chains: ch, streams: map[streamKey]*stream{}}
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
