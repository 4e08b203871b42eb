package task

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A systemd calendar is what a timer unit's OnCalendar= says, in the
// syntax of systemd.time(7) as systemd 252 reads it: "Mon..Fri *-*-*
// 09:00", "*-*-1,15 02:00:00", "*-*~01" (the last day of the month),
// "weekly", "*:0/15", a time zone after the last space. A task in the
// systemd dialect may hold several such expressions separated by ";", as
// a timer holds several OnCalendar= lines: it fires at the earliest of
// them, once when two coincide.
//
// systemd has no library of its own for Go; the rules here are the
// reference's, proven against `systemd-analyze calendar` by the witness
// test: each field is a list of values, ranges a..b and repetitions a/r
// or a..b/r. The next fire is found by systemd's own search (find_next in
// its calendarspec.c), field by field on the wall clock, with the same
// mktime(3) normalisations, so jobdrop fires where the timer would, even
// where systemd's search is surprising: a date that does not exist (30
// February) never fires; a wall time a spring-forward change skips never
// fires; one an autumn change shows twice fires once, at its first
// showing; a repetition without an end that runs past its field (1/5 in
// the hours: 21 and then 26) resumes in the next unit but keeps the
// value it carried into it when that unit is a new month or year, so
// "1/5:41" fires at 06:41 on the first of a month, not at 01:41; and a
// search that goes round in circles at a clock change gives up after a
// thousand rounds, and the timer stops.

// systemdSpec is one parsed expression, as systemd keeps it.
type systemdSpec struct {
	// weekdays has bit 0 for Monday to bit 6 for Sunday; 0 is every day.
	weekdays int
	// endOfMonth says the days count back from the end of the month:
	// "~1" is the last day.
	endOfMonth bool
	// The fields, nil for "*"; usec is the seconds in microseconds, as
	// systemd counts them.
	year, month, day, hour, minute, usec systemdField
	// loc is the zone the expression names, nil for the task's.
	loc *time.Location
}

// systemdYears bounds the years systemd looks at.
const (
	systemdFirstYear = 1970
	systemdLastYear  = 2199
)

// systemdKeywords are the shorthands, with the expression each stands for.
var systemdKeywords = map[string]string{
	"minutely":      "*-*-* *:*:00",
	"hourly":        "*-*-* *:00:00",
	"daily":         "*-*-* 00:00:00",
	"monthly":       "*-*-01 00:00:00",
	"weekly":        "Mon *-*-* 00:00:00",
	"yearly":        "*-01-01 00:00:00",
	"annually":      "*-01-01 00:00:00",
	"anually":       "*-01-01 00:00:00",
	"quarterly":     "*-01,04,07,10-01 00:00:00",
	"semiannually":  "*-01,07-01 00:00:00",
	"semi-annually": "*-01,07-01 00:00:00",
	"biannually":    "*-01,07-01 00:00:00",
	"bi-annually":   "*-01,07-01 00:00:00",
}

// SystemdCalendarProblem says what is wrong with a systemd dialect
// expression (or list of them), or "" when systemd would read it.
func SystemdCalendarProblem(expr string) string {
	if _, err := parseSystemd(expr); err != nil {
		return err.Error()
	}
	return ""
}

// parseSystemd reads one or more expressions separated by ";".
func parseSystemd(expr string) ([]systemdSpec, error) {
	var specs []systemdSpec
	for _, part := range strings.Split(expr, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		s, err := parseSystemdSpec(part)
		if err != nil {
			if strings.Contains(expr, ";") {
				return nil, fmt.Errorf("%q: %w", part, err)
			}
			return nil, err
		}
		specs = append(specs, s)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("empty: want a systemd calendar expression such as \"Mon..Fri *-*-* 09:00\" or \"daily\"")
	}
	return specs, nil
}

// systemdComponent is one item of a field: start, start..stop, start/repeat
// or start..stop/repeat; stop is -1 when open.
type systemdComponent struct{ start, stop, repeat int }

// systemdField is a field's items; nil means every value ("*").
type systemdField []systemdComponent

// systemdSyntax is the message of an expression that does not parse.
const systemdSyntax = "must be a systemd calendar expression: [weekdays] [year-]month-day [hour:minute[:second]] [time zone], " +
	"each field *, a value, a list a,b, a range a..b or a repetition a/r (\"Mon..Fri *-*-* 09:00\", \"*-*-1,15 02:00\", \"*-*~01\"), " +
	"or minutely, hourly, daily, weekly, monthly, yearly, quarterly or semiannually"

// parseSystemdSpec reads one calendar expression.
func parseSystemdSpec(text string) (systemdSpec, error) {
	var s systemdSpec
	p, loc := systemdSplitZone(text)
	s.loc = loc
	if p == "" {
		return s, fmt.Errorf("%s", systemdSyntax)
	}
	if long, ok := systemdKeywords[strings.ToLower(p)]; ok {
		p = long
	}
	r := systemdReader{s: p}
	var (
		weekdays   int
		year       systemdField
		month, day systemdField
		hour       systemdField
		minute     systemdField
		second     systemdField
		endOfMonth bool
	)
	weekdays, err := r.weekdays()
	if err != nil {
		return s, err
	}
	if stamp, ok, err := r.timestamp(); err != nil {
		return s, err
	} else if ok {
		t := time.Unix(stamp, 0).UTC()
		one := func(v int) systemdField { return systemdField{{v, -1, 0}} }
		year, month, day = one(t.Year()), one(int(t.Month())), one(t.Day())
		hour, minute, second = one(t.Hour()), one(t.Minute()), one(t.Second())
		s.loc = time.UTC
	} else {
		if year, month, day, endOfMonth, err = r.date(); err != nil {
			return s, err
		}
		if hour, minute, second, err = r.clock(); err != nil {
			return s, err
		}
	}
	if r.i != len(r.s) {
		return s, fmt.Errorf("%q is not understood: %s", r.s[r.i:], systemdSyntax)
	}
	for i := range year {
		year[i].start, year[i].stop = fixYear(year[i].start), fixYear(year[i].stop)
	}
	if day == nil {
		endOfMonth = false
	}
	fields := []struct {
		name   string
		f      *systemdField
		lo, hi int
		eom    bool
	}{
		{"year", &year, systemdFirstYear, systemdLastYear, false},
		{"month", &month, 1, 12, false},
		{"day", &day, 1, 31, endOfMonth},
		{"hour", &hour, 0, 23, false},
		{"minute", &minute, 0, 59, false},
		{"second", &second, 0, 59, false},
	}
	for _, f := range fields {
		items, err := systemdCheckField(*f.f, f.name, f.lo, f.hi, f.eom)
		if err != nil {
			return s, err
		}
		*f.f = items
	}
	if second == nil {
		second = systemdField{{0, -1, 1}} // systemd's "*" in the seconds is 0/1
	}

	s.weekdays, s.endOfMonth = weekdays%127, endOfMonth
	s.year, s.month, s.day, s.hour, s.minute = year, month, day, hour, minute
	for _, c := range second {
		if c.stop >= 0 {
			c.stop *= 1e6
		}
		s.usec = append(s.usec, systemdComponent{c.start * 1e6, c.stop, c.repeat * 1e6})
	}
	return s, nil
}

// systemdSplitZone splits the time zone off the end of an expression:
// UTC, or an IANA name after the last space; loc is nil without one.
func systemdSplitZone(text string) (p string, loc *time.Location) {
	if len(text) > 4 && strings.EqualFold(text[len(text)-4:], " UTC") {
		return strings.TrimRight(text[:len(text)-4], " "), time.UTC
	}
	if i := strings.LastIndexByte(text, ' '); i > 0 {
		if loc, ok := systemdZone(text[i+1:]); ok {
			return strings.TrimRight(text[:i], " "), loc
		}
	}
	return text, nil
}

// systemdCheckField normalizes, sorts and checks the items of the field
// called name, of values lo to hi0 (days counted from the end of the
// month when eom), as systemd does.
func systemdCheckField(items systemdField, name string, lo, hi0 int, eom bool) (systemdField, error) {
	for i := range items {
		c := &items[i]
		// systemd normalizes a component before it checks it: a range
		// with a repetition ends at its last value (2027..2040/4 is
		// 2027..2039/4), and one left with a single value is that
		// value (0..3/5 is 0, 4..4 is 4, 1..31/40 is 1).
		if c.stop > c.start && c.repeat > 0 {
			c.stop -= (c.stop - c.start) % c.repeat
		}
		if c.stop == c.start {
			c.stop, c.repeat = -1, 0
		}
	}
	// It sorts a field's items and drops repeats, then checks them in
	// that order, and for days counted from the end of the month each
	// against a bound 3 lower than the one before: 28 for the first,
	// 25 for the second, so it takes "*-*~4..28,10" and refuses
	// "*-*~10,27".
	slices.SortFunc(items, func(a, b systemdComponent) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.stop, b.stop), cmp.Compare(a.repeat, b.repeat))
	})
	items = slices.Compact(items)
	hi := hi0
	for i, c := range items {
		if eom {
			hi -= 3
		}
		if problem := c.invalid(lo, hi, eom, i); problem != "" {
			return nil, fmt.Errorf("the %s %s", name, problem)
		}
	}
	return items, nil
}

// systemdZone reads a time zone name systemd would take: an IANA name of
// the zone database.
func systemdZone(name string) (*time.Location, bool) {
	if name == "" || name == "Local" || strings.ContainsAny(name, ":*,~") || name[0] >= '0' && name[0] <= '9' {
		return nil, false
	}
	loc, err := time.LoadLocation(name)
	return loc, err == nil
}

// fixYear reads a two-digit year as systemd does: 12 is 2012, 89 is 1989.
func fixYear(y int) int {
	switch {
	case y >= 0 && y < 70:
		return y + 2000
	case y >= 70 && y < 100:
		return y + 1900
	}
	return y
}

// invalid says why systemd refuses a component of a field from lo to hi;
// i is its place in the field's sorted items.
func (c systemdComponent) invalid(lo, hi int, endOfMonth bool, i int) string {
	bounds := fmt.Sprintf("must be from %d to %d", lo, hi)
	if endOfMonth {
		bounds = fmt.Sprintf("counted from the end of the month (~) must be from %d to %d", lo, hi)
		if i > 0 {
			bounds += fmt.Sprintf(" as item %d of its list (systemd allows 28 for the first, 3 fewer for each further item)", i+1)
		}
	}
	switch {
	case c.start < lo || c.start > hi:
		return fmt.Sprintf("%d %s", c.start, bounds)
	case c.repeat > hi-lo:
		return fmt.Sprintf("repetition /%d is longer than the field (%d to %d)", c.repeat, lo, hi)
	case c.stop >= 0 && (c.stop < lo || c.stop > hi):
		return fmt.Sprintf("%d %s", c.stop, bounds)
	case c.stop >= 0 && c.start+c.repeat > c.stop:
		return fmt.Sprintf("range %d..%d ends before it starts", c.start, c.stop)
	case c.stop < 0 && endOfMonth && c.start-c.repeat < lo:
		return fmt.Sprintf("~%d/%d repeats past the end of the month", c.start, c.repeat)
	case c.stop < 0 && !endOfMonth && c.repeat > 0 && c.start+c.repeat > hi:
		return fmt.Sprintf("%d/%d repeats past %d: it would fire once; write %d", c.start, c.repeat, hi, c.start)
	}
	return ""
}
