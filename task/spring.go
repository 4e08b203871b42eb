package task

import (
	"strconv"
	"strings"
)

// springMacros are the shorthands Spring's CronExpression accepts, in any
// case.
var springMacros = map[string]string{
	"@YEARLY":   "0 0 0 1 1 *",
	"@ANNUALLY": "0 0 0 1 1 *",
	"@MONTHLY":  "0 0 0 1 * *",
	"@WEEKLY":   "0 0 0 * * 0",
	"@DAILY":    "0 0 0 * * *",
	"@MIDNIGHT": "0 0 0 * * *",
	"@HOURLY":   "0 0 * * * *",
}

// springDays numbers the weekday names as Spring does, Monday 1 to Sunday 7.
var springDays = map[string]int{"MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6, "SUN": 7}

// parseSpring reads an expression as Spring 6's
// org.springframework.scheduling.support.CronExpression does: exactly 6
// fields separated by spaces (seconds, minutes, hours, day-of-month, month,
// day-of-week), or one of its macros; day-of-week 0 or 7 for Sunday; names
// in any case; "?" for a whole day field means "*"; ranges must not wrap;
// L, L-n, LW and nW in the day-of-month list, nL and n#k in the
// day-of-week list. Unlike Quartz, a day must match both day fields.
func parseSpring(expr string) (*calendar, error) {
	expr = strings.TrimSpace(expr)
	if m, ok := springMacros[strings.ToUpper(expr)]; ok {
		expr = m
	}
	var tokens []string
	for t := range strings.SplitSeq(expr, " ") {
		if t = strings.TrimSpace(t); t != "" {
			tokens = append(tokens, strings.ToUpper(t))
		}
	}
	if len(tokens) != 6 {
		return nil, &cronError{field: -1}
	}
	c := &calendar{}
	for i, tok := range tokens {
		bad := func(reason string) (*calendar, error) {
			if reason == badValue {
				reason = ""
			}
			return nil, &cronError{field: i, token: tok, reason: reason}
		}
		value := tok
		switch i {
		case fMonth:
			value = replaceNames(value, monthNames)
		case fDayOfWeek:
			value = replaceNames(value, springDays)
		}
		if (i == fDayOfMonth || i == fDayOfWeek) && value == "?" {
			value = "*"
		}
		var set bits
		var rules []dayRule
		for item := range strings.SplitSeq(value, ",") {
			if i == fDayOfMonth && strings.ContainsAny(item, "LW") || i == fDayOfWeek && strings.ContainsAny(item, "L#") {
				r, reason := springRule(i, item)
				if reason != "" {
					return bad(reason)
				}
				rules = append(rules, r)
				continue
			}
			b, reason := springBits(i, item)
			if reason != "" {
				return bad(reason)
			}
			set |= b
		}
		switch i {
		case fSecond:
			c.second = set
		case fMinute:
			c.minute = set
		case fHour:
			c.hour = set
		case fMonth:
			c.month = set
		case fDayOfMonth:
			c.dom = dayField{set: set, rules: rules, all: value == "*"}
		case fDayOfWeek:
			var week bits
			for v := 0; v <= 7; v++ {
				if set.has(v) {
					week |= 1 << uint(v%7) // Spring numbers Sunday 0 or 7
				}
			}
			c.dow = dayField{set: week, rules: rules, all: value == "*"}
		}
	}
	return c, nil
}

// replaceNames writes each name in s as its number, as Spring does before
// reading a field (so "FRIL" is 5L and "MON-FRI" is 1-5).
func replaceNames(s string, names map[string]int) string {
	for name, n := range names {
		s = strings.ReplaceAll(s, name, strconv.Itoa(n))
	}
	return s
}

// springRange is the values each field takes in Spring; the day-of-week
// takes 0 as well, for Sunday.
var springRange = [...]struct{ lo, hi int }{{0, 59}, {0, 59}, {0, 23}, {1, 31}, {1, 12}, {1, 7}}

// springBits reads a plain list item: *, a value, a range a-b (a not after
// b; 7 as a range start is Sunday 0), a step */n, a/n (to the field's end)
// or a-b/n. It returns why the item is refused, or "".
func springBits(field int, item string) (bits, string) {
	lo, hi := springRange[field].lo, springRange[field].hi
	valid := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		if err != nil || s == "" || s[0] < '0' || s[0] > '9' {
			return 0, false
		}
		return n, n >= lo && n <= hi || field == fDayOfWeek && n == 0
	}
	rng, stepText, stepped := strings.Cut(item, "/")
	step := 1
	if stepped {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 {
			return 0, "has a step that is not a whole number from 1"
		}
		step = n
	}
	from, to := lo, hi
	switch a, b, isRange := strings.Cut(rng, "-"); {
	case rng == "*":
	case isRange:
		x, ok1 := valid(a)
		y, ok2 := valid(b)
		if !ok1 || !ok2 {
			return 0, badValue
		}
		if field == fDayOfWeek && x == 7 {
			x = 0
		}
		if x > y {
			return 0, "must be a range a-b with a not after b: Spring does not wrap ranges"
		}
		from, to = x, y
	default:
		x, ok := valid(rng)
		if !ok {
			return 0, badValue
		}
		from = x
		if !stepped {
			to = x
		}
	}
	return span(from, to, step), ""
}

// springRule reads a day-of-month L, L-n, LW or nW, or a day-of-week nL or
// n#k. It returns why the item is refused, or "".
func springRule(field int, item string) (dayRule, string) {
	number := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && s != "" && s[0] >= '0' && s[0] <= '9'
	}
	weekday := func(s string) (int, bool) {
		n, ok := number(s)
		return n % 7, ok && n <= 7
	}
	if field == fDayOfMonth {
		switch {
		case item == "L":
			return dayRule{kind: lastDay}, ""
		case item == "LW":
			return dayRule{kind: lastWeekday}, ""
		case strings.HasPrefix(item, "L-"):
			if n, ok := number(item[2:]); ok && n > 0 {
				return dayRule{kind: lastDay, n: n}, ""
			}
			return dayRule{}, "must say L-n with n days before the last, n from 1"
		case strings.HasSuffix(item, "W") && !strings.Contains(item, "L"):
			if n, ok := number(strings.TrimSuffix(item, "W")); ok && n >= 1 && n <= 31 {
				return dayRule{kind: nearestWeekday, n: n}, ""
			}
			return dayRule{}, "must say nW with a day n from 1 to 31"
		}
		return dayRule{}, badValue
	}
	if d, ok := strings.CutSuffix(item, "L"); ok {
		if n, ok := weekday(d); ok {
			return dayRule{kind: lastOf, n: n}, ""
		}
		return dayRule{}, "must say nL with a weekday n from 0 to 7 (0 and 7 are SUN) or a name"
	}
	d, k, _ := strings.Cut(item, "#")
	n, ok := weekday(d)
	kk, kok := number(k)
	if !ok || !kok || kk < 1 {
		return dayRule{}, "must say n#k with a weekday n from 0 to 7 (0 and 7 are SUN) or a name, and k from 1"
	}
	return dayRule{kind: nth, n: n, k: kk}, ""
}
