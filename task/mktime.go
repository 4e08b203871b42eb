package task

import (
	"slices"
	"time"
)

// glibc's mktime(3), as far as systemd's search (systemd_next.go) leans
// on it: how it normalises a wall time and which instant it reads it as,
// on the zone's periods (zone.go).

// wallTime is a C struct tm: a wall-clock time whose fields may be out of
// range until mktime normalises them, and a daylight-saving flag, -1 for
// unknown.
type wallTime struct {
	year, mon, mday, hour, min, sec int // mon is 1 to 12
	isdst                           int
	wday                            time.Weekday
}

// compare orders wall times by their fields, the year first.
func (w wallTime) compare(o wallTime) int {
	a := [...]int{w.year, w.mon, w.mday, w.hour, w.min, w.sec}
	b := [...]int{o.year, o.mon, o.mday, o.hour, o.min, o.sec}
	return slices.Compare(a[:], b[:])
}

// wallClock is glibc's mktime in a zone, which systemd's search leans on.
type wallClock struct {
	zone
	// guess is glibc's first guess at the offset: the one its last
	// mktime read a wall time with. It picks between the two showings of
	// a wall time an autumn change repeats when no flag says which.
	guess int
}

// local is the wall time loc shows at t, with its flag.
func (k *wallClock) local(t time.Time) wallTime {
	p := k.period(t)
	u := t.UTC().Add(time.Duration(p.offset) * time.Second)
	w := wallTime{year: u.Year(), mon: int(u.Month()), mday: u.Day(), hour: u.Hour(), min: u.Minute(), sec: u.Second(), wday: u.Weekday()}
	if p.dst {
		w.isdst = 1
	}
	return w
}

// mktime normalises w as glibc's mktime does and returns its instant:
// fields out of range carry into the next ones (the 32nd of a month is
// in the next month); a wall time is read with the offset of its
// daylight-saving flag when it has one: with the other offset when the
// flag is wrong for it (03:00 in winter flagged summer time is 02:00), so
// a wall time in a spring-forward gap lands after the gap flagged 0 and
// before it flagged 1; and unflagged, a gap lands after the gap and a
// repeated time at its showing with the offset of the last mktime.
func (k *wallClock) mktime(w *wallTime) time.Time {
	wall := time.Date(w.year, time.Month(w.mon), w.mday, w.hour, w.min, w.sec, 0, time.UTC)
	at := k.instant(wall, w.isdst)
	k.guess = int(wall.Sub(at) / time.Second)
	*w = k.local(at)
	return at
}

func (k *wallClock) instant(wall time.Time, isdst int) time.Time {
	in, gap := k.instants(wall)
	if isdst >= 0 {
		var flagged []time.Time
		for _, t := range in {
			if k.period(t).dst == (isdst == 1) {
				flagged = append(flagged, t)
			}
		}
		switch {
		case len(flagged) == 1:
			return flagged[0]
		case len(flagged) == 2:
			return k.byGuess(wall, flagged)
		}
		// glibc looks a week, two weeks, ... either side for a time with
		// the flag (for as long as any zone keeps one flag: some 7
		// years) and reads the wall time with its offset.
		base := wall.Add(-time.Duration(gap.before) * time.Second)
		if len(in) > 0 {
			base = in[0]
		}
		const stride = 601200 * time.Second
		for d := stride; d < (457243200/2)*time.Second+stride; d += stride {
			for _, probe := range []time.Time{base.Add(-d), base.Add(d)} {
				if p := k.period(probe); p.dst == (isdst == 1) {
					return wall.Add(-time.Duration(p.offset) * time.Second)
				}
			}
		}
	}
	switch len(in) {
	case 0: // in a gap: read with the offset before it
		return wall.Add(-time.Duration(gap.before) * time.Second)
	case 1:
		return in[0]
	}
	return k.byGuess(wall, in)
}

// byGuess is the instant glibc settles on among those showing wall: it
// starts from its guess at the offset and corrects it until it shows wall.
func (k *wallClock) byGuess(wall time.Time, in []time.Time) time.Time {
	t := wall.Add(-time.Duration(k.guess) * time.Second)
	for range 6 {
		if slices.ContainsFunc(in, t.Equal) {
			return t
		}
		t = wall.Add(-time.Duration(k.period(t).offset) * time.Second)
	}
	return in[0]
}
