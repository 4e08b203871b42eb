package task

import (
	"sync"
	"time"
)

// Anchor resolves the definition's start against the time the command was
// accepted: the explicit start when there is one; otherwise, for a fixed
// frequency, the accepted time rounded up to the next whole time unit (as
// light-scheduler does), and the accepted time itself for one-shot and cron
// tasks (an rrule task has a start: its DTSTART). Every fire is anchor + k·period, so execution delays never drift
// the schedule.
func (d *Definition) Anchor(accepted int64) int64 {
	if d.Start != nil {
		return *d.Start
	}
	if d.Frequency != nil && d.Cron == "" && d.Rrule == "" {
		unit := d.Frequency.TimeUnit.Duration().Milliseconds()
		if unit > 0 {
			return ceilDiv(accepted, unit) * unit
		}
	}
	return accepted
}

// NextFire is the first occurrence strictly after after, for a task anchored
// at anchor; ok is false when there is none (a one-shot already fired, or
// past End). The first fire of a task is NextFire(anchor, anchor-1). A
// Window moves an occurrence due while it is closed to its next opening.
func (d *Definition) NextFire(anchor, after int64) (next int64, ok bool) {
	next, ok = d.rawNext(anchor, after)
	if !ok {
		return 0, false
	}
	if d.Window != nil {
		next = d.Window.open(Time(next).In(d.location())).UnixMilli()
	}
	if d.End != nil && next > *d.End {
		return 0, false
	}
	return next, true
}

// rawNext is NextFire before the window and the end apply.
func (d *Definition) rawNext(anchor, after int64) (int64, bool) {
	switch {
	case d.Rrule != "":
		return d.rruleNext(anchor, max(after, anchor-1))
	case d.Cron != "":
		t, ok := d.cronNextIn(Time(max(after, anchor-1)))
		return t.UnixMilli(), ok
	case d.Frequency != nil:
		p := d.Frequency.Period().Milliseconds()
		if p <= 0 {
			return 0, false
		}
		if after < anchor {
			return anchor, true
		}
		k := (after-anchor)/p + 1
		if loc := d.calendarDays(); loc != nil {
			return d.nthDay(anchor, after, k, loc), true
		}
		return anchor + k*p, true
	case d.Chained():
		return 0, false // released by its predecessors, never by the clock
	default:
		return anchor, after < anchor
	}
}

// calendarDays is the time zone whose calendar a task repeating every N
// days follows, keeping its local time of day across daylight-saving
// changes (a daily 22:30 in Europe/Paris stays 22:30 in summer), as cron
// does; nil for fixed intervals. In UTC, days are 24 hours anyway.
func (d *Definition) calendarDays() *time.Location {
	if d.Frequency == nil || d.Frequency.TimeUnit != Days || d.Cron != "" {
		return nil
	}
	if loc := d.location(); loc != time.UTC {
		return loc
	}
	return nil
}

// nthDay is the first occurrence strictly after after of a task repeating
// every N calendar days in loc from anchor, starting the search at the
// k-th occurrence (exact but for daylight-saving hours). A local time
// skipped by a change fires at the same distance after it (02:30 on a
// spring-forward night in Paris fires at 03:30).
func (d *Definition) nthDay(anchor, after, k int64, loc *time.Location) int64 {
	local := Time(anchor).In(loc)
	n := int(d.Frequency.Time)
	at := func(k int64) int64 { return local.AddDate(0, 0, int(k)*n).UnixMilli() }
	for k > 1 && at(k-1) > after {
		k--
	}
	for at(k) <= after {
		k++
	}
	return at(k)
}

// MisfireThreshold is how late an occurrence may be and still count as
// merely late: it fires as scheduled whatever the policy. Later than that,
// it was missed, and the task's Misfire policy decides.
const MisfireThreshold = 5 * time.Second

// Plan decides what to do with the occurrence due, still unfired at now.
// It returns whether to fire and which scheduled time to fire, and the
// occurrence to wait for after it (more is false when none is left).
//
// An occurrence missed by more than MisfireThreshold follows the policy:
// FIRE_ONCE fires the latest missed occurrence once; FIRE_ALL fires each in
// turn, oldest first, at most MaxMisfires of them; SKIP fires none and waits
// for the next one to come.
func (d *Definition) Plan(anchor, due, now int64) (fire int64, fires bool, following int64, more bool) {
	if now-due <= MisfireThreshold.Milliseconds() {
		following, more = d.NextFire(anchor, due)
		return due, true, following, more
	}
	switch d.Misfire {
	case Skip:
		following, more = d.NextFire(anchor, now)
		return 0, false, following, more
	case FireAll:
		fire = d.skipToLast(anchor, due, now, MaxMisfires)
	default:
		fire = d.skipToLast(anchor, due, now, 1)
	}
	following, more = d.NextFire(anchor, fire)
	return fire, true, following, more
}

// skipToLast returns the first of the last n occurrences due at now,
// walking from due.
func (d *Definition) skipToLast(anchor, due, now int64, n int) int64 {
	if d.Frequency != nil && d.Cron == "" && d.Rrule == "" && d.Window == nil && d.calendarDays() == nil {
		p := d.Frequency.Period().Milliseconds()
		last := anchor + (now-anchor)/p*p
		if d.End != nil && last > *d.End {
			last = anchor + (*d.End-anchor)/p*p
		}
		return max(due, last-int64(n-1)*p)
	}
	ring := make([]int64, 0, n)
	for at, i := due, 0; at <= now && i < 10*MaxMisfires; i++ {
		if len(ring) == n {
			ring = ring[1:]
		}
		ring = append(ring, at)
		next, ok := d.NextFire(anchor, at)
		if !ok {
			break
		}
		at = next
	}
	return ring[0]
}

// Occurrences counts the occurrences from one due at from to the one at
// to, both included: how many missed occurrences a catch-up fire at to
// stands for when Plan fired it in place of the one due at from. Like
// Plan it walks at most 10·MaxMisfires of them.
func (d *Definition) Occurrences(anchor, from, to int64) int {
	if to < from {
		return 0
	}
	if d.Frequency != nil && d.Cron == "" && d.Rrule == "" && d.Window == nil && d.calendarDays() == nil {
		return int((to-from)/d.Frequency.Period().Milliseconds()) + 1
	}
	n := 1
	for at := from; n < 10*MaxMisfires; {
		next, ok := d.NextFire(anchor, at)
		if !ok || next > to {
			break
		}
		at, n = next, n+1
	}
	return n
}

// StartAfter is the instant a new task's first occurrence comes strictly
// after, for a task anchored at anchor and accepted at accepted: a
// repeating schedule goes on from its next occurrence (the ones before
// it are history, not misfires); a one-shot due in the past still fires,
// late.
func (d *Definition) StartAfter(anchor, accepted int64) int64 {
	if d.Repeats() {
		return max(anchor-1, accepted-1)
	}
	return anchor - 1
}

// Fires previews the first n fires of a new task accepted at now, as the
// engine makes them: each is the instant it fires. An occurrence already
// missed at now fires at now as the misfire policy says (FIRE_ONCE once,
// FIRE_ALL each, SKIP none). A DELETE, a TRIGGER of a task that exists and
// a paused task fire nothing of their own schedule.
func (d *Definition) Fires(now int64, n int) []int64 {
	switch {
	case d.Action.KeyOnly(), d.Paused():
		return nil
	}
	anchor := d.Anchor(now)
	due, ok := d.NextFire(anchor, d.StartAfter(anchor, now))
	var out []int64
	for ok && len(out) < n {
		at := max(now, due)
		_, fires, following, more := d.Plan(anchor, due, at)
		if fires {
			out = append(out, at)
		}
		due, ok = following, more
	}
	return out
}

// NextFires previews up to n occurrences strictly after from.
func (d *Definition) NextFires(anchor, from int64, n int) []int64 {
	var out []int64
	for after := from; len(out) < n; {
		next, ok := d.NextFire(anchor, after)
		if !ok {
			break
		}
		out = append(out, next)
		after = next
	}
	return out
}

func (d *Definition) location() *time.Location {
	if loc := Location(d.Timezone); loc != nil {
		return loc
	}
	return time.UTC
}

// Location is the IANA time zone name, loaded once: time.LoadLocation
// reads the zone's file at every call, and the engine asks at every fire.
// Nil for "" or a name that is no zone.
func Location(name string) *time.Location {
	if name == "" {
		return nil
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil
	}
	zones.Store(name, loc)
	return loc
}

// zones keeps the time zones Location loaded.
var zones sync.Map

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}
