package converters

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

var winDays = []struct{ name, code string }{
	{"Monday", "MO"}, {"Tuesday", "TU"}, {"Wednesday", "WE"}, {"Thursday", "TH"}, {"Friday", "FR"}, {"Saturday", "SA"}, {"Sunday", "SU"},
}

var winMonths = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}

// schedule writes a ScheduleBy… element as an RFC 5545 rule.
func (c *winConv) schedule(s *xmlNode) (string, []error) {
	var errs []error
	fail := func(k *xmlNode, value, reason string) { errs = append(errs, c.rowErr(k, value, errors.New(reason))) }
	interval := func(name string, most int) int {
		k := s.child(name)
		if k == nil {
			return 1
		}
		v := strings.TrimSpace(k.text)
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > most {
			fail(k, v, fmt.Sprintf("want a whole number from 1 to %d", most))
			return 1
		}
		return n
	}
	days := func(required bool) []string {
		k := s.child("DaysOfWeek")
		if k == nil || len(k.kids) == 0 {
			if required {
				fail(s, "", "needs <DaysOfWeek> with at least one day")
			}
			return nil
		}
		var out []string
		for _, wd := range winDays {
			if k.child(wd.name) != nil {
				out = append(out, wd.code)
			}
		}
		for _, d := range k.kids {
			if !slices.ContainsFunc(winDays, func(wd struct{ name, code string }) bool { return wd.name == d.name }) {
				fail(d, "", "not a day of the week (Monday … Sunday)")
			}
		}
		return out
	}
	months := func() string {
		k := s.child("Months")
		if k == nil || len(k.kids) == 0 {
			return ""
		}
		var out []string
		for i, m := range winMonths {
			if k.child(m) != nil {
				out = append(out, strconv.Itoa(i+1))
			}
		}
		for _, m := range k.kids {
			if !slices.Contains(winMonths, m.name) {
				fail(m, "", "not a month (January … December)")
			}
		}
		if len(out) == 12 {
			return ""
		}
		return ";BYMONTH=" + strings.Join(out, ",")
	}
	known := func(names ...string) {
		for _, k := range s.kids {
			if !slices.Contains(names, k.name) {
				fail(k, "", fmt.Sprintf("not an element of <%s> (%s)", s.name, strings.Join(names, ", ")))
			}
		}
	}
	var rule string
	switch s.name {
	case "ScheduleByDay":
		known("DaysInterval")
		rule = withInterval("DAILY", interval("DaysInterval", 365))
	case "ScheduleByWeek":
		known("WeeksInterval", "DaysOfWeek")
		rule = withInterval("WEEKLY", interval("WeeksInterval", 52)) + ";BYDAY=" + strings.Join(days(true), ",")
	case "ScheduleByMonth":
		known("DaysOfMonth", "Months")
		mdays := scheduleMonthDays(s, fail)
		rule = "FREQ=MONTHLY;BYMONTHDAY=" + strings.Join(mdays, ",") + months()
	case "ScheduleByMonthDayOfWeek":
		known("Weeks", "DaysOfWeek", "Months")
		weeks := scheduleWeeks(s, fail)
		var byday []string
		for _, w := range weeks {
			for _, d := range days(true) {
				byday = append(byday, w+d)
			}
		}
		rule = "FREQ=MONTHLY;BYDAY=" + strings.Join(byday, ",") + months()
	}
	return rule, errs
}

// withInterval is an RRULE of frequency freq repeating every n-th period.
func withInterval(freq string, n int) string {
	if n == 1 {
		return "FREQ=" + freq
	}
	return fmt.Sprintf("FREQ=%s;INTERVAL=%d", freq, n)
}

// scheduleMonthDays reads the <DaysOfMonth> of a ScheduleByMonth as
// BYMONTHDAY values.
func scheduleMonthDays(s *xmlNode, fail func(k *xmlNode, value, reason string)) []string {
	var mdays []string
	if k := s.child("DaysOfMonth"); k != nil {
		for _, d := range k.kids {
			v := strings.TrimSpace(d.text)
			n, err := strconv.Atoi(v)
			switch {
			case d.name != "Day":
				fail(d, "", "not an element of <DaysOfMonth> (Day)")
			case v == "Last":
				mdays = append(mdays, "-1")
			case err != nil || n < 1 || n > 31:
				fail(d, v, "want a day from 1 to 31, or Last")
			default:
				mdays = append(mdays, v)
			}
		}
	}
	if len(mdays) == 0 {
		fail(s, "", "needs <DaysOfMonth> with at least one <Day>")
	}
	return mdays
}

// scheduleWeeks reads the <Weeks> of a ScheduleByMonthDayOfWeek as the
// ordinals of BYDAY values.
func scheduleWeeks(s *xmlNode, fail func(k *xmlNode, value, reason string)) []string {
	var weeks []string
	if k := s.child("Weeks"); k != nil {
		for _, w := range k.kids {
			v := strings.TrimSpace(w.text)
			switch {
			case w.name != "Week":
				fail(w, "", "not an element of <Weeks> (Week)")
			case v == "Last":
				weeks = append(weeks, "-1")
			case v == "1" || v == "2" || v == "3" || v == "4":
				weeks = append(weeks, v)
			default:
				fail(w, v, "want a week from 1 to 4, or Last")
			}
		}
	}
	if len(weeks) == 0 {
		fail(s, "", "needs <Weeks> with at least one <Week>")
	}
	return weeks
}

// xsdDuration matches the durations Task Scheduler writes (PT5M, P1D,
// P1DT12H); years and months have no fixed length and are refused.
var xsdDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$`)

// parseWinDuration reads an xsd:duration of days, hours, minutes and
// seconds.
func parseWinDuration(v string) (time.Duration, error) {
	m := xsdDuration.FindStringSubmatch(v)
	if m == nil || v == "P" || strings.HasSuffix(v, "T") {
		return 0, errors.New("want a duration of days, hours, minutes and seconds such as PT15M or P1DT12H")
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 32)
		if err != nil {
			return 0, errors.New("too long a duration")
		}
		d += time.Duration(n) * unit
	}
	if d <= 0 || d > 366*24*time.Hour {
		return 0, errors.New("want a duration above zero and at most a year")
	}
	return d, nil
}

// repeat maps a trigger's Repetition. On a TimeTrigger it is an interval
// from StartBoundary, ending with Duration. On a CalendarTrigger it adds
// times of day to the rule, when BYHOUR, BYMINUTE and BYSECOND can list
// exactly the times Windows starts (start, start + Interval, … before
// start + Duration, all on the start's day); without a Duration on a
// daily schedule, an interval that divides an hour is the same as a plain
// interval from StartBoundary.
func (c *winConv) repeat(r *xmlNode, timeTrigger bool, schedule *xmlNode, start *int64, d *task.Definition, fail func(*xmlNode, string, error)) {
	interval, duration, ok := repetitionSpan(r, d, fail)
	if !ok {
		return
	}
	everyInterval := func() {
		f, ok := intervalFrequency(interval.Milliseconds())
		if !ok {
			fail(r.child("Interval"), r.value("Interval"), errors.New("fits no frequency unit"))
			return
		}
		d.Frequency = &f
	}
	if timeTrigger {
		everyInterval()
		if duration > 0 {
			last := *start + duration.Milliseconds() - 1
			if d.End == nil || last < *d.End {
				d.End = &last
			}
		}
		return
	}
	if duration == 0 {
		if schedule != nil && schedule.name == "ScheduleByDay" && (schedule.value("DaysInterval") == "" || schedule.value("DaysInterval") == "1") && time.Hour%interval == 0 {
			d.Rrule, d.Timezone = "", ""
			everyInterval()
			return
		}
		fail(r, "", errors.New("repeats without end from each start of a calendar schedule; jobdrop can say that only for a daily schedule repeating every hour or a part of an hour: give a <Duration> of at most a day"))
		return
	}
	if duration > 24*time.Hour {
		fail(r.child("Duration"), r.value("Duration"), errors.New("is longer than a day: the repetitions of one day would run into the next; jobdrop can say repetitions within a day only"))
		return
	}
	repeatWithinDay(r, *start, interval, duration, d, fail)
}

// repetitionSpan reads the Interval and Duration of a Repetition (zero
// Duration when it has none); ok is false when r was failed.
func repetitionSpan(r *xmlNode, d *task.Definition, fail func(*xmlNode, string, error)) (interval, duration time.Duration, ok bool) {
	for _, k := range r.kids {
		v := strings.TrimSpace(k.text)
		switch k.name {
		case "Interval", "Duration":
			if v == "" {
				continue
			}
			dur, err := parseWinDuration(v)
			if err != nil {
				fail(k, v, err)
				return 0, 0, false
			}
			if k.name == "Interval" {
				interval = dur
			} else {
				duration = dur
			}
		case "StopAtDurationEnd":
			// Stops running instances; it changes no start.
			d.Data["windows.stopAtDurationEnd"] = v
		default:
			fail(k, "", errors.New("not an element of <Repetition> (Interval, Duration, StopAtDurationEnd)"))
			return 0, 0, false
		}
	}
	if interval == 0 {
		fail(r, "", errors.New("a <Repetition> needs an <Interval>"))
		return 0, 0, false
	}
	return interval, duration, true
}

// repeatWithinDay adds to d's rule the times of day a Repetition starts
// from start, every interval for duration, when hours × minutes × seconds
// can list them exactly.
func repeatWithinDay(r *xmlNode, start int64, interval, duration time.Duration, d *task.Definition, fail func(*xmlNode, string, error)) {
	loc := time.UTC
	if d.Timezone != "" {
		if l, err := time.LoadLocation(d.Timezone); err == nil {
			loc = l
		}
	}
	s := time.UnixMilli(start).In(loc)
	tod := time.Duration(s.Hour())*time.Hour + time.Duration(s.Minute())*time.Minute + time.Duration(s.Second())*time.Second
	hours, minutes, seconds := map[int]bool{}, map[int]bool{}, map[int]bool{}
	n := 0
	for k := time.Duration(0); k < duration; k += interval {
		at := tod + k
		if at >= 24*time.Hour {
			fail(r, "", fmt.Errorf("repeats past midnight (from %02d:%02d:%02d every %s for %s); jobdrop can say repetitions within a day only", s.Hour(), s.Minute(), s.Second(), r.value("Interval"), r.value("Duration")))
			return
		}
		hours[int(at/time.Hour)] = true
		minutes[int(at%time.Hour/time.Minute)] = true
		seconds[int(at%time.Minute/time.Second)] = true
		n++
	}
	if len(hours)*len(minutes)*len(seconds) != n {
		fail(r, "", fmt.Errorf("starts every %s from %02d:%02d:%02d, times no list of hours × minutes × seconds says exactly; jobdrop cannot say it: use an interval that divides an hour, or a TimeTrigger", r.value("Interval"), s.Hour(), s.Minute(), s.Second()))
		return
	}
	list := func(m map[int]bool) string {
		var out []string
		for v := range 60 {
			if m[v] {
				out = append(out, strconv.Itoa(v))
			}
		}
		return strings.Join(out, ",")
	}
	d.Rrule += ";BYHOUR=" + list(hours) + ";BYMINUTE=" + list(minutes)
	if len(seconds) > 1 || !seconds[s.Second()] {
		d.Rrule += ";BYSECOND=" + list(seconds)
	}
}
