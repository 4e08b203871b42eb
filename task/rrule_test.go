package task

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rfcExample is one example of RFC 5545 section 3.8.5.3, "Recurrence
// Rule", with the dates the RFC lists for it. The dates are copied from
// the RFC's text (pages 123 to 131), one string per line of its "==>"
// listing, written "YEAR Month d,d-d;Month d" and, for the examples listing
// times of one day, "YEAR Month d at HH:MM,HH:MM". Where the RFC elides
// dates with "...", the listing stops at the first elision and only that
// many first occurrences are compared.
type rfcExample struct {
	name    string
	dtstart string   // local time in America/New_York, as the RFC's DTSTART
	rules   []string // the rrule field; the RFC gives some rules two ways
	want    []string
	// finite: the rule has a COUNT or an UNTIL, and the listing is all of
	// it: no occurrence comes after the last one listed.
	finite bool
}

var rfcExamples = []rfcExample{
	{name: "daily for 10 occurrences", dtstart: "19970902T090000", rules: []string{"FREQ=DAILY;COUNT=10"},
		want: []string{"1997 September 2-11"}, finite: true},
	{name: "daily until December 24, 1997", dtstart: "19970902T090000", rules: []string{"FREQ=DAILY;UNTIL=19971224T000000Z"},
		want: []string{"1997 September 2-30;October 1-25", "1997 October 26-31;November 1-30;December 1-23"}, finite: true},
	{name: "every other day, forever", dtstart: "19970902T090000", rules: []string{"FREQ=DAILY;INTERVAL=2"},
		want: []string{"1997 September 2,4,6,8"}},
	{name: "every 10 days, 5 occurrences", dtstart: "19970902T090000", rules: []string{"FREQ=DAILY;INTERVAL=10;COUNT=5"},
		want: []string{"1997 September 2,12,22;October 2,12"}, finite: true},
	{name: "every day in January, for 3 years", dtstart: "19980101T090000",
		rules: []string{"FREQ=YEARLY;UNTIL=20000131T140000Z;BYMONTH=1;BYDAY=SU,MO,TU,WE,TH,FR,SA", "FREQ=DAILY;UNTIL=20000131T140000Z;BYMONTH=1"},
		want:  []string{"1998 January 1-31", "1999 January 1-31", "2000 January 1-31"}, finite: true},
	{name: "weekly for 10 occurrences", dtstart: "19970902T090000", rules: []string{"FREQ=WEEKLY;COUNT=10"},
		want: []string{"1997 September 2,9,16,23,30;October 7,14,21", "1997 October 28;November 4"}, finite: true},
	{name: "weekly until December 24, 1997", dtstart: "19970902T090000", rules: []string{"FREQ=WEEKLY;UNTIL=19971224T000000Z"},
		want: []string{"1997 September 2,9,16,23,30;October 7,14,21", "1997 October 28;November 4,11,18,25;December 2,9,16,23"}, finite: true},
	{name: "every other week, forever", dtstart: "19970902T090000", rules: []string{"FREQ=WEEKLY;INTERVAL=2;WKST=SU"},
		want: []string{"1997 September 2,16,30;October 14", "1997 October 28;November 11,25;December 9,23", "1998 January 6,20;February 3,17"}},
	{name: "weekly on Tuesday and Thursday for five weeks", dtstart: "19970902T090000",
		rules: []string{"FREQ=WEEKLY;UNTIL=19971007T000000Z;WKST=SU;BYDAY=TU,TH", "FREQ=WEEKLY;COUNT=10;WKST=SU;BYDAY=TU,TH"},
		want:  []string{"1997 September 2,4,9,11,16,18,23,25,30;October 2"}, finite: true},
	{name: "every other week on Monday, Wednesday and Friday until December 24, 1997", dtstart: "19970901T090000",
		rules: []string{"FREQ=WEEKLY;INTERVAL=2;UNTIL=19971224T000000Z;WKST=SU;BYDAY=MO,WE,FR"},
		want: []string{"1997 September 1,3,5,15,17,19,29;October 1,3,13,15,17",
			"1997 October 27,29,31;November 10,12,14,24,26,28;December 8,10,12,22"}, finite: true},
	{name: "every other week on Tuesday and Thursday, for 8 occurrences", dtstart: "19970902T090000",
		rules: []string{"FREQ=WEEKLY;INTERVAL=2;COUNT=8;WKST=SU;BYDAY=TU,TH"},
		want:  []string{"1997 September 2,4,16,18,30;October 2,14,16"}, finite: true},
	{name: "monthly on the first Friday for 10 occurrences", dtstart: "19970905T090000", rules: []string{"FREQ=MONTHLY;COUNT=10;BYDAY=1FR"},
		want: []string{"1997 September 5;October 3", "1997 November 7;December 5", "1998 January 2;February 6;March 6;April 3", "1998 May 1;June 5"}, finite: true},
	{name: "monthly on the first Friday until December 24, 1997", dtstart: "19970905T090000",
		rules: []string{"FREQ=MONTHLY;UNTIL=19971224T000000Z;BYDAY=1FR"},
		want:  []string{"1997 September 5;October 3", "1997 November 7;December 5"}, finite: true},
	{name: "every other month on the first and last Sunday for 10 occurrences", dtstart: "19970907T090000",
		rules: []string{"FREQ=MONTHLY;INTERVAL=2;COUNT=10;BYDAY=1SU,-1SU"},
		want:  []string{"1997 September 7,28", "1997 November 2,30", "1998 January 4,25;March 1,29", "1998 May 3,31"}, finite: true},
	{name: "monthly on the second-to-last Monday for 6 months", dtstart: "19970922T090000", rules: []string{"FREQ=MONTHLY;COUNT=6;BYDAY=-2MO"},
		want: []string{"1997 September 22;October 20", "1997 November 17;December 22", "1998 January 19;February 16"}, finite: true},
	{name: "monthly on the third-to-the-last day, forever", dtstart: "19970928T090000", rules: []string{"FREQ=MONTHLY;BYMONTHDAY=-3"},
		want: []string{"1997 September 28", "1997 October 29;November 28;December 29", "1998 January 29;February 26"}},
	{name: "monthly on the 2nd and 15th for 10 occurrences", dtstart: "19970902T090000", rules: []string{"FREQ=MONTHLY;COUNT=10;BYMONTHDAY=2,15"},
		want: []string{"1997 September 2,15;October 2,15", "1997 November 2,15;December 2,15", "1998 January 2,15"}, finite: true},
	{name: "monthly on the first and last day for 10 occurrences", dtstart: "19970930T090000", rules: []string{"FREQ=MONTHLY;COUNT=10;BYMONTHDAY=1,-1"},
		want: []string{"1997 September 30;October 1", "1997 October 31;November 1,30;December 1,31", "1998 January 1,31;February 1"}, finite: true},
	{name: "every 18 months on the 10th thru 15th for 10 occurrences", dtstart: "19970910T090000",
		rules: []string{"FREQ=MONTHLY;INTERVAL=18;COUNT=10;BYMONTHDAY=10,11,12,13,14,15"},
		want:  []string{"1997 September 10,11,12,13,14,15", "1999 March 10,11,12,13"}, finite: true},
	{name: "every Tuesday, every other month", dtstart: "19970902T090000", rules: []string{"FREQ=MONTHLY;INTERVAL=2;BYDAY=TU"},
		want: []string{"1997 September 2,9,16,23,30", "1997 November 4,11,18,25", "1998 January 6,13,20,27;March 3,10,17,24,31"}},
	{name: "yearly in June and July for 10 occurrences", dtstart: "19970610T090000", rules: []string{"FREQ=YEARLY;COUNT=10;BYMONTH=6,7"},
		want: []string{"1997 June 10;July 10", "1998 June 10;July 10", "1999 June 10;July 10", "2000 June 10;July 10", "2001 June 10;July 10"}, finite: true},
	{name: "every other year on January, February and March for 10 occurrences", dtstart: "19970310T090000",
		rules: []string{"FREQ=YEARLY;INTERVAL=2;COUNT=10;BYMONTH=1,2,3"},
		want: []string{"1997 March 10", "1999 January 10;February 10;March 10", "2001 January 10;February 10;March 10",
			"2003 January 10;February 10;March 10"}, finite: true},
	{name: "every third year on the 1st, 100th and 200th day for 10 occurrences", dtstart: "19970101T090000",
		rules: []string{"FREQ=YEARLY;INTERVAL=3;COUNT=10;BYYEARDAY=1,100,200"},
		want: []string{"1997 January 1", "1997 April 10;July 19", "2000 January 1", "2000 April 9;July 18", "2003 January 1",
			"2003 April 10;July 19", "2006 January 1"}, finite: true},
	{name: "every 20th Monday of the year, forever", dtstart: "19970519T090000", rules: []string{"FREQ=YEARLY;BYDAY=20MO"},
		want: []string{"1997 May 19", "1998 May 18", "1999 May 17"}},
	{name: "Monday of week number 20, forever", dtstart: "19970512T090000", rules: []string{"FREQ=YEARLY;BYWEEKNO=20;BYDAY=MO"},
		want: []string{"1997 May 12", "1998 May 11", "1999 May 17"}},
	{name: "every Thursday in March, forever", dtstart: "19970313T090000", rules: []string{"FREQ=YEARLY;BYMONTH=3;BYDAY=TH"},
		want: []string{"1997 March 13,20,27", "1998 March 5,12,19,26", "1999 March 4,11,18,25"}},
	{name: "every Thursday, but only during June, July and August, forever", dtstart: "19970605T090000",
		rules: []string{"FREQ=YEARLY;BYDAY=TH;BYMONTH=6,7,8"},
		want: []string{"1997 June 5,12,19,26;July 3,10,17,24,31;August 7,14,21,28", "1998 June 4,11,18,25;July 2,9,16,23,30;August 6,13,20,27",
			"1999 June 3,10,17,24;July 1,8,15,22,29;August 5,12,19,26"}},
	{name: "every Friday the 13th, forever", dtstart: "19970902T090000",
		rules: []string{"RRULE:FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13\nEXDATE;TZID=America/New_York:19970902T090000"},
		want:  []string{"1998 February 13;March 13;November 13", "1999 August 13", "2000 October 13"}},
	{name: "the first Saturday that follows the first Sunday of the month, forever", dtstart: "19970913T090000",
		rules: []string{"FREQ=MONTHLY;BYDAY=SA;BYMONTHDAY=7,8,9,10,11,12,13"},
		want:  []string{"1997 September 13;October 11", "1997 November 8;December 13", "1998 January 10;February 7;March 7", "1998 April 11;May 9;June 13"}},
	{name: "every 4 years, the first Tuesday after a Monday in November, forever", dtstart: "19961105T090000",
		rules: []string{"FREQ=YEARLY;INTERVAL=4;BYMONTH=11;BYDAY=TU;BYMONTHDAY=2,3,4,5,6,7,8"},
		want:  []string{"1996 November 5", "2000 November 7", "2004 November 2"}},
	{name: "the third instance of one of Tuesday, Wednesday or Thursday, for the next 3 months", dtstart: "19970904T090000",
		rules: []string{"FREQ=MONTHLY;COUNT=3;BYDAY=TU,WE,TH;BYSETPOS=3"},
		want:  []string{"1997 September 4;October 7", "1997 November 6"}, finite: true},
	{name: "the second-to-last weekday of the month", dtstart: "19970929T090000", rules: []string{"FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-2"},
		want: []string{"1997 September 29", "1997 October 30;November 27;December 30", "1998 January 29;February 26;March 30"}},
	// The RFC lists 09:00,12:00,15:00 for UNTIL=19970902T170000Z, but
	// 17:00 UTC is 13:00 EDT, and 15:00 EDT is after it: the listing reads
	// UNTIL as local time, the rule says UTC. The UTC rule is held to
	// what UNTIL means (inclusive, so 09:00 and 12:00), and the listing is
	// checked against the same rule with UNTIL in local time.
	{name: "every 3 hours from 9:00 AM to 5:00 PM on a specific day (UNTIL in UTC, as written)", dtstart: "19970902T090000",
		rules: []string{"FREQ=HOURLY;INTERVAL=3;UNTIL=19970902T170000Z"},
		want:  []string{"1997 September 2 at 09:00,12:00"}, finite: true},
	{name: "every 3 hours from 9:00 AM to 5:00 PM on a specific day (UNTIL in local time, as listed)", dtstart: "19970902T090000",
		rules: []string{"FREQ=HOURLY;INTERVAL=3;UNTIL=19970902T170000"},
		want:  []string{"1997 September 2 at 09:00,12:00,15:00"}, finite: true},
	{name: "every 15 minutes for 6 occurrences", dtstart: "19970902T090000", rules: []string{"FREQ=MINUTELY;INTERVAL=15;COUNT=6"},
		want: []string{"1997 September 2 at 09:00,09:15,09:30,09:45,10:00,10:15"}, finite: true},
	// The RFC separates the last three times with ";" here.
	{name: "every hour and a half for 4 occurrences", dtstart: "19970902T090000", rules: []string{"FREQ=MINUTELY;INTERVAL=90;COUNT=4"},
		want: []string{"1997 September 2 at 09:00,10:30,12:00,13:30"}, finite: true},
	{name: "every 20 minutes from 9:00 AM to 4:40 PM every day", dtstart: "19970902T090000",
		rules: []string{"FREQ=DAILY;BYHOUR=9,10,11,12,13,14,15,16;BYMINUTE=0,20,40", "FREQ=MINUTELY;INTERVAL=20;BYHOUR=9,10,11,12,13,14,15,16"},
		want:  []string{"1997 September 2 at 09:00,09:20,09:40,10:00,10:20"}},
	{name: "WKST=MO makes the days generated differ", dtstart: "19970805T090000", rules: []string{"FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=MO"},
		want: []string{"1997 August 5,10,19,24"}, finite: true},
	{name: "WKST=SU makes the days generated differ", dtstart: "19970805T090000", rules: []string{"FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=SU"},
		want: []string{"1997 August 5,17,19,31"}, finite: true},
	{name: "an invalid date (February 30) is ignored", dtstart: "20070115T090000", rules: []string{"FREQ=MONTHLY;BYMONTHDAY=15,30;COUNT=5"},
		want: []string{"2007 January 15,30", "2007 February 15", "2007 March 15,30"}, finite: true},
}

// TestRFC5545Examples runs every example of RFC 5545 section 3.8.5.3 as a
// task with start at the example's DTSTART in America/New_York, and
// compares its fires with the dates the RFC lists.
func TestRFC5545Examples(t *testing.T) {
	ny := Location("America/New_York")
	for _, ex := range rfcExamples {
		for i, rule := range ex.rules {
			t.Run(fmt.Sprintf("%s/%d", ex.name, i), func(t *testing.T) {
				w, err := time.Parse("20060102T150405", ex.dtstart)
				if err != nil {
					t.Fatal(err)
				}
				start, _ := instantOf(w, ny)
				d := Definition{Host: "h", Name: "n", Action: Insert, Topic: "t", Rrule: rule,
					Timezone: "America/New_York", Start: Ptr(start.UnixMilli())}
				if err := d.Validate(); err != nil {
					t.Fatalf("Validate: %v", err)
				}
				want := rfcDates(t, ny, ex.want)
				n := len(want)
				if ex.finite {
					n++
				}
				var got []string
				for _, ms := range d.NextFires(*d.Start, *d.Start-1, n) {
					got = append(got, Time(ms).In(ny).Format("2006-01-02 15:04 MST"))
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("rrule %q from %s:\n got %q\nwant %q", rule, ex.dtstart, got, want)
				}
			})
		}
	}
}

// rfcDates expands the RFC's listing lines into local times.
func rfcDates(t *testing.T, loc *time.Location, lines []string) []string {
	t.Helper()
	var out []string
	for _, line := range lines {
		year, rest, _ := strings.Cut(line, " ")
		y, err := strconv.Atoi(year)
		if err != nil {
			t.Fatalf("listing %q: year", line)
		}
		rest, at, _ := strings.Cut(rest, " at ")
		times := []string{"09:00"}
		if at != "" {
			times = strings.Split(at, ",")
		}
		for group := range strings.SplitSeq(rest, ";") {
			month, days, _ := strings.Cut(strings.TrimSpace(group), " ")
			m, err := time.Parse("January", month)
			if err != nil {
				t.Fatalf("listing %q: month %q", line, month)
			}
			for part := range strings.SplitSeq(days, ",") {
				lo, hi, isRange := strings.Cut(part, "-")
				a, err1 := strconv.Atoi(lo)
				b := a
				var err2 error
				if isRange {
					b, err2 = strconv.Atoi(hi)
				}
				if err1 != nil || err2 != nil {
					t.Fatalf("listing %q: days %q", line, part)
				}
				for day := a; day <= b; day++ {
					for _, hm := range times {
						c, err := time.Parse("15:04", hm)
						if err != nil {
							t.Fatalf("listing %q: time %q", line, hm)
						}
						local := time.Date(y, m.Month(), day, c.Hour(), c.Minute(), 0, 0, loc)
						out = append(out, local.Format("2006-01-02 15:04 MST"))
					}
				}
			}
		}
	}
	return out
}

// TestRruleDaylightSaving checks the RFC 5545 reading of local times at a
// change of offset, where rrule-go alone (through time.Date) differs: a
// time shown twice is the first of the two (rrule-go takes the second),
// and a skipped time that two wall times map to fires once (rrule-go
// yields it twice).
func TestRruleDaylightSaving(t *testing.T) {
	paris := Location("Europe/Paris")
	at := func(s string) int64 {
		w, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		i, _ := instantOf(w, paris)
		return i.UnixMilli()
	}
	for _, tc := range []struct {
		name, start, rule string
		n                 int
		want              []string // RFC 3339 instants
	}{
		{name: "a daily 02:30 fires at 03:30 CEST on the spring-forward night", start: "2026-03-27 02:30", rule: "FREQ=DAILY", n: 4,
			want: []string{"2026-03-27T02:30:00+01:00", "2026-03-28T02:30:00+01:00", "2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{name: "a daily 02:30 fires once, at the first, on the fall-back night", start: "2026-10-24 02:30", rule: "FREQ=DAILY", n: 3,
			want: []string{"2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{name: "hourly across the spring-forward gap: 02:30 and 03:30 are one instant, fired once", start: "2026-03-29 00:30", rule: "FREQ=HOURLY", n: 4,
			want: []string{"2026-03-29T00:30:00+01:00", "2026-03-29T01:30:00+01:00", "2026-03-29T03:30:00+02:00", "2026-03-29T04:30:00+02:00"}},
		{name: "every 20 minutes across the gap stays in time order", start: "2026-03-29 01:40", rule: "FREQ=MINUTELY;INTERVAL=20", n: 6,
			want: []string{"2026-03-29T01:40:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:20:00+02:00", "2026-03-29T03:40:00+02:00",
				"2026-03-29T04:00:00+02:00", "2026-03-29T04:20:00+02:00"}},
		{name: "hourly across the fall-back night: the repeated hour once", start: "2026-10-25 01:00", rule: "FREQ=HOURLY", n: 4,
			want: []string{"2026-10-25T01:00:00+02:00", "2026-10-25T02:00:00+02:00", "2026-10-25T03:00:00+01:00", "2026-10-25T04:00:00+01:00"}},
		{name: "an EXDATE in local time removes that day, an RDATE adds one", start: "2026-03-02 09:00",
			rule: "RRULE:FREQ=WEEKLY;COUNT=3\nEXDATE:20260309T090000\nRDATE:20260304T120000Z", n: 4,
			want: []string{"2026-03-02T09:00:00+01:00", "2026-03-04T13:00:00+01:00", "2026-03-16T09:00:00+01:00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Definition{Host: "h", Name: "n", Action: Insert, Topic: "t", Rrule: tc.rule, Timezone: "Europe/Paris", Start: Ptr(at(tc.start))}
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ms := range d.NextFires(*d.Start, *d.Start-1, tc.n) {
				got = append(got, Time(ms).In(paris).Format(time.RFC3339))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestRruleSchedule checks the rrule kind through the paths every kind
// shares: the first fire, misfire policies after downtime, a window, end,
// pause and the preview.
func TestRruleSchedule(t *testing.T) {
	paris := Location("Europe/Paris")
	local := func(s string) int64 {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, paris)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	show := func(ms []int64) string {
		var s []string
		for _, m := range ms {
			s = append(s, Time(m).In(paris).Format("2006-01-02 15:04"))
		}
		return strings.Join(s, ", ")
	}
	// The second Tuesday of each month at 09:00.
	base := Definition{Host: "h", Name: "n", Action: Insert, Topic: "t", Rrule: "FREQ=MONTHLY;BYDAY=2TU;BYHOUR=9;BYMINUTE=0;BYSECOND=0",
		Timezone: "Europe/Paris", Start: Ptr(local("2026-01-01 00:00"))}
	if got, want := base.When(), "rrule FREQ=MONTHLY;BYDAY=2TU;BYHOUR=9;BYMINUTE=0;BYSECOND=0 (Europe/Paris)"; got != want {
		t.Errorf("When() = %q, want %q", got, want)
	}
	if got, want := show(base.Fires(local("2026-02-01 00:00"), 3)), "2026-02-10 09:00, 2026-03-10 09:00, 2026-04-14 09:00"; got != want {
		t.Errorf("preview from February: %s, want %s", got, want)
	}
	anchor := *base.Start
	due := local("2026-01-13 09:00")
	now := local("2026-04-20 12:00") // down since before the January fire
	for _, tc := range []struct {
		misfire Misfire
		want    string
	}{
		{FireOnce, "2026-04-14 09:00"},
		{Skip, ""},
		{FireAll, "2026-01-13 09:00"},
	} {
		d := base
		d.Misfire = tc.misfire
		fire, fires, following, _ := d.Plan(anchor, due, now)
		got := ""
		if fires {
			got = show([]int64{fire})
		}
		if got != tc.want {
			t.Errorf("%s after downtime fires %q, want %q", tc.misfire, got, tc.want)
		}
		if tc.misfire == Skip && show([]int64{following}) != "2026-05-12 09:00" {
			t.Errorf("SKIP waits for %s, want 2026-05-12 09:00", show([]int64{following}))
		}
	}
	if n := base.Occurrences(anchor, due, local("2026-04-14 09:00")); n != 4 {
		t.Errorf("Occurrences from January to April = %d, want 4", n)
	}

	withEnd := base
	withEnd.End = Ptr(local("2026-03-31 00:00"))
	if got := show(withEnd.NextFires(anchor, anchor-1, 5)); got != "2026-01-13 09:00, 2026-02-10 09:00, 2026-03-10 09:00" {
		t.Errorf("with end: %s", got)
	}
	windowed := base
	windowed.Window = &Window{From: "10:00", To: "12:00"}
	if got := show(windowed.NextFires(anchor, anchor-1, 1)); got != "2026-01-13 10:00" {
		t.Errorf("with a window opening at 10:00: %s", got)
	}
	paused := base
	paused.Active = Ptr(false)
	if got := paused.Fires(anchor, 3); len(got) != 0 {
		t.Errorf("a paused task previews %s", show(got))
	}
}

func TestRruleValidate(t *testing.T) {
	ok := Definition{Host: "h", Name: "n", Action: Insert, Topic: "t", Rrule: "FREQ=WEEKLY;BYDAY=MO", Start: Ptr(int64(1_767_225_600_000))}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid rule refused: %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(d *Definition)
		field string
		says  string
	}{
		{"not a rule", func(d *Definition) { d.Rrule = "FREQ=FORTNIGHTLY" }, "rrule", "FORTNIGHTLY"},
		{"a DTSTART of its own", func(d *Definition) { d.Rrule = "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY" }, "rrule", "DTSTART"},
		{"an unknown line", func(d *Definition) { d.Rrule = "FREQ=DAILY\nEXRULE:FREQ=WEEKLY" }, "rrule", "EXRULE"},
		{"a bad EXDATE", func(d *Definition) { d.Rrule = "FREQ=DAILY\nEXDATE:2026-01-01" }, "rrule", "2026-01-01"},
		{"no start", func(d *Definition) { d.Start = nil }, "start", "DTSTART"},
		{"milliseconds in start", func(d *Definition) { d.Start = Ptr(*d.Start + 5) }, "start", "whole second"},
		{"with cron", func(d *Definition) { d.Cron = "0 2 * * *" }, "rrule", "cron"},
		{"with a frequency", func(d *Definition) { d.Frequency = &Frequency{TimeUnit: Days, Time: 1} }, "rrule", "frequency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ok
			tc.edit(&d)
			found := false
			for _, fe := range FieldErrors(d.Validate()) {
				if fe.Field == tc.field && strings.Contains(fe.Error(), tc.says) {
					found = true
				}
			}
			if !found {
				t.Errorf("want a %s error saying %q, got %v", tc.field, tc.says, d.Validate())
			}
		})
	}
}

// BenchmarkRruleNextFire is the engine's step: the next fire after the one
// just fired, for a rule started two years earlier.
func BenchmarkRruleNextFire(b *testing.B) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	d := Definition{Rrule: "FREQ=MINUTELY;INTERVAL=5;BYDAY=MO,TU,WE,TH,FR", Timezone: "Europe/Paris", Start: &start}
	at := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).UnixMilli()
	d.NextFire(start, at) // the walk from DTSTART, once
	for b.Loop() {
		next, ok := d.NextFire(start, at)
		if !ok {
			b.Fatal("no next fire")
		}
		at = next
	}
}
