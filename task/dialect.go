package task

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Dialect says how a cron expression is read. The same text means
// different things to different schedulers: "0 0 12 ? * 2-6" is Monday to
// Friday for Quartz (1 is Sunday) and Tuesday to Saturday for Spring and
// cron (0 is Sunday), so a migrated schedule keeps its meaning only when it
// is read in the dialect it was written for.
type Dialect string

// The dialects.
const (
	// DialectAuto picks Quartz for an expression of 7 fields or with a
	// "?", and unix otherwise. The empty dialect means the same.
	DialectAuto Dialect = "auto"
	// DialectUnix is Linux cron (cronie): 5 fields, or 6 with seconds
	// first; 0 or 7 is Sunday; a day matches when its day of month or its
	// day of week does; cronie's daylight-saving rules.
	DialectUnix Dialect = "unix"
	// DialectQuartz is Quartz 2.3's CronExpression: seconds first, an
	// optional year, "?", 1 is Sunday, L, W, LW, L-n, nL and n#k, and
	// Quartz's daylight-saving behaviour.
	DialectQuartz Dialect = "quartz"
	// DialectSpring is Spring 6's CronExpression: 6 fields with seconds
	// first, 0 or 7 is Sunday, L, W, # and macros such as @daily; a day
	// must match both day fields.
	DialectSpring Dialect = "spring"
	// DialectSystemd is what a systemd timer's OnCalendar= says, as
	// systemd 252 reads it: "Mon..Fri *-*-* 09:00", "*-*~01", "weekly",
	// with an optional time zone at the end; several expressions separated
	// by ";" fire at the earliest of them (see systemd.go).
	DialectSystemd Dialect = "systemd"
)

// Dialects lists the dialects a definition may state, auto aside.
var Dialects = []Dialect{DialectUnix, DialectQuartz, DialectSpring, DialectSystemd}

// ParseDialect reads a dialect name in any case; empty means auto.
func ParseDialect(s string) (Dialect, error) {
	if s == "" {
		return DialectAuto, nil
	}
	d := Dialect(strings.ToLower(strings.TrimSpace(s)))
	switch d {
	case "", DialectAuto:
		return DialectAuto, nil
	case DialectUnix, DialectQuartz, DialectSpring, DialectSystemd:
		return d, nil
	}
	return "", fmt.Errorf("unknown cron dialect %q (want unix, quartz, spring, systemd or auto)", s)
}

// DetectDialect is the dialect auto reads expr in: Quartz when it has 7
// fields or a "?" (which only Quartz-style schedulers write), systemd when
// it has a ":", a "~" or a ".." (which no cron writes) or is one of
// systemd's words such as "weekly", unix otherwise, as jobdrop always read
// cron expressions.
func DetectDialect(expr string) Dialect {
	switch {
	case len(strings.Fields(expr)) == 7 || strings.Contains(expr, "?"):
		return DialectQuartz
	case strings.ContainsAny(expr, ":~") || strings.Contains(expr, ".."):
		return DialectSystemd
	}
	if _, ok := systemdKeywords[strings.ToLower(strings.TrimSpace(expr))]; ok {
		return DialectSystemd
	}
	return DialectUnix
}

// Dialect is the dialect the definition's cron expression is read in: the
// one it states, or the one auto picks. The engine, previews and the
// console all ask here, so they agree.
func (d *Definition) Dialect() Dialect {
	switch d.CronDialect {
	case DialectUnix, DialectQuartz, DialectSpring, DialectSystemd:
		return d.CronDialect
	}
	return DetectDialect(d.Cron)
}

// cronNextIn is the first fire of the definition's cron expression
// strictly after after, in its dialect and time zone.
func (d *Definition) cronNextIn(after time.Time) (time.Time, bool) {
	loc := d.location()
	switch dialect := d.Dialect(); dialect {
	case DialectQuartz, DialectSpring:
		c, err := parseCalendar(dialect, d.Cron)
		if err != nil {
			return time.Time{}, false
		}
		if dialect == DialectQuartz {
			return c.quartzNext(loc, after)
		}
		return c.springNext(loc, after)
	case DialectSystemd:
		specs, err := parseSystemd(d.Cron)
		if err != nil {
			return time.Time{}, false
		}
		return systemdNext(specs, loc, after)
	}
	return cronNext(d.Cron, loc, after)
}

func parseCalendar(dialect Dialect, expr string) (*calendar, error) {
	if dialect == DialectSpring {
		return parseSpring(expr)
	}
	return parseQuartz(expr)
}

// dialectFieldValues says what each field takes in Quartz and Spring, in
// the order of cronFields.
var dialectFieldValues = map[Dialect][7]string{
	DialectQuartz: {"0-59", "0-59", "0-23", "1-31, L, L-n, LW, nW or ?", "1-12 or JAN-DEC",
		"1-7 (1 is SUN) or SUN-SAT, nL, n#k or ?", "1970-2999"},
	DialectSpring: {"0-59", "0-59", "0-23", "1-31, L, L-n, LW, nW or ?", "1-12 or JAN-DEC",
		"0-7 (0 and 7 are SUN) or SUN-SAT, nL, n#k or ?", ""},
}

// dialectCronProblem says what is wrong with an expression Quartz or
// Spring refuses: the number of fields, or which field and what it takes.
func dialectCronProblem(dialect Dialect, err error) string {
	var ce *cronError
	if !errors.As(err, &ce) || ce.field < 0 {
		if dialect == DialectSpring {
			return "must be a Spring cron expression of 6 fields (second minute hour day-of-month month day-of-week) " +
				"or a macro such as @daily or @hourly"
		}
		return "must be a Quartz cron expression of 6 or 7 fields (second minute hour day-of-month month day-of-week, then an optional year)"
	}
	name := cronFields[ce.field].name
	if ce.reason != "" {
		return fmt.Sprintf("the %s field %q %s", name, ce.token, ce.reason)
	}
	return fmt.Sprintf("the %s field %q must be %s: a value, a range a-b, a step a/n or a list a,b",
		name, ce.token, dialectFieldValues[dialect][ce.field])
}

// CronAmbiguity returns a warning when expr, read in the dialect auto
// picks, would mean something else in another dialect that accepts it,
// and nothing in it says which was meant; "" otherwise. Converters show it
// for rows whose folder or row does not state a dialect. The cases: a
// 6-field expression with a day-of-week number (Quartz numbers Sunday 1,
// Spring and cron 0), and a 6-field one restricting both day fields (cron
// fires on either, Spring only on days matching both).
func CronAmbiguity(expr string) string {
	f := strings.Fields(expr)
	if len(f) != 6 {
		return ""
	}
	dom, dow := f[3], f[5]
	read := DetectDialect(expr)
	if read == DialectQuartz {
		q, err := parseQuartz(expr)
		if err != nil {
			return ""
		}
		s, err := parseSpring(expr)
		if err != nil || !strings.ContainsAny(dow, "0123456789") {
			return ""
		}
		if qw, sw := q.dow.words(), s.dow.words(); qw != sw {
			return fmt.Sprintf("day-of-week %q read as quartz (%s); in spring it would be %s; set cron_dialect to say which", dow, qw, sw)
		}
		return ""
	}
	if dom == "*" || dow == "*" || dom == "?" || dow == "?" {
		return ""
	}
	if _, err := parseSpring(expr); err != nil {
		return ""
	}
	return fmt.Sprintf("day-of-month %q and day-of-week %q read as unix (a day matching either); in spring a day would have to match both; set cron_dialect to say which", dom, dow)
}

var weekdayNames = [7]string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}

// words says which days a day-of-week field matches: "MON-FRI",
// "SUN,SAT", "the 3rd FRI", "the last FRI".
func (f dayField) words() string {
	if f.all {
		return "every day"
	}
	var parts []string
	for d := 0; d < 7; {
		if !f.set.has(d) {
			d++
			continue
		}
		end := d
		for end+1 < 7 && f.set.has(end+1) {
			end++
		}
		switch {
		case end-d >= 2:
			parts = append(parts, weekdayNames[d]+"-"+weekdayNames[end])
		case end > d:
			parts = append(parts, weekdayNames[d], weekdayNames[end])
		default:
			parts = append(parts, weekdayNames[d])
		}
		d = end + 1
	}
	for _, r := range f.rules {
		switch r.kind {
		case lastOf:
			parts = append(parts, "the last "+weekdayNames[r.n])
		case nth:
			parts = append(parts, fmt.Sprintf("the %s %s", ordinal(r.k), weekdayNames[r.n]))
		}
	}
	return strings.Join(parts, ",")
}

func ordinal(k int) string {
	switch k {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return fmt.Sprintf("%dth", k)
}
