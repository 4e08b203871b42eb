package task

import (
	"fmt"
	"strconv"
	"strings"
)

// cronError says which field of a Quartz or Spring expression is wrong.
// field is an index into cronFields, -1 when the expression as a whole is
// (its number of fields); reason, when set, replaces the field's usual
// description.
type cronError struct {
	field  int
	token  string
	reason string
}

func (e *cronError) Error() string { return fmt.Sprintf("field %d %q: %s", e.field, e.token, e.reason) }

// The indexes of the fields, as cronFields numbers them.
const (
	fSecond = iota
	fMinute
	fHour
	fDayOfMonth
	fMonth
	fDayOfWeek
	fYear
)

// fieldRange is the values a plain number in each field may take.
var fieldRange = [...]struct{ lo, hi int }{
	{0, 59}, {0, 59}, {0, 23}, {1, 31}, {1, 12}, {1, 7}, {firstYear, lastYear},
}

var monthNames = map[string]int{
	"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
	"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
}

// dayNames numbers the weekdays from Sunday 0, as time.Weekday does.
var dayNames = map[string]int{"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}

// parseQuartz reads an expression as Quartz 2.3's org.quartz.CronExpression
// does: 6 or 7 fields separated by spaces or tabs (seconds, minutes, hours,
// day-of-month, month, day-of-week, optional year), names in any case,
// day-of-week 1 (Sunday) to 7 (Saturday), "?" in exactly one of the day
// fields, ranges that wrap (22-2, FRI-MON), steps on every field, and L, W,
// LW, L-n, L-nW, nL and n#k.
//
// Quartz applies a W, an nL or an n#k to the first value of its field
// ("1,15W" is 1W; "5#3,2" is 2#3), and so does this; it refuses L in a list
// and two #, and so does this. Where Quartz silently reads less than what is
// written, this refuses instead, so that no schedule means something other
// than its text: text after a name ("MONDAY", "MON/2": Quartz reads MON),
// after a number ("5x") or after "?", a step of 0, empty list items, a
// day-of-week 0 or 8 before # or L, 0W, L outside the day fields, years
// outside 1970-2999, and fields past the seventh.
func parseQuartz(expr string) (*calendar, error) {
	tokens := strings.FieldsFunc(strings.ToUpper(expr), func(r rune) bool { return r == ' ' || r == '\t' })
	if len(tokens) < 6 || len(tokens) > 7 {
		return nil, &cronError{field: -1}
	}
	c := &calendar{}
	var dom, dow quartzField
	for i, tok := range tokens {
		f, err := parseQuartzField(i, tok)
		if err != nil {
			return nil, err
		}
		switch i {
		case fSecond:
			c.second = f.set
		case fMinute:
			c.minute = f.set
		case fHour:
			c.hour = f.set
		case fMonth:
			c.month = f.set
		case fDayOfMonth:
			dom = f
		case fDayOfWeek:
			dow = f
		case fYear:
			if !f.all {
				c.years = f.years
			}
		}
	}
	if dom.none == dow.none {
		return nil, &cronError{field: fDayOfWeek, token: tokens[fDayOfWeek],
			reason: fmt.Sprintf(`must be "?" when the day-of-month field %q is not, or not "?" when it is: Quartz takes "?" in exactly one of them`, tokens[fDayOfMonth])}
	}
	c.dom = dom.days(false)
	c.dow = dow.days(true)
	return c, nil
}

// quartzField is one field as Quartz stores it: a set and the flags its
// special characters raise.
type quartzField struct {
	set   bits
	years *yearBits
	all   bool // "*"
	none  bool // "?"
	// Day-of-month: last (L, L-n, offset), weekday (W); day-of-week:
	// last (nL), nth (#k).
	last, weekday bool
	offset, nth   int
}

// days turns a day field into the rule that matches days: Quartz applies
// W, nL and #k to the field's first value only.
func (f quartzField) days(dow bool) dayField {
	first := f.set.from(0)
	switch {
	case f.none, f.all:
		return dayField{all: true}
	case !dow && f.last && f.weekday:
		return dayField{rules: []dayRule{{kind: lastWeekday, n: f.offset}}}
	case !dow && f.last:
		return dayField{rules: []dayRule{{kind: lastDay, n: f.offset}}}
	case !dow && f.weekday:
		return dayField{rules: []dayRule{{kind: nearestWeekday, n: first}}}
	case dow && f.last:
		return dayField{rules: []dayRule{{kind: lastOf, n: first}}}
	case dow && f.nth > 0:
		return dayField{rules: []dayRule{{kind: nth, n: first, k: f.nth}}}
	}
	return dayField{set: f.set}
}

func parseQuartzField(field int, tok string) (quartzField, error) {
	var f quartzField
	bad := func(reason string) (quartzField, error) {
		return f, &cronError{field: field, token: tok, reason: reason}
	}
	day := field == fDayOfMonth || field == fDayOfWeek
	if day && strings.Contains(tok, "L") && len(tok) > 1 && strings.Contains(tok, ",") {
		return bad("cannot list L with other days: Quartz does not support it")
	}
	if field == fDayOfWeek && strings.Count(tok, "#") > 1 {
		return bad("cannot hold two n#k: Quartz does not support it")
	}
	if field == fYear {
		f.years = &yearBits{}
	}
	lo, hi := fieldRange[field].lo, fieldRange[field].hi
	add := func(from, to, step int) {
		if to < from { // a range that wraps: 22-2, FRI-MON
			size := hi - lo + 1
			for v := from; v <= to+size; v += step {
				f.put(field, lo+(v-lo)%size)
			}
			return
		}
		for v := from; v <= to; v += step {
			f.put(field, v)
		}
	}
	for item := range strings.SplitSeq(tok, ",") {
		if err := f.item(field, item, lo, hi, add); err == badValue {
			return bad("")
		} else if err != "" {
			return bad(err)
		}
	}
	if f.none && (f.set != 0 || f.all || f.last || f.weekday || f.nth > 0) {
		return bad(`must be "?" alone`)
	}
	return f, nil
}

func (f *quartzField) put(field, v int) {
	if field == fYear {
		f.years.set(v)
		return
	}
	if field == fDayOfWeek {
		v-- // Quartz numbers Sunday 1
	}
	f.set |= 1 << uint(v)
}

// badValue is the reason of an item that is not a value the field takes:
// the field's own description says what it takes.
const badValue = "\x00"

// item reads one list item; it returns why the item is refused, or "".
func (f *quartzField) item(field int, s string, lo, hi int, add func(from, to, step int)) string {
	dayMonth, dayWeek := field == fDayOfMonth, field == fDayOfWeek
	names := map[string]int(nil)
	switch field {
	case fMonth:
		names = monthNames
	case fDayOfWeek:
		names = dayNames
	}
	// A value: a number in range, or a name of this field.
	value := func(v string) (int, bool) {
		if n, ok := names[v]; ok {
			if dayWeek {
				n++
			}
			return n, true
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi || v[0] == '+' || v[0] == '-' {
			return 0, false
		}
		return n, true
	}
	number := func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && v != "" && v[0] >= '0' && v[0] <= '9'
	}
	isName := func(v string) bool { _, ok := names[v]; return ok }
	switch {
	case s == "":
		return "has an empty list item"
	case s == "?":
		if !dayMonth && !dayWeek {
			return `cannot be "?": only day-of-month and day-of-week can`
		}
		f.none = true
		return ""
	case s == "*":
		f.all = true
		add(lo, hi, 1)
		return ""
	case dayMonth && strings.HasPrefix(s, "L"):
		rest := strings.TrimPrefix(s, "L")
		if strings.HasSuffix(rest, "W") {
			f.weekday = true
			rest = strings.TrimSuffix(rest, "W")
		}
		f.last = true
		if rest != "" {
			n, ok := number(strings.TrimPrefix(rest, "-"))
			if !strings.HasPrefix(rest, "-") || !ok || n > 30 {
				return "must say L-n with n from 0 to 30 days before the last"
			}
			f.offset = n
		}
		return ""
	case dayWeek && s == "L":
		f.put(field, 7) // L alone is Saturday, the last day of the week
		return ""
	case dayMonth && strings.HasSuffix(s, "W"):
		n, ok := number(strings.TrimSuffix(s, "W"))
		if !ok || n < 1 || n > 31 {
			return "must say nW with a day n from 1 to 31"
		}
		f.weekday = true
		f.put(field, n)
		return ""
	case dayWeek && strings.HasSuffix(s, "L"):
		n, ok := value(strings.TrimSuffix(s, "L"))
		if !ok {
			return "must say nL with a weekday n from 1 (SUN) to 7 (SAT)"
		}
		f.last = true
		f.put(field, n)
		return ""
	case dayWeek && strings.Contains(s, "#"):
		d, k, _ := strings.Cut(s, "#")
		n, ok := value(d)
		kk, kok := number(k)
		if !ok || !kok || kk < 1 || kk > 5 {
			return "must say n#k with a weekday n from 1 (SUN) to 7 (SAT) and k from 1 to 5"
		}
		f.nth = kk
		f.put(field, n)
		return ""
	}
	rng, stepText, stepped := strings.Cut(s, "/")
	step := 1
	if stepped {
		n, ok := number(stepText)
		if !ok || n < 1 {
			return "has a step that is not a whole number from 1"
		}
		if from, to, isRange := strings.Cut(rng, "-"); isName(from) || isRange && isName(to) {
			return "cannot step a name: Quartz ignores the step after a name; write numbers"
		}
		if _, _, isRange := strings.Cut(rng, "-"); !isRange && field != fYear && n > hi {
			return fmt.Sprintf("has a step larger than %d", hi)
		}
		step = n
	}
	switch {
	case rng == "*" || rng == "" && stepped:
		add(lo, hi, step)
		return ""
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		from, ok1 := value(a)
		to, ok2 := value(b)
		if !ok1 || !ok2 || isName(a) != isName(b) {
			return badValue
		}
		if field == fYear && to < from {
			return "cannot be a range of years that ends before it starts"
		}
		add(from, to, step)
		return ""
	}
	v, ok := value(rng)
	if !ok {
		return badValue
	}
	if stepped {
		add(v, hi, step)
	} else {
		f.put(field, v)
	}
	return ""
}
