package task

// This file is the one place task uses github.com/teambition/rrule-go: it
// expands the rule's BY… parts into local wall times, and everything about
// instants (time zones, daylight saving, EXDATE, RDATE, UNTIL) is done here,
// so that the rest of the package sees only recurrence.next.

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/teambition/rrule-go"
)

// recurrence is a parsed rrule field for one DTSTART and one time zone: an
// RFC 5545 recurrence set. rrule-go runs on naive wall times (the local
// clock read as UTC), and each wall time it yields is mapped to an instant
// here, as RFC 5545 section 3.3.5 says and rrule-go does not: a local time
// skipped by a daylight-saving change takes the offset before the change
// (02:30 on a spring-forward night in Paris is 03:30 CEST), and a local time
// shown twice is the first of the two.
type recurrence struct {
	rule    *rrule.RRule // on naive wall times
	loc     *time.Location
	until   int64 // UNTIL as an instant; 0 when the rule has none
	rdates  []int64
	exdates map[int64]bool

	mu sync.Mutex
	// The set is walked forward, once, and queries move along it: the
	// engine asks for each task's next fire after the one it just fired.
	// lo is the last instance a query passed (or before the first), head
	// the one after it when looked at already, last the last instance
	// taken from the merge; pending are the rule's instances pulled but
	// not yet released, wall the last wall time pulled, done whether the
	// rule has no more, rdateAt the next RDATE.
	iter    rrule.Next
	started bool
	lo      int64
	head    int64
	hasHead bool
	last    int64
	pending instantHeap
	wall    time.Time
	done    bool
	rdateAt int
}

// ruleHelp says what an rrule field holds.
const ruleHelp = `must be an RFC 5545 rule such as "FREQ=MONTHLY;BYDAY=2TU" or "RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH", ` +
	`optionally followed by EXDATE:… and RDATE:… lines of local times YYYYMMDDTHHMMSS (or UTC with a Z)`

// parseRecurrence reads an rrule field: one RRULE (the "RRULE:" prefix is
// optional), then any EXDATE and RDATE lines, separated by line breaks or
// spaces. DTSTART is start, in loc; the field must not state its own.
func parseRecurrence(text string, loc *time.Location, start time.Time) (*recurrence, error) {
	r := &recurrence{loc: loc, exdates: map[int64]bool{}}
	var rule string
	for i, part := range strings.Fields(text) {
		name, value, found := strings.Cut(part, ":")
		if !found {
			if i > 0 {
				return nil, fmt.Errorf("%q is no EXDATE:… or RDATE:… line", part)
			}
			name, value = "RRULE", part
		}
		name, params, _ := strings.Cut(name, ";")
		switch strings.ToUpper(name) {
		case "RRULE":
			if rule != "" {
				return nil, errors.New("holds two RRULE lines; a task has one rule")
			}
			if value == "" {
				return nil, errors.New("has an empty RRULE")
			}
			rule = value
		case "EXDATE", "RDATE":
			ts, err := r.dates(params, value)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if name == "RDATE" {
				r.rdates = append(r.rdates, ts...)
			} else {
				for _, t := range ts {
					r.exdates[t] = true
				}
			}
		case "DTSTART":
			return nil, errors.New("must not hold DTSTART: the task's start is the rule's DTSTART")
		default:
			return nil, fmt.Errorf("has a line %s; only RRULE, EXDATE and RDATE are read", name)
		}
	}
	if rule == "" {
		return nil, errors.New("has no RRULE")
	}
	if strings.Contains(strings.ToUpper(rule), "DTSTART") {
		return nil, errors.New("must not hold DTSTART: the task's start is the rule's DTSTART")
	}
	opt, err := rrule.StrToROptionInLocation(rule, loc)
	if err != nil {
		return nil, fmt.Errorf("RRULE %q: %w", rule, err)
	}
	if !opt.Until.IsZero() {
		r.until = opt.Until.UnixMilli()
		opt.Until = naive(opt.Until.In(loc))
	}
	opt.Dtstart = naive(start.In(loc)).Truncate(time.Second)
	if r.rule, err = rrule.NewRRule(*opt); err != nil {
		return nil, fmt.Errorf("RRULE %q: %w", rule, err)
	}
	slices.Sort(r.rdates)
	r.rdates = slices.Compact(r.rdates)
	return r, nil
}

// dates reads the comma-separated values of an EXDATE or RDATE line with
// its parameters (TZID=…, VALUE=DATE or VALUE=DATE-TIME): local times in
// the TZID's zone or the task's, UTC times with a Z, dates as midnight.
func (r *recurrence) dates(params, value string) ([]int64, error) {
	loc := r.loc
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(p, "=")
		switch strings.ToUpper(k) {
		case "":
		case "TZID":
			if loc = Location(v); loc == nil {
				return nil, fmt.Errorf("unknown TZID %q", v)
			}
		case "VALUE":
			if v = strings.ToUpper(v); v != "DATE" && v != "DATE-TIME" {
				return nil, fmt.Errorf("VALUE=%s: only DATE and DATE-TIME are read", v)
			}
		default:
			return nil, fmt.Errorf("unknown parameter %s", k)
		}
	}
	var out []int64
	for v := range strings.SplitSeq(value, ",") {
		var t time.Time
		var err error
		switch {
		case strings.HasSuffix(v, "Z"):
			t, err = time.Parse("20060102T150405Z", v)
		case len(v) == 8:
			var w time.Time
			if w, err = time.Parse("20060102", v); err == nil {
				t, _ = instantOf(w, loc)
			}
		default:
			var w time.Time
			if w, err = time.Parse("20060102T150405", v); err == nil {
				t, _ = instantOf(w, loc)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%q is no date-time YYYYMMDDTHHMMSS[Z] or date YYYYMMDD", v)
		}
		out = append(out, t.UnixMilli())
	}
	return out, nil
}

// instantOf maps a wall time of loc (read as UTC) to its instant as RFC 5545
// says: the first of two in a repeated hour; in a skipped one, the offset
// before the change. gap is how far the change moved the clock forward
// when w was skipped, zero otherwise.
func instantOf(w time.Time, loc *time.Location) (t time.Time, gap time.Duration) {
	z := zone{loc: loc}
	in, g := z.instants(w)
	switch {
	case len(in) > 0:
		return in[0], 0
	case !g.at.IsZero():
		return w.Add(-time.Duration(g.before) * time.Second), time.Duration(g.after-g.before) * time.Second
	}
	_, off := w.In(loc).Zone() // no zone shows no wall time but in a gap
	return w.Add(-time.Duration(off) * time.Second), 0
}

// next is the first instance of the set strictly after after.
func (r *recurrence) next(after int64) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started || after < r.lo {
		r.restart()
	}
	for {
		if !r.hasHead {
			t, ok := r.take()
			if !ok {
				return 0, false
			}
			r.head, r.hasHead = t, true
		}
		if r.head > after {
			return r.head, true
		}
		r.lo, r.hasHead = r.head, false
	}
}

// restart walks the set again from its start.
func (r *recurrence) restart() {
	r.iter = r.rule.Iterator()
	r.started, r.lo, r.hasHead, r.last = true, -1<<63, false, -1<<63
	r.pending = r.pending[:0]
	r.wall, r.done, r.rdateAt = time.Time{}, false, 0
}

// take is the next instance of the set in order: the rule's and the RDATEs
// merged, EXDATEs and duplicates left out.
func (r *recurrence) take() (int64, bool) {
	for {
		t, ok := r.ruleNext()
		if r.rdateAt < len(r.rdates) && (!ok || r.rdates[r.rdateAt] < t) {
			if ok {
				heap.Push(&r.pending, pendingInstant{at: t})
			}
			t, ok = r.rdates[r.rdateAt], true
			r.rdateAt++
		}
		if !ok {
			return 0, false
		}
		if t <= r.last || r.exdates[t] {
			continue
		}
		r.last = t
		return t, true
	}
}

// ruleNext is the rule's next instance in time order. Wall times come in
// order, and so do their instants, but for those in a skipped hour: taking
// the offset before the change, they land among the instants of the hour
// after it. So an instance of a skipped hour is held until the wall clock
// the rule reached has passed it by the size of the change.
func (r *recurrence) ruleNext() (int64, bool) {
	for {
		if len(r.pending) > 0 {
			p := r.pending[0]
			if r.done || p.release.IsZero() || !r.wall.Before(p.release) {
				heap.Pop(&r.pending)
				if r.until != 0 && p.at > r.until {
					continue
				}
				return p.at, true
			}
		}
		if r.done {
			return 0, false
		}
		w, ok := r.iter()
		if !ok {
			r.done = true
			continue
		}
		r.wall = w
		t, gap := instantOf(w, r.loc)
		p := pendingInstant{at: t.UnixMilli()}
		if gap > 0 {
			p.release = w.Add(gap)
		}
		heap.Push(&r.pending, p)
	}
}

// pendingInstant is an instance of the rule pulled but not yet released:
// release is the wall time the rule must reach first (zero: none).
type pendingInstant struct {
	at      int64
	release time.Time
}

type instantHeap []pendingInstant

func (h instantHeap) Len() int           { return len(h) }
func (h instantHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h instantHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *instantHeap) Push(x any)        { *h = append(*h, x.(pendingInstant)) }
func (h *instantHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// recurrences caches parsed rules by field, time zone and start: parsing
// costs tens of microseconds, and a cached recurrence also keeps its place
// in the set, so the engine's next fire is one step, not a walk from
// DTSTART. Bounded: past maxRecurrences it starts afresh.
var recurrences = struct {
	sync.Mutex
	m map[recurrenceKey]*recurrence
}{m: map[recurrenceKey]*recurrence{}}

type recurrenceKey struct {
	text, zone string
	start      int64
}

const maxRecurrences = 10_000

// recurrence is the definition's parsed rrule for DTSTART anchor, nil when
// it does not parse (Validate says why).
func (d *Definition) recurrence(anchor int64) *recurrence {
	k := recurrenceKey{d.Rrule, d.Timezone, anchor}
	recurrences.Lock()
	r, ok := recurrences.m[k]
	recurrences.Unlock()
	if ok {
		return r
	}
	r, err := parseRecurrence(d.Rrule, d.location(), Time(anchor))
	if err != nil {
		r = nil
	}
	recurrences.Lock()
	if len(recurrences.m) >= maxRecurrences {
		clear(recurrences.m)
	}
	recurrences.m[k] = r
	recurrences.Unlock()
	return r
}

// rruleNext is the first instance of the rrule strictly after after.
func (d *Definition) rruleNext(anchor, after int64) (int64, bool) {
	r := d.recurrence(anchor)
	if r == nil {
		return 0, false
	}
	return r.next(after)
}

// rruleProblem says what is wrong with an rrule field, "" when nothing is.
func (d *Definition) rruleProblem(start int64) string {
	if _, err := parseRecurrence(d.Rrule, d.location(), Time(start)); err != nil {
		return err.Error() + "; " + ruleHelp
	}
	return ""
}
