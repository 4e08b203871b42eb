package task

import (
	"time"
)

// calendar is a parsed Quartz or Spring cron expression: the values each
// field matches and the special day rules. Both dialects are matched
// against wall-clock times; they differ in how they read the text and in
// what they do at a daylight-saving change, which quartzNext and springNext
// say.
type calendar struct {
	second, minute, hour bits // 0-59, 0-59, 0-23
	month                bits // 1-12
	// years are the years matched, nil for every year.
	years *yearBits
	// dom and dow must both match a day. A Quartz expression always has
	// one of them "?" (every day); Spring ANDs them.
	dom, dow dayField
}

// bits is a set of small numbers.
type bits uint64

func (b bits) has(v int) bool { return v >= 0 && v < 64 && b&(1<<uint(v)) != 0 }

// from is the smallest member at least v, or -1.
func (b bits) from(v int) int {
	for ; v < 64; v++ {
		if b.has(v) {
			return v
		}
	}
	return -1
}

// span sets every step-th number from lo to hi.
func span(lo, hi, step int) bits {
	var b bits
	for v := lo; v <= hi; v += step {
		b |= 1 << uint(v)
	}
	return b
}

// The years a cron expression can name: Quartz stops looking in 2999.
const (
	firstYear = 1970
	lastYear  = 2999
)

// yearBits is a set of years from firstYear to lastYear.
type yearBits [(lastYear - firstYear + 64) / 64]uint64

func (y *yearBits) set(year int) {
	if year >= firstYear && year <= lastYear {
		i := year - firstYear
		y[i/64] |= 1 << uint(i%64)
	}
}

func (y *yearBits) has(year int) bool {
	if y == nil {
		return year >= firstYear && year <= lastYear
	}
	if year < firstYear || year > lastYear {
		return false
	}
	i := year - firstYear
	return y[i/64]&(1<<uint(i%64)) != 0
}

// dayField is the day-of-month or the day-of-week field: a set of plain
// values (days 1-31, or weekdays with Sunday 0) and special rules, any of
// which matching is enough.
type dayField struct {
	all   bool
	set   bits
	rules []dayRule
}

// dayRule is one of the special day forms, each computed per month.
type dayRule struct {
	kind dayKind
	// n is the offset from the last day (lastDay, lastWeekday), the day of
	// the month (nearestWeekday) or the weekday (lastOf, nth); k is the
	// ordinal of nth.
	n, k int
}

type dayKind int

const (
	lastDay        dayKind = iota // L, L-n
	lastWeekday                   // LW, L-nW (Quartz)
	nearestWeekday                // nW
	lastOf                        // nL in the day-of-week field
	nth                           // n#k
)

// month is what the day rules need to know of one month.
type month struct {
	days  int          // its length
	first time.Weekday // the weekday of its 1st
	// quartzW says which nearest-weekday rule applies: Quartz and Spring
	// differ on a Sunday that is the last day of the month.
	quartzW bool
}

func monthOf(y int, m time.Month, quartz bool) month {
	first := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	return month{days: first.AddDate(0, 1, -1).Day(), first: first.Weekday(), quartzW: quartz}
}

func (mo month) weekday(day int) time.Weekday {
	return time.Weekday((int(mo.first) + day - 1 + 7*6) % 7)
}

// matches reports whether day of the month mo matches the field; dow says
// the field is the day-of-week one.
func (f *dayField) matches(mo month, day int, dow bool) bool {
	if f.all {
		return true
	}
	if dow {
		if f.set.has(int(mo.weekday(day))) {
			return true
		}
	} else if f.set.has(day) {
		return true
	}
	for _, r := range f.rules {
		if r.day(mo) == day {
			return true
		}
	}
	return false
}

// day is the day of the month mo a rule falls on, or 0 when it falls on
// none: L-30 in February, the fifth Monday of a month with four, 31W in
// April.
func (r dayRule) day(mo month) int {
	d := 0
	switch r.kind {
	case lastDay:
		d = mo.days - r.n
	case lastWeekday:
		d = mo.nearWeekday(mo.days-r.n, true)
	case nearestWeekday:
		// Quartz moves a day the month lacks too, by the weekday its
		// lenient calendar gives it: 31W in April is the 30th when 1 May
		// is a Saturday. Spring only moves a day the month has.
		if r.n <= mo.days || mo.quartzW {
			d = mo.nearWeekday(r.n, mo.quartzW)
		}
	case lastOf:
		d = mo.days - (int(mo.weekday(mo.days))-r.n+7)%7
	case nth:
		d = 1 + (r.n-int(mo.first)+7)%7 + 7*(r.k-1)
	}
	if d < 1 || d > mo.days {
		return 0
	}
	return d
}

// nearWeekday moves day off a weekend to the nearest weekday of the same
// month: a Saturday to the Friday before (the Monday after for the 1st), a
// Sunday to the Monday after, or for Quartz to the Friday before when it is
// the month's last day. A day outside the month has its weekday counted
// as the calendar does, as Quartz's lenient calendar does.
func (mo month) nearWeekday(day int, quartz bool) int {
	switch mo.weekday(day) {
	case time.Saturday:
		if day == 1 {
			return day + 2
		}
		return day - 1
	case time.Sunday:
		if quartz && day == mo.days {
			return day - 2
		}
		return day + 1
	}
	return day
}

// nextWall is the first wall-clock time at or after w (read as UTC, whole
// seconds) that the expression matches, whether or not the time zone shows
// it; ok is false when none comes before the year 3000.
func (c *calendar) nextWall(w time.Time, quartz bool) (time.Time, bool) {
	y, m, d := w.Date()
	h, mi, s := w.Clock()
	for y <= lastYear {
		if !c.years.has(y) {
			y, m, d, h, mi, s = y+1, 1, 1, 0, 0, 0
			continue
		}
		if !c.month.has(int(m)) {
			if next := c.month.from(int(m) + 1); next > 0 && next <= 12 {
				m = time.Month(next)
			} else {
				y, m = y+1, 1
			}
			d, h, mi, s = 1, 0, 0, 0
			continue
		}
		mo := monthOf(y, m, quartz)
		for ; d <= mo.days; d, h, mi, s = d+1, 0, 0, 0 {
			if !c.dom.matches(mo, d, false) || !c.dow.matches(mo, d, true) {
				continue
			}
			if hh, mm, ss, ok := c.nextClock(h, mi, s); ok {
				return time.Date(y, m, d, hh, mm, ss, 0, time.UTC), true
			}
		}
		if m == 12 {
			y, m = y+1, 1
		} else {
			m++
		}
		d, h, mi, s = 1, 0, 0, 0
	}
	return time.Time{}, false
}

// nextClock is the first time of day at or after h:mi:s that the
// expression matches.
func (c *calendar) nextClock(h, mi, s int) (int, int, int, bool) {
	for ; h < 24; h, mi, s = h+1, 0, 0 {
		if !c.hour.has(h) {
			continue
		}
		for ; mi < 60; mi, s = mi+1, 0 {
			if !c.minute.has(mi) {
				continue
			}
			if ss := c.second.from(s); ss >= 0 && ss < 60 {
				return h, mi, ss, true
			}
		}
	}
	return 0, 0, 0, false
}

// nextSecond is the first whole second strictly after after.
func nextSecond(after time.Time) time.Time {
	return time.Unix(after.Unix()+1, 0)
}

// quartzNext is the first fire strictly after after, as Quartz 2.3's
// CronExpression.getNextValidTimeAfter computes it in loc. Quartz works
// on a lenient java.util.Calendar's wall-clock fields: it goes on from
// the wall time one second after after, a field at a time (quartzStep),
// and the calendar moves a wall time that a spring-forward change skips
// on by the size of the change, where the search goes on. So a skipped
// wall time never fires (02:30 becomes 03:30, where the hour no longer
// matches), nor may some that are not skipped: in Pacific/Chatham, whose
// clock goes from 02:45 to 03:45, a search that moves on to the hour 3
// sets 03:00, which becomes 04:00, so "0 50 3 * * ?" does not fire at
// 03:50 that day. A wall time shown
// twice by an autumn change fires once, at its second showing, standard
// time, which is where the calendar puts an ambiguous wall time. So after
// a fire at 01:59 in the first copy of a repeated hour, the next minute
// is 02:00 in the second copy.
func (c *calendar) quartzNext(loc *time.Location, after time.Time) (time.Time, bool) {
	z := zone{loc: loc}
	w := naive(nextSecond(after).In(loc))
	for range 10_000 {
		next, hour, fire, ok := c.quartzStep(w)
		if !ok {
			return time.Time{}, false
		}
		in, _ := z.instants(next)
		if len(in) > 0 && fire {
			return in[len(in)-1], true
		}
		if len(in) == 0 {
			next = z.lenient(next)
			if hour >= 0 && next.Hour() != hour {
				// Quartz's setCalendarHour: when the calendar moved the
				// hour it set, it sets the one after.
				y, m, d := next.Date()
				next = z.lenient(time.Date(y, m, d, hour+1, next.Minute(), next.Second(), 0, time.UTC))
			}
		}
		w = next
	}
	return time.Time{}, false
}

// quartzStep is one round of Quartz's search from the wall time w, which
// the zone shows: the wall time it sets next, with fire true when that is
// the fire (w's seconds moved on within its minute, the rest matching).
// Quartz looks at the second, then the minute, the hour, and the day, and
// where one does not match it moves that field on, resets those below to
// 0 and starts again: a second past the minute's is the first of the
// next minute; a minute that does not match, the next that does at 0
// seconds; an hour, the next at 00:00; a day, the next matching one at
// midnight. hour is the hour it sets with setCalendarHour, -1 for none.
// ok is false when no day matches before the year 3000.
func (c *calendar) quartzStep(w time.Time) (next time.Time, hour int, fire, ok bool) {
	y, mo, d := w.Date()
	h, mi, s := w.Clock()
	at := func(d, h, mi, s int) time.Time { return time.Date(y, mo, d, h, mi, s, 0, time.UTC) }
	if ss := c.second.from(s); ss >= 0 && ss < 60 {
		s = ss
	} else {
		return at(d, h, mi+1, c.second.from(0)), -1, false, true
	}
	if !c.minute.has(mi) {
		if next := c.minute.from(mi); next >= 0 && next < 60 {
			return at(d, h, next, 0), h, false, true
		}
		if h+1 == 24 {
			return at(d, 24, c.minute.from(0), 0), -1, false, true // setCalendarHour(24) leaves it
		}
		return at(d, h+1, c.minute.from(0), 0), h + 1, false, true
	}
	if !c.hour.has(h) {
		if next := c.hour.from(h); next >= 0 && next < 24 {
			return at(d, next, 0, 0), next, false, true
		}
		first := c.hour.from(0)
		return at(d+1, first, 0, 0), first, false, true
	}
	mon := monthOf(y, mo, true)
	if !c.years.has(y) || !c.month.has(int(mo)) || !c.dom.matches(mon, d, false) || !c.dow.matches(mon, d, true) {
		day, ok := c.nextWall(at(d+1, 0, 0, 0), true)
		if !ok {
			return time.Time{}, 0, false, false
		}
		y, mo, d = day.Date()
		return at(d, 0, 0, 0), -1, false, true
	}
	return at(d, h, mi, s), -1, true, true
}

// springNext is the first fire strictly after after, as Spring 6's
// CronExpression.next computes it on a ZonedDateTime in loc: a wall time
// a spring-forward change skips never fires (ZonedDateTime moves it past
// the gap, where the field no longer matches: Spring's own daylightSaving
// test), and a wall time shown twice fires at both showings, since Spring
// steps the time line and adjusts fields with the offset in force.
func (c *calendar) springNext(loc *time.Location, after time.Time) (time.Time, bool) {
	first := nextSecond(after)
	// A wall time before first's shows again after it when the clock goes
	// back within the next hours: start that much earlier.
	w := naive(first.In(loc)).Add(-offsetDrop(first, first.Add(3*time.Hour), loc))
	var best, bestWall time.Time
	var slack time.Duration
	for range 100_000 {
		next, ok := c.nextWall(w, false)
		if !ok || !best.IsZero() && next.Sub(bestWall) >= slack {
			break
		}
		in := instants(next, loc)
		for _, t := range in {
			if !t.Before(first) && (best.IsZero() || t.Before(best)) {
				best, bestWall = t, next
				// A later wall time shows before best only where the
				// offset is larger than best's by more than the walls differ.
				slack = max(offsetDrop(best.Add(-3*time.Hour), best, loc), offsetDrop(best.Add(3*time.Hour), best, loc), time.Second)
			}
		}
		if len(in) == 0 {
			w = afterGap(next, loc)
		} else {
			w = next.Add(time.Second)
		}
	}
	return best, !best.IsZero()
}

// offsetDrop is how much larger loc's offset is at a than at b, or 0.
func offsetDrop(a, b time.Time, loc *time.Location) time.Duration {
	_, oa := a.In(loc).Zone()
	_, ob := b.In(loc).Zone()
	return max(0, time.Duration(oa-ob)*time.Second)
}
