package task

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/adhocore/gronx"
)

// FieldError says which field of a definition is wrong, its value and what
// was expected. Converters map Field to the column it came from.
type FieldError struct {
	Field  string
	Value  string
	Reason string
}

func (e *FieldError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("%s: %s (got %q)", e.Field, e.Reason, e.Value)
}

// MaxMillis is the last millisecond of the year 9999: times past it have
// no RFC 3339 form.
const MaxMillis = 253402300799999

// MaxNameLen bounds host and name, so keys stay usable as Kafka keys and in
// the console.
const MaxNameLen = 255

// Validate checks a command and returns every problem found, each a
// *FieldError, joined with errors.Join; nil when the command is valid.
// A DELETE needs only its key.
func (d *Definition) Validate() error {
	var errs []error
	bad := func(field, value, reason string) {
		errs = append(errs, &FieldError{Field: field, Value: value, Reason: reason})
	}
	checkName := func(field, v string, slash bool) {
		switch {
		case strings.TrimSpace(v) == "":
			bad(field, v, "is required")
		case len(v) > MaxNameLen:
			bad(field, v[:32]+"…", fmt.Sprintf("is longer than %d bytes", MaxNameLen))
		case !slash && strings.Contains(v, "/"):
			bad(field, v, `must not contain "/"`)
		case strings.IndexFunc(v, unicode.IsControl) >= 0:
			bad(field, v, "must not contain control characters")
		}
	}
	checkName("host", d.Host, false)
	checkName("name", d.Name, true)
	switch d.Action {
	case Insert, Update, Delete, Trigger, Release, SkipRun:
	default:
		bad("action", string(d.Action), "must be INSERT, UPDATE, DELETE, TRIGGER, RELEASE or SKIP")
	}
	if d.Action.KeyOnly() {
		return errors.Join(errs...)
	}
	checkName("topic", d.Topic, true)
	if d.Topic != "" && !ValidTopic(d.Topic) {
		bad("topic", d.Topic, "must be a Kafka topic name: letters, digits, '.', '_' or '-', at most 249")
	}
	if f := d.Frequency; f != nil {
		if f.TimeUnit.Duration() == 0 {
			bad("frequency.timeUnit", string(f.TimeUnit), "must be MILLISECONDS, SECONDS, MINUTES, HOURS or DAYS")
		}
		if f.Time <= 0 {
			bad("frequency.time", fmt.Sprint(f.Time), "must be a positive whole number")
		}
		if d.Cron != "" {
			bad("cron", d.Cron, "cannot be combined with a frequency")
		}
	}
	if d.Timezone != "" {
		if _, err := time.LoadLocation(d.Timezone); err != nil {
			bad("timezone", d.Timezone, "must be an IANA time zone such as Europe/Paris")
		}
	}
	if _, err := ParseDialect(string(d.CronDialect)); err != nil {
		bad("cronDialect", string(d.CronDialect), "must be unix, quartz, spring, systemd or auto")
	}
	if d.Cron != "" {
		switch dialect := d.Dialect(); dialect {
		case DialectQuartz, DialectSpring:
			if _, err := parseCalendar(dialect, d.Cron); err != nil {
				bad("cron", d.Cron, dialectCronProblem(dialect, err))
			}
		case DialectSystemd:
			if problem := SystemdCalendarProblem(d.Cron); problem != "" {
				bad("cron", d.Cron, problem)
			}
		default:
			if !gronx.IsValid(d.Cron) {
				bad("cron", d.Cron, cronProblem(d.Cron))
			}
		}
	}
	if d.Rrule != "" {
		if d.Frequency != nil {
			bad("rrule", d.Rrule, "cannot be combined with a frequency")
		}
		if d.Cron != "" {
			bad("rrule", d.Rrule, "cannot be combined with cron")
		}
		var start int64
		switch {
		case d.Start == nil:
			bad("start", "", "is required with rrule: it is the rule's DTSTART")
		case *d.Start%1000 != 0:
			bad("start", fmt.Sprint(*d.Start), "must be a whole second with rrule: RFC 5545 times have no milliseconds")
		default:
			start = *d.Start
		}
		if problem := d.rruleProblem(start); problem != "" {
			bad("rrule", d.Rrule, problem)
		}
	}
	if d.Start != nil && *d.Start < 0 {
		bad("start", fmt.Sprint(*d.Start), "must be epoch milliseconds after 1970")
	}
	if d.Start != nil && *d.Start > MaxMillis {
		bad("start", fmt.Sprint(*d.Start), "must be before the year 10000")
	}
	if d.End != nil && *d.End > MaxMillis {
		bad("end", fmt.Sprint(*d.End), "must be before the year 10000")
	}
	if d.End != nil && d.Start != nil && *d.End < *d.Start {
		bad("end", fmt.Sprint(*d.End), "must not be before start")
	}
	switch d.Misfire {
	case "", FireOnce, FireAll, Skip:
	default:
		bad("misfire", string(d.Misfire), "must be FIRE_ONCE, FIRE_ALL or SKIP")
	}
	if d.Timeout < 0 {
		bad("timeout", fmt.Sprint(d.Timeout), "must be a positive number of milliseconds")
	}
	if w := d.Window; w != nil {
		if _, err := parseClock(w.From); err != nil {
			bad("window.from", w.From, "must be a local time HH:MM")
		}
		if _, err := parseClock(w.To); err != nil {
			bad("window.to", w.To, "must be a local time HH:MM")
		}
		if w.From != "" && w.From == w.To {
			bad("window.to", w.To, "must differ from window.from")
		}
		for _, day := range w.Days {
			if _, ok := weekdays[strings.ToUpper(day)]; !ok {
				bad("window.days", day, "must be weekdays MON, TUE, WED, THU, FRI, SAT or SUN")
			}
		}
	}
	if _, ok := d.Data[""]; ok {
		bad("data", "", "keys must not be empty")
	}
	if d.Message != nil {
		d.validateMessage(bad)
	}
	d.validateChain(bad)
	return errors.Join(errs...)
}

// FieldErrors flattens the error returned by Validate.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		if fe, ok := err.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// ValidTopic reports whether t is a name Kafka takes for a topic.
func ValidTopic(t string) bool {
	if len(t) > 249 || t == "." || t == ".." {
		return false
	}
	for _, r := range t {
		if !(r == '.' || r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

var weekdays = map[string]time.Weekday{
	"SUN": time.Sunday, "MON": time.Monday, "TUE": time.Tuesday, "WED": time.Wednesday,
	"THU": time.Thursday, "FRI": time.Friday, "SAT": time.Saturday,
}

// parseClock reads "HH:MM" as minutes after midnight.
func parseClock(s string) (int, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, err
	}
	return t.Hour()*60 + t.Minute(), nil
}

// cronFields names a cron expression's fields in the order gronx numbers
// them, seconds first, with the values each takes.
var cronFields = [...]struct{ name, values string }{
	{"second", "0-59"},
	{"minute", "0-59"},
	{"hour", "0-23"},
	{"day-of-month", "1-31, L or W"},
	{"month", "1-12 or JAN-DEC"},
	{"day-of-week", "0-7 or SUN-SAT, L or #"},
	{"year", "a year"},
}

// cronProblem says what is wrong with a cron expression gronx refuses: the
// number of fields, or which field and what it takes.
func cronProblem(expr string) string {
	const shape = "must be a cron expression of 5 fields (minute hour day-of-month month day-of-week), " +
		"or 6 with seconds first, or a shorthand such as @daily or @hourly"
	segs, err := gronx.Segments(expr)
	if err != nil {
		return shape
	}
	typed := strings.Fields(expr)
	skip := len(segs) - len(typed) // 1 when gronx added the seconds field
	if skip != 0 && skip != 1 {
		return shape // gronx splits the fields otherwise (at a vertical tab, say)
	}
	for pos := skip; pos < len(segs); pos++ {
		// The field alone, every other one a wildcard.
		probe := slices.Repeat([]string{"*"}, len(segs))
		probe[pos] = segs[pos]
		if gronx.IsValid(strings.Join(probe, " ")) {
			continue
		}
		f := cronFields[min(pos, len(cronFields)-1)]
		return fmt.Sprintf("the %s field %q must be %s: a value, a range a-b, a step */n or a list a,b", f.name, typed[pos-skip], f.values)
	}
	return shape
}
