package task

import (
	"cmp"
	"time"
)

// The search for a systemd calendar's next fire, as systemd 252's
// calendarspec.c does it (find_next and the functions it calls), on the
// wall clock of wallClock, the mktime(3) it leans on (mktime.go).

// systemdNext is the first fire strictly after after of the expressions,
// each in the zone it names or else in loc.
func systemdNext(specs []systemdSpec, loc *time.Location, after time.Time) (time.Time, bool) {
	var best time.Time
	for i := range specs {
		in := specs[i].loc
		if in == nil {
			in = loc
		}
		if t, ok := specs[i].next(in, after); ok && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	return best, !best.IsZero()
}

// systemdMaxRounds is where systemd's search gives up ("Infinite loop in
// calendar calculation"): the timer then never elapses.
const systemdMaxRounds = 1000

// next is the first fire strictly after after in loc, as systemd's
// calendar_spec_next_usec computes it: from the wall time a microsecond
// after after, by find_next.
func (s *systemdSpec) next(loc *time.Location, after time.Time) (time.Time, bool) {
	if after.Year() > systemdLastYear {
		return time.Time{}, false
	}
	usec := after.UnixMicro() + 1
	from := time.UnixMicro(usec)
	k := &wallClock{zone: zone{loc: loc}}
	k.guess = k.period(from).offset
	start := k.local(from)
	found, frac, ok := s.findNext(k, start, int(usec-from.Unix()*1e6))
	if !ok {
		return time.Time{}, false
	}
	return k.mktime(&found).Add(time.Duration(frac) * time.Microsecond), true
}

// findNext is systemd 252's find_next: it sets each field in turn, from
// the year down, to the first value the expression allows at or after
// the current one, and starts again from the top whenever mktime moves
// the time it made: past the end of a field (hour 26 is 02:00 the next
// day) or out of a gap of a clock change. Then the field below the
// largest one that changed goes back to its start, and only that one: so
// a carry into a new month or year keeps its hour (its day, its minute).
// A time mktime moves backwards counts as no match at that level. When
// it finds a time not after the one it started from, it moves an hour on
// and keeps the daylight-saving flag it holds from then on, which is how
// systemd gets past a clock change; after a thousand rounds it gives up.
func (s *systemdSpec) findNext(k *wallClock, start wallTime, startUsec int) (wallTime, int, bool) {
	c, usec := start, startUsec
	keepDST := false
	// settle is systemd's check after it sets a field: below 0 when no
	// value fits or mktime moves the time back, 0 when mktime moves it
	// on (c is then the time moved to), 1 when it stands.
	settle := func(r int) int {
		if r < 0 {
			return -1
		}
		return k.withinBounds(&c)
	}
	for range systemdMaxRounds {
		k.mktime(&c)
		if !keepDST {
			c.isdst = -1 // systemd's spec->dst: jobdrop reads no zone abbreviations
		}

		r := s.year.find(&c.year, nil)
		if r > 0 {
			c.mon, c.mday, c.hour, c.min, c.sec, usec = 1, 1, 0, 0, 0, 0
		}
		if settle(r) <= 0 {
			return c, 0, false
		}

		r = s.month.find(&c.mon, nil)
		if r > 0 {
			c.mday, c.hour, c.min, c.sec, usec = 1, 0, 0, 0, 0
		}
		if r = settle(r); r < 0 {
			c.year, c.mon, c.mday, c.hour, c.min, c.sec, usec = c.year+1, 1, 1, 0, 0, 0, 0
		}
		if r <= 0 {
			continue
		}

		r = s.day.find(&c.mday, s.monthEnd(k, c))
		if r > 0 {
			c.hour, c.min, c.sec, usec = 0, 0, 0, 0
		}
		if r = settle(r); r < 0 {
			c.mon, c.mday, c.hour, c.min, c.sec, usec = c.mon+1, 1, 0, 0, 0, 0
		}
		if r <= 0 {
			continue
		}

		if !s.weekdayMatches(k, c) {
			c.mday, c.hour, c.min, c.sec, usec = c.mday+1, 0, 0, 0, 0
			continue
		}

		r = s.hour.find(&c.hour, nil)
		if r > 0 {
			c.min, c.sec, usec = 0, 0, 0
		}
		if r = settle(r); r < 0 {
			c.mday, c.hour, c.min, c.sec, usec = c.mday+1, 0, 0, 0, 0
		}
		if r <= 0 {
			continue
		}

		r = s.minute.find(&c.min, nil)
		if r > 0 {
			c.sec, usec = 0, 0
		}
		if r = settle(r); r < 0 {
			c.hour, c.min, c.sec, usec = c.hour+1, 0, 0, 0
		}
		if r <= 0 {
			continue
		}

		micro := c.sec*1e6 + usec
		r = s.usec.find(&micro, nil)
		c.sec, usec = micro/1e6, micro%1e6
		if r = settle(r); r < 0 {
			c.min, c.sec, usec = c.min+1, 0, 0
		}
		if r <= 0 {
			continue
		}

		if order := c.compare(start); order < 0 || order == 0 && usec+1 <= startUsec {
			// Stuck before where it started: an hour on, keeping
			// the daylight-saving flag, lets mktime sort it out.
			keepDST = true
			c.hour++
			continue
		}
		return c, usec, true
	}
	return c, 0, false
}

// find is systemd's find_matching_component: it sets *v to the first value
// at or after it that the field allows and says 1, or says 0 when *v is
// allowed, or -1 when no value is. A repetition without an end goes on
// past the field's end (hour 26). For days counted from the end of the
// month, monthEnd turns a count n into the day of the month (-1 for none).
func (f systemdField) find(v *int, monthEnd func(n int) int) int {
	if f == nil {
		return 0
	}
	best, found := 0, false
	for _, c := range f {
		start, stop := c.start, c.stop
		if monthEnd != nil {
			start, stop = monthEnd(c.start), monthEnd(c.stop)
			if stop > 0 {
				start, stop = stop, start
			}
		}
		switch {
		case start >= *v:
			if !found || start < best {
				best, found = start, true
			}
		case c.repeat > 0:
			next := start + c.repeat*((*v-start+c.repeat-1)/c.repeat)
			if (!found || next < best) && (stop < 0 || next <= stop) {
				best, found = next, true
			}
		}
	}
	if !found {
		return -1
	}
	if best == *v {
		return 0
	}
	*v = best
	return 1
}

// monthEnd is systemd's find_end_of_month for c's month, or nil when the
// days count from the start: the day n days back from the end, counting
// the last day as 1, or -1 when that is not in the month.
func (s *systemdSpec) monthEnd(k *wallClock, c wallTime) func(n int) int {
	if !s.endOfMonth {
		return nil
	}
	return func(n int) int {
		t := c
		t.mon, t.mday = t.mon+1, 1-n
		k.mktime(&t)
		if t.mon != c.mon {
			return -1
		}
		return t.mday
	}
}

// weekdayMatches is systemd's matches_weekday: the weekday of c once
// mktime has normalised it.
func (s *systemdSpec) weekdayMatches(k *wallClock, c wallTime) bool {
	if s.weekdays == 0 {
		return true
	}
	k.mktime(&c)
	return s.weekdays&(1<<((int(c.wday)+6)%7)) != 0
}

// withinBounds is systemd's tm_within_bounds: 1 when mktime leaves c as
// it is; 0 when it moves c on, which it then sets to the time moved to
// with the field below the largest one that changed back at its start;
// -1 when it moves c back, or past systemd's last year.
func (k *wallClock) withinBounds(c *wallTime) int {
	if c.year > systemdLastYear {
		return -1
	}
	t := *c
	k.mktime(&t)
	var order int
	switch {
	case t.year != c.year:
		order, t.mon = cmp.Compare(t.year, c.year), 1
	case t.mon != c.mon:
		order, t.mday = cmp.Compare(t.mon, c.mon), 1
	case t.mday != c.mday:
		order, t.hour = cmp.Compare(t.mday, c.mday), 0
	case t.hour != c.hour:
		order, t.min = cmp.Compare(t.hour, c.hour), 0
	case t.min != c.min:
		order, t.sec = cmp.Compare(t.min, c.min), 0
	default:
		order = cmp.Compare(t.sec, c.sec)
	}
	switch {
	case order < 0:
		return -1
	case order > 0:
		*c = t
		return 0
	}
	return 1
}
