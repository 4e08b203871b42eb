package task

import (
	"strings"
	"time"

	"github.com/adhocore/gronx"
)

// cronNext is the first fire of expr strictly after the instant after, in
// loc, with the daylight-saving rules of Linux cron (cronie), so a migrated
// crontab behaves as it did:
//
//   - an entry whose minute or hour field is a wildcard ("*", "*/5") follows
//     the wall clock: nothing in an hour skipped by the change, and both
//     copies of a repeated hour;
//   - an entry with fixed minutes and hours fires once in a repeated hour
//     (the first time), and its times skipped by the change fire once, right
//     after the change.
//
// Expressions are matched against wall-clock times; each matching wall time
// is then mapped to the instants that show it.
//
// Far from any change of loc's offset, the next matching wall time is the
// answer: that is found in one step, where the search that handles the
// changes steps through every matching time of several hours (15 ms for
// an entry firing every minute, at each of its fires).
func cronNext(expr string, loc *time.Location, after time.Time) (time.Time, bool) {
	if next, ok, sure := cronNextSteady(expr, loc, after); sure {
		return next, ok
	}
	if !cronFixed(expr) && len(strings.Fields(expr)) == 6 {
		return cronNextByWallClock(expr, loc, after)
	}
	return cronNextAcrossChanges(expr, loc, after)
}

// cronNextByWallClock is cronNext for an entry with a seconds field that
// follows the wall clock (not cronFixed): the first instant after after whose wall time
// matches, none in a skipped hour, each copy of a repeated one. Between
// two changes of offset, wall times and instants map one to one, in
// order: each such span is asked once, where the search across changes
// steps through every matching time of six hours (21,600 for an entry
// firing every second, more than it takes: it found none).
func cronNextByWallClock(expr string, loc *time.Location, after time.Time) (time.Time, bool) {
	z := zone{loc: loc}
	from, incl := after, false
	for range 1_000 {
		p := z.period(from)
		w, err := gronx.NextTickAfter(expr, naive(from.In(loc)), incl)
		if err != nil {
			return time.Time{}, false
		}
		if t := w.Add(-time.Duration(p.offset) * time.Second); p.end.IsZero() || t.Before(p.end) {
			return t, true
		}
		// Past this span: ask again from the start of the next one.
		from, incl = p.end, true
	}
	return time.Time{}, false
}

// steadyMargin is how far from a change of offset cronNextSteady must be
// to answer: the search across changes weighs wall times from 3 hours
// before after's to 3 hours past those of the best instant it has found,
// and a change may move the clock by up to 26 hours (-12:00 to +14:00);
// 12 hours more to spare.
const steadyMargin = 3*time.Hour + 12*time.Hour + 26*time.Hour

// cronNextSteady is cronNext when loc keeps one offset from steadyMargin
// before after to steadyMargin after the answer; sure is false when it
// does not, and cronNextAcrossChanges must answer. With one offset, wall
// times and instants map one to one, in order, so the first matching
// wall time after after's is the answer, as the search across changes
// would find.
func cronNextSteady(expr string, loc *time.Location, after time.Time) (next time.Time, ok, sure bool) {
	z := zone{loc: loc}
	p := z.period(after)
	if p.start.After(after.Add(-steadyMargin)) {
		return time.Time{}, false, false
	}
	w, err := gronx.NextTickAfter(expr, naive(after.In(loc)), false)
	if err != nil {
		return time.Time{}, false, false
	}
	next = w.Add(-time.Duration(p.offset) * time.Second)
	if !p.end.IsZero() && !next.Add(steadyMargin).Before(p.end) {
		return time.Time{}, false, false
	}
	return next, true, true
}

// cronNextAcrossChanges is cronNext anywhere, changes of offset
// included.
func cronNextAcrossChanges(expr string, loc *time.Location, after time.Time) (time.Time, bool) {
	fixed := cronFixed(expr)
	wall := naive(after.In(loc))
	// Wall time runs backwards by at most a few hours at a change: start
	// looking early enough to see the second copy of a repeated hour.
	cursor := wall.Add(-3 * time.Hour)
	var best time.Time
	for range 10_000 {
		w, err := gronx.NextTickAfter(expr, cursor, false)
		if err != nil {
			return time.Time{}, false
		}
		if !best.IsZero() && w.After(naive(best.In(loc)).Add(3*time.Hour)) {
			return best, true
		}
		for _, t := range instantsOf(w, loc, fixed) {
			if t.After(after) && (best.IsZero() || t.Before(best)) {
				best = t
			}
		}
		cursor = w
	}
	return best, !best.IsZero()
}

// cronFixed reports whether neither the minute nor the hour field is a
// wildcard: cronie applies its daylight-saving adjustments to those only.
func cronFixed(expr string) bool {
	f := strings.Fields(expr)
	if len(f) == 0 || strings.HasPrefix(f[0], "@") {
		return !strings.EqualFold(expr, "@hourly") && len(f) > 0
	}
	if len(f) == 6 { // leading seconds field
		f = f[1:]
	}
	return len(f) >= 2 && !strings.HasPrefix(f[0], "*") && !strings.HasPrefix(f[1], "*")
}

// naive reads a time's wall clock as if it were UTC, so that cron fields
// are matched and stepped without any zone arithmetic.
func naive(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// instantsOf maps a wall time of loc to the instants that show it: none in
// a skipped hour (for a fixed entry, the end of the skip instead), two in a
// repeated hour (for a fixed entry, only the first).
func instantsOf(w time.Time, loc *time.Location, fixed bool) []time.Time {
	z := zone{loc: loc}
	out, gap := z.instants(w)
	switch {
	case len(out) == 0 && fixed && !gap.at.IsZero():
		// Skipped by a change: fire once at the change itself.
		return []time.Time{gap.at}
	case len(out) == 2 && fixed:
		return out[:1]
	}
	return out
}
