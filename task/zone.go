package task

import (
	"sort"
	"sync"
	"time"
)

// Every dialect matches its expression against wall-clock times and then
// asks which instants show the wall time it found, and where a gap ends
// when none does. This file answers both from the periods of the zone's
// offsets, for the Quartz, Spring and unix cron dialects and for the
// mktime of the systemd dialect alike. It takes no guess at how far the
// offset is from UTC: Pacific/Chatham is 13:45 ahead of UTC in its
// summer, Pacific/Kiritimati 14 hours, Pacific/Apia was 14 hours ahead
// once it had skipped 30 December 2011.

// zonePeriod is a stretch of time over which a zone keeps one offset
// (seconds east of UTC) and one daylight-saving flag.
type zonePeriod struct {
	start, end time.Time // end is zero for no end
	offset     int
	dst        bool
}

func (p zonePeriod) has(t time.Time) bool {
	return !t.Before(p.start) && (p.end.IsZero() || t.Before(p.end))
}

// same says whether q keeps p's offset and flag.
func (p zonePeriod) same(q zonePeriod) bool { return p.offset == q.offset && p.dst == q.dst }

// The years zonePeriods lists: systemd's years and one either side.
// Times outside them (Quartz and Spring look up to the year 2999) are
// looked up one at a time.
var (
	zoneTableStart = time.Date(systemdFirstYear-1, 1, 1, 0, 0, 0, 0, time.UTC)
	zoneTableEnd   = time.Date(systemdLastYear+2, 1, 1, 0, 0, 0, 0, time.UTC)
)

// zonePeriods are loc's periods from zoneTableStart to zoneTableEnd,
// looked up once per zone: the searches ask about the same days over and
// over, and Go looks a zone up slowly past the last change its database
// lists.
func zonePeriods(loc *time.Location) []zonePeriod {
	if ps, ok := zoneTables.Load(loc.String()); ok {
		return ps.([]zonePeriod)
	}
	var ps []zonePeriod
	for t := zoneTableStart; t.Before(zoneTableEnd); {
		p := lookUpPeriod(loc, t)
		if n := len(ps); n > 0 && ps[n-1].same(p) {
			ps[n-1].end = p.end // no change, only a bound Go put at the end of a year
		} else {
			ps = append(ps, p)
		}
		if p.end.IsZero() {
			break
		}
		t = p.end
	}
	zoneTables.Store(loc.String(), ps)
	return ps
}

// zoneTables are the zonePeriods of the zones asked about, by name.
var zoneTables sync.Map

// lookUpPeriod asks Go for the zone period t is in.
func lookUpPeriod(loc *time.Location, t time.Time) zonePeriod {
	p := goPeriod(loc, t)
	if p.end.IsZero() || p.end.After(t) {
		return p
	}
	// Go's ZoneBounds gives, for the last day of a leap year past the
	// changes its database lists, an end that has passed: find the true
	// one, an hour at a time, then to the second.
	p.end = t
	for limit := t.Add(366 * 24 * time.Hour); goPeriod(loc, p.end).same(p); {
		if p.end = p.end.Add(time.Hour); !p.end.Before(limit) {
			return p
		}
	}
	for lo := p.end.Add(-time.Hour); p.end.Sub(lo) > time.Second; {
		if mid := lo.Add(p.end.Sub(lo) / 2); goPeriod(loc, mid).same(p) {
			lo = mid
		} else {
			p.end = mid
		}
	}
	return p
}

// goPeriod is the zone period t is in as Go's ZoneBounds gives it.
func goPeriod(loc *time.Location, t time.Time) zonePeriod {
	in := t.In(loc)
	start, end := in.ZoneBounds()
	if start.IsZero() {
		start = time.Unix(-1<<62, 0)
	}
	_, off := in.Zone()
	return zonePeriod{start: start, end: end, offset: off, dst: in.IsDST()}
}

// zone is a time zone seen as its periods.
type zone struct {
	loc *time.Location
	// periods are loc's, from zonePeriods, nil until the first question.
	periods []zonePeriod
}

// period is the zone period t is in.
func (z *zone) period(t time.Time) zonePeriod {
	if z.periods == nil {
		z.periods = zonePeriods(z.loc)
	}
	ps := z.periods
	if i := sort.Search(len(ps), func(i int) bool { return ps[i].end.IsZero() || t.Before(ps[i].end) }); i < len(ps) && ps[i].has(t) {
		return ps[i]
	}
	return lookUpPeriod(z.loc, t) // outside the table's years
}

// zoneGap is a change of offset forward, which skips the wall times from
// the clock before it to the clock after it.
type zoneGap struct {
	at            time.Time // the instant of the change; zero for none
	before, after int       // the offsets before and after it
}

// end is the first wall time after the gap (read as UTC): the wall clock
// at the change.
func (g zoneGap) end() time.Time {
	return g.at.UTC().Add(time.Duration(g.after) * time.Second)
}

// instants are the instants whose wall clock shows wall (a wall time read
// as UTC), earlier first: two in an hour a change back repeats, none in
// the gap of a change forward, and then gap is that change. It tries
// every period of the zone a day each side of wall, so it sees offsets
// of any size.
func (z *zone) instants(wall time.Time) (in []time.Time, gap zoneGap) {
	const reach = 26 * time.Hour // more than any offset
	for at := wall.Add(-reach); ; {
		p := z.period(at)
		// Periods come in order, and so do their instants. One Go gives
		// past the table's years may start before at, where the period
		// before it ended at a bound Go put at the end of a year: an
		// instant before at was that period's.
		if t := wall.Add(-time.Duration(p.offset) * time.Second); p.has(t) && !t.Before(at) {
			in = append(in, t)
		}
		if p.end.IsZero() || p.end.After(wall.Add(reach)) {
			return in, gap
		}
		end := p.end.UTC()
		if next := z.period(p.end).offset; !wall.Before(end.Add(time.Duration(p.offset)*time.Second)) &&
			wall.Before(end.Add(time.Duration(next)*time.Second)) {
			gap = zoneGap{at: p.end, before: p.offset, after: next}
		}
		at = p.end
	}
}

// lenient is the wall time a lenient java.util.Calendar makes of wall
// (read as UTC), as Quartz and Spring see it: wall itself when the zone
// shows it; in the gap of a change forward, wall moved on by the size of
// the change (the calendar reads it with the offset before the change).
func (z *zone) lenient(wall time.Time) time.Time {
	for range 4 { // one gap after another: none in any zone's history
		in, gap := z.instants(wall)
		if len(in) > 0 || gap.at.IsZero() {
			break
		}
		wall = wall.Add(time.Duration(gap.after-gap.before) * time.Second)
	}
	return wall
}

// instants are the instants whose wall clock in loc shows w (read as
// UTC): none in a gap of a spring-forward change, two in a repeated hour
// (earlier first).
func instants(w time.Time, loc *time.Location) []time.Time {
	z := zone{loc: loc}
	in, _ := z.instants(w)
	return in
}

// afterGap is the first wall time after the spring-forward gap that w is
// in: the wall clock at the change; w and a second when w is in no gap.
func afterGap(w time.Time, loc *time.Location) time.Time {
	z := zone{loc: loc}
	if _, gap := z.instants(w); !gap.at.IsZero() {
		return gap.end()
	}
	return w.Add(time.Second)
}
