package task

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// systemdHandPicked cover every form of systemd.time(7)'s calendar events:
// weekday lists and ranges in every spelling, dates with and without a
// year, lists, ranges, repetitions in every field, days counted from the
// end of the month, leap days and days that never come, two-digit years,
// the keywords, @timestamps, time zones and the nights their clocks
// change, and a handful systemd refuses.
var systemdHandPicked = []string{
	// Weekdays.
	"Mon..Fri *-*-* 09:00", "Sat,Sun 10:00", "Mon-Wed *-*-* 10:00", "Monday..Friday 08:30", "mon..fri",
	"sat,sun,", "Sat,Sun, 10:00", "Wed, 17:48", "Sat,Thu,Mon..Wed,Sat..Sun", "Wed..Wed,Wed *-1",
	"Tuesday 12:00", "THU 23:59:59", "Fri *-*-13 00:00", "Mon,Sun 12-*-* 2,1:23", "Wed..Sat,Tue 27-10-15 1:2:3",
	"monday *-12-* 17:00", "Mon,Fri *-*-3,1,2 *:30:45", "SUNDAY *-*-1..7 03:00", "Thu-Sat 06:00",
	// Dates.
	"2027-03-28 02:30", "27-03-28 02:30", "2027-02..04-05", "*-1/2-1,3 *:30:45", "mon,fri *-1/2-1,3 *:30:45",
	"*-*-1,15 02:00", "*-*-1..7 08:00", "*-*-1..31/10", "*-*-5/10", "*-*-01/30", "03-05 08:05:40", "10-15",
	"2027..2040/4-06-15", "2026..2030-02-29", "2027/2-01-01", "2199-12-31", "99-01-01", "69-12-31", "2027-02-29",
	"*-02-29", "*-02-29 12:00 UTC", "Mon *-02-29", "*-02-30", "*-04-31", "*-*-31", "*-2..4-30", "*-*-29..31 23:00",
	"*-*~01", "*-*~03", "*-02~03", "*-*~07/1", "*-*~03/2", "*-*~28", "*-*~1..3", "Fri *-*~1..7 12:00",
	"Mon *-05~07/1", "Sun *-*~07/1 02:30", "*-02~01", "*-02~01..02 06:00", "*-*~2,5 10:00",
	// Times.
	"*:0/15", "0..4:0/15", "*-*-* *:*:0,15,30,45", "*:2/3", "12,14,13,12:20,10,30", "12..14:10,20,30",
	"0/23:00", "*:0/59", "*:*:*", "*:*:0/20", "05:40:23", "1/2:00", "0..23/5:00", "*:5..55/10", "12:00:30.0",
	"3:4:5", "08:05:40", "05:40", "*:30", "*:*:0.000", "0..3/5:00", "*-*-* 23:59:59", "*:59:59",
	// Keywords.
	"minutely", "hourly", "daily", "weekly", "monthly", "yearly", "annually", "quarterly", "semiannually",
	"DAILY", "Weekly", "anually", "semi-annually", "biannually", "bi-annually", "daily UTC",
	"weekly Pacific/Auckland", "monthly Europe/Berlin", "hourly Asia/Kolkata", "quarterly America/New_York",
	// Timestamps.
	"@1900000000", "@1900000000 UTC", "@0", "@1800000000", "@4102444800", "@7258118399",
	// Time zones, and the nights their clocks change.
	"2027-03-28 00..04:00/15", "2027-03-28 00..04:00/15 Europe/Berlin", "2027-10-31 01..03:0/10 Europe/Berlin",
	"2027-03-14 01..03:0/20 America/New_York", "2027-11-07 00..02:0/15 America/New_York",
	"*-03-28..31 02:30 Europe/Berlin", "Sun *-10-25..31 02:30 Europe/Berlin", "Sun *-03-25..31 02:*:00 Europe/Berlin",
	"2027-10-31 02:00..59/7:30 Europe/Berlin", "Sat,Sun *-*-* 02:00 Europe/Berlin", "*-*-* 02:30 Europe/London",
	"2027-04-04 01..02:0/10 Australia/Lord_Howe", "2027-10-03 01..03:0/10 Australia/Lord_Howe",
	"Sun *-10-01..07 02:15 Australia/Lord_Howe", "Sun *-04-01..07 01:45 Australia/Lord_Howe",
	"*-*-* 02:30 Australia/Lord_Howe", "2027-04-04 02..04:0/15 Pacific/Chatham", "2027-09-26 02..04:0/15 Pacific/Chatham",
	"Sun *-09-24..30 02:45 Pacific/Chatham", "*:0/20 Pacific/Chatham", "2027-04-04 01..03:0/15 Pacific/Auckland",
	"2027-09-26 01..03:0/15 Pacific/Auckland", "*-*-* 02:30 Pacific/Auckland", "daily Pacific/Kiritimati",
	"*-*-* 23:30 Pacific/Tongatapu", "*-*-* 00:00 Asia/Kolkata", "Mon..Fri 09:30 Asia/Kolkata",
	"*-11-01..07 00:00 America/Sao_Paulo", "daily America/Sao_Paulo", "daily CET", "*:0/30 America/New_York",
	"Sun *-11-01..07 01:30 America/New_York", "Sun *-03-08..14 02:30 America/New_York",
	"*-*-* 01:59:59 America/New_York", "2027-11-07 01:*:00 America/New_York", "2027-03-14 02:*:30 America/New_York",
	"*-*~01 01:30 America/New_York", "*-*-* 03:00 Europe/Berlin", "*-*-* 00:30 Australia/Sydney",
	// Where systemd is surprising: a repetition without an end that runs
	// into a new month or year (or a minute one into a new day) keeps
	// the value it carried there, so 00:30 on 1 February 2027 and on 1
	// January 2028, 00:00 on 2 March 2027 and 1 January 2028 never fire;
	// the items of a "~" list have bounds 3 days apart; a range of
	// seconds needs two.
	"2027-01..02-31,01 0/7:30", "2027..2028-01,12-01,31 0/7:30", "2027-03-01..02 0,23:0/7",
	"2027..2028-12,01-1/7 12:00", "*-*~4..28,10", "*-*~1,2,3,4,5,6,7", "*:33..33", "*:*:33..35",
	// Refused by systemd 252.
	"*/15", "*:*/15", "~07/1", "*-*~03..1", "*-*~3..1", "*-*-32", "24:00", "*-13-01", "Fri..Mon", "daily Foo/Bar",
	"5..3:00", "*-*~29", "*-*~0", "00:00/0", "Mon..Fri..Sun", "Mon..", "Funday", "1969-12-31", "2200-01-01",
	"*-*-1/31", "*:0/60", "*-*~1/1", "~05", "*-*-01 12", "2027-*", "1,,2:00", ",Mon 10:00", "Mon,,Tue 10:00",
	"Wed..Mon 10:00", "@7258118400", "@253402300799", "12:60", "*:*:60", "Mon *-*-* 09:00 Mars/Olympus",
	"*-*~10,27", "*-*~1,2,3,4,5,6,7,8", "*:*:33..33", "22..2:00",
}

// systemdWholeSeconds are expressions systemd takes and jobdrop refuses
// on purpose: jobdrop fires on whole seconds, so it refuses a second with
// a fraction rather than fire at another time than the timer would.
var systemdWholeSeconds = []string{"*-*-* 12:00:30.5", "*:*:10.25/15"}

// systemdCombined are expressions jobdrop reads as one schedule, several
// OnCalendar= lines of a timer: each is compared with the earliest 20 of
// its parts' fires as systemd gives them (once when two coincide).
var systemdCombined = [][]string{
	{"Mon..Fri *-*-* 09:00", "Sat,Sun 10:00"},
	{"daily", "*-*-01 00:00"},
	{"2027-10-31 01..03:0/10 Europe/Berlin", "2027-10-31 01..03:5/10 America/New_York"},
	{"*-*~01 12:00", "*-*-1,15 12:00", "weekly"},
	{"2027-03-14 01..03:0/20 America/New_York", "2027-03-28 00..04:00/15 Europe/Berlin"},
}

// systemdGenerated makes n expressions from a fixed seed, so the test is
// the same at every run: random fields in every form systemd reads
// (values, lists, ranges a..b, repetitions a/r and a..b/r, "*", days
// counted from the end with ~, two-digit years, weekday names in every
// spelling), leaning to the hours 0 to 3, to the months and days of
// daylight-saving changes and to zones that have them.
func systemdGenerated(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 2))
	zones := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham",
		"Pacific/Auckland", "America/Sao_Paulo", "Asia/Kolkata", "Europe/London", "UTC"}
	out := make([]string, 0, n)
	for len(out) < n {
		var parts []string
		if r.IntN(3) == 0 {
			parts = append(parts, randomSystemdWeekdays(r))
		}
		hasDate := r.IntN(4) != 0
		if hasDate {
			date := randomSystemdField(r, 1) + "-" + randomSystemdField(r, 2)
			if r.IntN(5) == 0 {
				date = randomSystemdField(r, 1) + "~" + randomSystemdField(r, 6)
			}
			if r.IntN(3) == 0 {
				date = randomSystemdField(r, 0) + "-" + date
			}
			parts = append(parts, date)
		}
		if !hasDate || r.IntN(5) != 0 {
			clock := randomSystemdField(r, 3) + ":" + randomSystemdField(r, 4)
			if r.IntN(3) == 0 {
				clock += ":" + randomSystemdField(r, 5)
			}
			parts = append(parts, clock)
		}
		if r.IntN(3) != 0 {
			parts = append(parts, zones[r.IntN(len(zones))])
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// randomSystemdWeekdays is a weekday list: names short, long, in any
// case, ranges with ".." or "-", now and then a trailing comma.
func randomSystemdWeekdays(r *rand.Rand) string {
	short := []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	long := []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	name := func(d int) string {
		s := short[d]
		if r.IntN(4) == 0 {
			s = long[d]
		}
		switch r.IntN(6) {
		case 0:
			return strings.ToLower(s)
		case 1:
			return strings.ToUpper(s)
		}
		return s
	}
	var items []string
	for range 1 + r.IntN(2) {
		a := r.IntN(7)
		if r.IntN(2) == 0 {
			a = 6 // Sunday, the day of most daylight-saving changes
		}
		switch r.IntN(4) {
		case 0:
			b := a + r.IntN(7-a)
			if r.IntN(8) == 0 {
				b = r.IntN(7) // maybe backwards, which systemd refuses
			}
			sep := ".."
			if r.IntN(3) == 0 {
				sep = "-"
			}
			items = append(items, name(a)+sep+name(b))
		default:
			items = append(items, name(a))
		}
	}
	s := strings.Join(items, ",")
	if r.IntN(8) == 0 {
		s += ","
	}
	return s
}

// randomSystemdField is one field of kind 0 year, 1 month, 2 day, 3 hour,
// 4 minute, 5 second or 6 day counted from the end of the month.
func randomSystemdField(r *rand.Rand, kind int) string {
	lo, hi := []int{2026, 1, 1, 0, 0, 0, 1}[kind], []int{2032, 12, 31, 23, 59, 59, 28}[kind]
	num := func() int {
		switch {
		case kind == 1 && r.IntN(2) == 0:
			return []int{3, 4, 9, 10, 11}[r.IntN(5)] // months of daylight-saving changes
		case kind == 2 && r.IntN(2) == 0:
			return []int{1, 2, 3, 4, 5, 6, 7, 24, 25, 26, 27, 28, 29, 30, 31}[r.IntN(15)]
		case kind == 3 && r.IntN(2) == 0:
			return r.IntN(4)
		case kind == 6 && r.IntN(2) == 0:
			return 1 + r.IntN(7)
		}
		return lo + r.IntN(hi-lo+1)
	}
	val := func(v int) string {
		switch {
		case kind == 0 && r.IntN(4) == 0:
			return strconv.Itoa(v % 100) // a two-digit year
		case r.IntN(2) == 0:
			return fmt.Sprintf("%02d", v)
		}
		return strconv.Itoa(v)
	}
	step := func() string { return strconv.Itoa(1 + r.IntN(max(1, (hi-lo)/3))) }
	atom := func() string {
		a := num()
		switch r.IntN(7) {
		case 0, 1, 2:
			return val(a)
		case 3:
			b := a + r.IntN(hi-a+1)
			if r.IntN(10) == 0 {
				b = lo + r.IntN(hi-lo+1) // maybe backwards
			}
			return val(a) + ".." + val(b)
		case 4, 5:
			return val(a) + "/" + step()
		default:
			return fmt.Sprintf("%s..%s/%s", val(a), val(a+r.IntN(hi-a+1)), step())
		}
	}
	switch {
	case kind == 0 && r.IntN(2) == 0, kind == 1 && r.IntN(3) == 0, kind == 2 && r.IntN(5) == 0:
		return "*"
	case kind == 4 && r.IntN(6) == 0, kind == 3 && r.IntN(8) == 0:
		return "*"
	case kind == 5 && r.IntN(3) == 0:
		return "00"
	}
	if r.IntN(4) == 0 {
		parts := []string{atom()}
		for range 1 + r.IntN(2) {
			parts = append(parts, atom())
		}
		return strings.Join(parts, ",")
	}
	return atom()
}
