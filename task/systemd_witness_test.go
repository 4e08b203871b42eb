package task

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// systemdAnalyze is where Debian's systemd package puts systemd-analyze.
const systemdAnalyze = "/usr/bin/systemd-analyze"

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

// systemdFires is how many fires are asked of each expression.
const systemdFires = 20

// systemdAnswer is what systemd-analyze said of one expression: refused,
// or its fires after base (fewer than asked when there are no more:
// "never").
type systemdAnswer struct {
	refused bool
	fires   []time.Time
	base    time.Time
	// gaveUp says systemd gave up after the fires (at most 19): its
	// search found no next one in a thousand rounds.
	gaveUp bool
}

// systemdJob is one question to systemd: the next fires of exprs with
// TZ=zone, counted from base.
type systemdJob struct {
	zone  string
	base  time.Time
	exprs []string
}

// requireSystemdAnalyze skips the test when systemd-analyze is missing,
// and fails it on CI. systemd-analyze must take --base-time, which
// systemd 244 brought: every systemd of Debian 12 (252) has it.
func requireSystemdAnalyze(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(systemdAnalyze); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(systemdAnalyze + " is missing; the CI image is Debian 12 with systemd 252")
		}
		t.Skip(systemdAnalyze + " is missing")
	}
	base := time.Date(2027, 3, 27, 12, 0, 0, 0, time.UTC)
	a, err := systemdCalendar("UTC", base, 1, []string{"daily"})
	if err != nil || len(a[0].fires) != 1 || !a[0].fires[0].Equal(base.Add(12*time.Hour)) {
		t.Fatalf("systemd-analyze calendar --base-time=@%d daily: want %s (%+v, %v); --base-time came with systemd 244",
			base.Unix(), base.Add(12*time.Hour), a, err)
	}
}

// askSystemd asks systemd the jobs' questions and returns its answers to
// each job's expressions, in their order: each run of systemd-analyze on
// up to 80 expressions, as many runs at a time as there are CPUs.
func askSystemd(t *testing.T, jobs []systemdJob) [][]systemdAnswer {
	t.Helper()
	type run struct {
		job, at int
		exprs   []string
	}
	var runs []run
	answers := make([][]systemdAnswer, len(jobs))
	for i, j := range jobs {
		answers[i] = make([]systemdAnswer, len(j.exprs))
		for at := 0; at < len(j.exprs); at += 80 {
			runs = append(runs, run{i, at, j.exprs[at:min(at+80, len(j.exprs))]})
		}
	}
	errs := make([]error, len(runs))
	slots := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			j := jobs[r.job]
			as, err := systemdCalendar(j.zone, j.base, systemdFires, r.exprs)
			for k := 0; err == nil && k < len(as); k++ {
				if as[k].gaveUp {
					as[k], err = systemdUntilGivingUp(j.zone, j.base, r.exprs[k])
				}
			}
			copy(answers[r.job][r.at:], as)
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return answers
}

// systemdUntilGivingUp is the answer to expr, which systemd gave up on
// (gaveUp): systemd-analyze prints nothing of an expression when it gives
// up at any of its fires, so this asks for fewer until it has the fires
// before the one systemd cannot find.
func systemdUntilGivingUp(zone string, base time.Time, expr string) (systemdAnswer, error) {
	best := systemdAnswer{base: base, gaveUp: true}
	for ok, failed := 0, systemdFires; failed-ok > 1; {
		n := (ok + failed) / 2
		as, err := systemdCalendar(zone, base, n, []string{expr})
		switch {
		case err != nil:
			return best, err
		case as[0].gaveUp:
			failed = n
		default:
			ok, best = n, as[0]
			best.gaveUp = true
		}
	}
	return best, nil
}

// systemdCalendar runs systemd-analyze calendar --iterations=n
// --base-time=base on exprs with TZ=zone, all in one run.
func systemdCalendar(zone string, base time.Time, n int, exprs []string) ([]systemdAnswer, error) {
	env := []string{"TZ=" + zone, "LC_ALL=C", "SYSTEMD_COLORS=0", "SYSTEMD_PAGER=cat"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "TZ" && k != "LC_ALL" && !strings.HasPrefix(k, "SYSTEMD_") {
			env = append(env, kv)
		}
	}
	args := append([]string{"calendar", "--iterations=" + strconv.Itoa(n), "--base-time=@" + strconv.FormatInt(base.Unix(), 10), "--"}, exprs...)
	cmd := exec.Command(systemdAnalyze, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("systemd-analyze: %v", err)
	}
	blocks, err := parseSystemdAnalyze(stdout.String())
	if err != nil {
		return nil, fmt.Errorf("systemd-analyze with TZ=%s: %v", zone, err)
	}
	var answers []systemdAnswer
	for _, e := range exprs {
		switch {
		case len(blocks) > 0 && blocks[0].original == strings.TrimSpace(e):
			answers = append(answers, systemdAnswer{fires: blocks[0].fires, base: base})
			blocks = blocks[1:]
		case strings.Contains(stderr.String(), "Failed to parse calendar specification '"+e+"'"):
			answers = append(answers, systemdAnswer{refused: true, base: base})
		case strings.Contains(stderr.String(), "Failed to determine next elapse for '"+e+"'"):
			// systemd gave up ("Infinite loop in calendar
			// calculation") at one of the fires: a timer with the
			// expression stops there.
			answers = append(answers, systemdAnswer{base: base, gaveUp: true})
		default:
			return nil, fmt.Errorf("systemd-analyze with TZ=%s said nothing of %q:\n%s\n%s", zone, e, stdout.String(), stderr.String())
		}
	}
	if len(blocks) > 0 {
		return nil, fmt.Errorf("systemd-analyze answered %q, which it was not asked", blocks[0].original)
	}
	return answers, nil
}

// systemdBlock is systemd-analyze's answer to one expression.
type systemdBlock struct {
	original   string
	normalized bool // the Normalized form line was read
	fires      []time.Time
}

// parseSystemdAnalyze reads the output of systemd-analyze calendar: per
// expression, "Original form: ...", then "Next elapse: ..." ("never" when
// none) and "Iter. #n: ...", each followed by "(in UTC): ..." when the
// local zone is not UTC, and "From now: ...".
func parseSystemdAnalyze(out string) ([]systemdBlock, error) {
	var blocks []systemdBlock
	var utc []bool // whether each fire of the last block was read in UTC
	for _, line := range strings.Split(out, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		// A block starts with "Original form", which systemd leaves out
		// when the expression is already in its normalized form.
		if key == "Original form" || key == "Normalized form" && (len(blocks) == 0 || blocks[len(blocks)-1].normalized) {
			blocks = append(blocks, systemdBlock{original: strings.TrimSpace(val)})
			utc = nil
		}
		if len(blocks) == 0 {
			return nil, fmt.Errorf("%q before any Original form", line)
		}
		b := &blocks[len(blocks)-1]
		switch {
		case key == "Next elapse" && val == "never":
		case key == "Next elapse" || strings.HasPrefix(key, "Iter. #"):
			at, inUTC, err := parseSystemdTime(val)
			if err != nil {
				return nil, err
			}
			b.fires = append(b.fires, at)
			utc = append(utc, inUTC)
		case key == "(in UTC)":
			at, inUTC, err := parseSystemdTime(val)
			if err != nil || !inUTC || len(b.fires) == 0 {
				return nil, fmt.Errorf("%q: want a UTC time after a fire (%v)", line, err)
			}
			b.fires[len(b.fires)-1], utc[len(utc)-1] = at, true
		case key == "Original form", key == "From now":
		case key == "Normalized form":
			b.normalized = true
		default:
			return nil, fmt.Errorf("%q is not understood", line)
		}
		if len(utc) > 1 && !utc[len(utc)-2] {
			return nil, fmt.Errorf("%q: the fire before has no time in UTC", b.original)
		}
	}
	if len(utc) > 0 && !utc[len(utc)-1] {
		return nil, fmt.Errorf("%q: its last fire has no time in UTC", blocks[len(blocks)-1].original)
	}
	return blocks, nil
}

// parseSystemdTime reads "Sun 2027-10-31 00:30:00 UTC" as a wall time,
// and whether its zone is UTC.
func parseSystemdTime(s string) (time.Time, bool, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return time.Time{}, false, fmt.Errorf("time %q: want weekday, date, time and zone", s)
	}
	at, err := time.Parse("2006-01-02 15:04:05", f[1]+" "+f[2])
	return at, f[3] == "UTC", err
}

// systemdQuery is one question to systemd and jobdrop alike: the next
// fires of expr with the local time zone zone. parts are the expressions
// systemd is asked, more than one when jobdrop's expr joins them with ";".
type systemdQuery struct {
	zone, expr string
	parts      []string
}

// compareWithSystemd says how jobdrop's systemd dialect differs from
// systemd's answer to q, or "" when it agrees: both refuse, or both
// accept and give the same fires after want.base.
func compareWithSystemd(q systemdQuery, want systemdAnswer) string {
	d := Definition{Host: "h", Name: "n", Action: Insert, Topic: "t", Cron: q.expr, CronDialect: DialectSystemd, Timezone: q.zone}
	var refused string
	for _, fe := range FieldErrors(d.Validate()) {
		refused = fe.Error()
	}
	switch {
	case want.refused && refused == "":
		return "systemd refuses it, jobdrop accepts it"
	case !want.refused && refused != "":
		return "systemd accepts it, jobdrop refuses it: " + refused
	case want.refused:
		return ""
	}
	got := d.NextFires(0, want.base.UnixMilli(), systemdFires)
	loc := time.UTC
	if specs, err := parseSystemd(q.expr); err == nil && len(specs) == 1 && specs[0].loc != nil {
		loc = specs[0].loc
	} else if l := Location(q.zone); l != nil {
		loc = l
	}
	for i := range max(len(got), len(want.fires)) {
		at := func(t time.Time, ok bool) string {
			switch {
			case !ok && want.gaveUp:
				return "none (systemd gives up)"
			case !ok:
				return "none"
			}
			s := t.UTC().Format(time.RFC3339)
			if loc != time.UTC {
				s += " (" + t.In(loc).Format("2006-01-02 15:04:05 MST") + ")"
			}
			return s
		}
		var g, w time.Time
		if i < len(got) {
			g = Time(got[i])
		}
		if i < len(want.fires) {
			w = want.fires[i]
		}
		if !g.Equal(w) {
			return fmt.Sprintf("fire %d: systemd %s, jobdrop %s", i+1, at(w, i < len(want.fires)), at(g, i < len(got)))
		}
	}
	return ""
}

// mergeSystemdAnswers is the answer to several expressions read as one:
// refused if any is, else the earliest fires of them all, once each.
func mergeSystemdAnswers(parts []systemdAnswer) systemdAnswer {
	var m systemdAnswer
	for _, a := range parts {
		if a.refused {
			return systemdAnswer{refused: true, base: a.base}
		}
		m.base = a.base
		m.fires = append(m.fires, a.fires...)
	}
	slices.SortFunc(m.fires, time.Time.Compare)
	m.fires = slices.CompactFunc(m.fires, time.Time.Equal)
	m.fires = m.fires[:min(len(m.fires), systemdFires)]
	return m
}

// systemdLocalZones are the local time zones expressions without a zone
// of their own are asked in, besides UTC.
var systemdLocalZones = []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}

// systemdChangeZones and systemdChangeYears say where the fixed base
// times are: three hours before each change of these zones' clocks in
// these years, so the nights of the changes are compared whatever the
// day the test runs (the hand-picked expressions name nights of 2027).
// 2038 is past the last change the zone files list one by one: there
// the rule at their end says when the clocks change.
var (
	systemdChangeZones = []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham"}
	systemdChangeYears = []int{2027, 2031, 2038}
)

// clockChanges are the instants loc's offset changes in year, as Go's
// zone database says.
func clockChanges(loc *time.Location, year int) []time.Time {
	var out []time.Time
	start := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
	_, was := start.In(loc).Zone()
	for t := start.Add(time.Hour); t.Year() == year; t = t.Add(time.Hour) {
		if _, off := t.In(loc).Zone(); off != was {
			at := t.Add(-time.Hour)
			for _, o := at.In(loc).Zone(); o == was; _, o = at.In(loc).Zone() {
				at = at.Add(time.Minute)
			}
			out = append(out, at)
			was = off
		}
	}
	return out
}

// systemdChangeBase is a fixed base time, before a change of zone's clock.
type systemdChangeBase struct {
	zone   string
	change time.Time
}

func (b systemdChangeBase) at() time.Time { return b.change.Add(-3 * time.Hour) }

func systemdChangeBases(t *testing.T) []systemdChangeBase {
	var bases []systemdChangeBase
	for _, zone := range systemdChangeZones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, y := range systemdChangeYears {
			changes := clockChanges(loc, y)
			if len(changes) != 2 {
				t.Fatalf("%s changes its clock %d times in %d, want 2", zone, len(changes), y)
			}
			for _, c := range changes {
				bases = append(bases, systemdChangeBase{zone, c})
			}
		}
	}
	return bases
}

// TestSystemdDialectMatchesRealSystemd compares jobdrop's systemd dialect
// with systemd 252 itself (systemd-analyze calendar on Debian 12): the
// next 20 fires of hand-picked and generated expressions, from now, with
// the local zone UTC and, for expressions without a zone of their own,
// three zones with daylight-saving changes; and from fixed base times,
// three hours before each change of the clocks of Berlin, New York, Lord
// Howe and Chatham in 2027, 2031 and 2038, the expressions without a zone
// in that zone and those that name it. An expression systemd refuses must
// be refused too.
func TestSystemdDialectMatchesRealSystemd(t *testing.T) {
	requireSystemdAnalyze(t)
	start := time.Now()
	now := time.Unix(start.Unix(), 0)
	seen := map[string]bool{}
	fresh := func(list []string) []string { // list without repeats
		var out []string
		for _, e := range list {
			if !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
		return out
	}
	exprs := fresh(systemdHandPicked)
	handPicked := len(exprs)
	exprs = append(exprs, fresh(systemdGenerated(252, 400))...)

	// From now: every expression with TZ=UTC, the whole-second ones, and
	// the parts of the joined ones; those without a zone of their own
	// again in the local zones.
	var parts []string
	for _, ps := range systemdCombined {
		parts = append(parts, ps...)
	}
	first := askSystemd(t, []systemdJob{{"UTC", now, exprs}, {"UTC", now, systemdWholeSeconds}, {"UTC", now, parts}})
	utc, whole := first[0], first[1]
	partAnswers := map[string]systemdAnswer{}
	for i, p := range parts {
		partAnswers[p] = first[2][i]
	}
	var local []string
	named := map[string][]string{} // accepted expressions by the zone they name
	for i, e := range exprs {
		specs, err := parseSystemd(e)
		switch {
		case err != nil || utc[i].refused:
		case specs[0].loc == nil:
			local = append(local, e)
		default:
			named[specs[0].loc.String()] = append(named[specs[0].loc.String()], e)
		}
	}
	jobs := []systemdJob{}
	for _, zone := range systemdLocalZones {
		jobs = append(jobs, systemdJob{zone, now, local})
	}
	// From the fixed base times.
	bases := systemdChangeBases(t)
	for _, b := range bases {
		jobs = append(jobs, systemdJob{b.zone, b.at(), local}, systemdJob{"UTC", b.at(), named[b.zone]})
	}
	answered := askSystemd(t, jobs)
	asked := time.Since(start)

	var qs []systemdQuery
	var answers []systemdAnswer
	for i, e := range exprs {
		qs = append(qs, systemdQuery{zone: "UTC", expr: e, parts: []string{e}})
		answers = append(answers, utc[i])
	}
	for _, ps := range systemdCombined {
		var as []systemdAnswer
		for _, p := range ps {
			as = append(as, partAnswers[p])
		}
		qs = append(qs, systemdQuery{zone: "UTC", expr: strings.Join(ps, "; "), parts: ps})
		answers = append(answers, mergeSystemdAnswers(as))
	}
	fromNow := len(qs)
	for k, j := range jobs {
		for i, e := range j.exprs {
			qs = append(qs, systemdQuery{zone: j.zone, expr: e, parts: []string{e}})
			answers = append(answers, answered[k][i])
		}
		if k == len(systemdLocalZones)-1 {
			fromNow = len(qs)
		}
	}

	for i, e := range systemdWholeSeconds {
		if whole[i].refused {
			t.Errorf("%q: systemd refuses it; systemdWholeSeconds lists what it takes", e)
		}
		if SystemdCalendarProblem(e) == "" {
			t.Errorf("%q: jobdrop accepts a second with a fraction", e)
		}
	}
	diffs := make([]string, len(qs))
	slots := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i := range qs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			diffs[i] = compareWithSystemd(qs[i], answers[i])
		})
	}
	wg.Wait()
	mismatches, fires, fixedFires, gaveUp := 0, 0, 0, 0
	compared := map[string]bool{}
	refusedHand, refusedGenerated := 0, 0
	for i, q := range qs {
		if diffs[i] != "" {
			mismatches++
			if mismatches <= 30 {
				t.Errorf("%q with TZ=%s from %s: %s", q.expr, q.zone, answers[i].base.UTC().Format(time.RFC3339), diffs[i])
			}
			continue
		}
		if answers[i].refused {
			if i < len(exprs) {
				if i < handPicked {
					refusedHand++
				} else {
					refusedGenerated++
				}
			}
			continue
		}
		compared[q.expr] = true
		fires += len(answers[i].fires)
		if i >= fromNow {
			fixedFires += len(answers[i].fires)
		}
		if answers[i].gaveUp {
			gaveUp++
		}
	}
	var years []string
	for _, y := range systemdChangeYears {
		years = append(years, strconv.Itoa(y))
	}
	t.Logf("%d expressions (%d hand-picked, %d generated, %d joined by \";\"), from now with TZ=UTC and %d of them with TZ=%s; "+
		"from %d fixed base times, 3 hours before each change of the clocks of %s in %s, the %d without a zone in that zone "+
		"and those naming it: %d questions (%d from the fixed base times), systemd answered in %v",
		len(exprs)+len(systemdCombined), handPicked, len(exprs)-handPicked, len(systemdCombined), len(local),
		strings.Join(systemdLocalZones, ", "), len(bases), strings.Join(systemdChangeZones, ", "), strings.Join(years, ", "), len(local),
		len(qs), len(qs)-fromNow, asked.Round(time.Millisecond))
	t.Logf("%d expressions accepted by both and compared, %d fires agreed (%d from the fixed base times; %d questions where "+
		"systemd gave up and jobdrop stopped at the same fire); %d hand-picked and %d generated refused by both; %d mismatches",
		len(compared), fires, fixedFires, gaveUp, refusedHand, refusedGenerated, mismatches)
	if len(compared) < 150 {
		t.Errorf("only %d expressions accepted by systemd were compared, want at least 150", len(compared))
	}
	if refusedHand < 20 {
		t.Errorf("only %d hand-picked expressions were refused by both, want at least 20", refusedHand)
	}

	t.Run("a wrong expectation is reported", func(t *testing.T) {
		for i, q := range qs {
			if len(answers[i].fires) < 2 {
				continue
			}
			wrong := answers[i]
			wrong.fires = slices.Clone(wrong.fires)
			wrong.fires[1] = wrong.fires[1].Add(time.Second)
			if compareWithSystemd(q, wrong) == "" {
				t.Errorf("%q: a second fire moved by a second went unnoticed", q.expr)
			}
			wrong.fires = wrong.fires[:1]
			if compareWithSystemd(q, wrong) == "" {
				t.Errorf("%q: fires systemd lacks went unnoticed", q.expr)
			}
			if compareWithSystemd(q, systemdAnswer{refused: true}) == "" {
				t.Errorf("%q: a refusal went unnoticed", q.expr)
			}
			return
		}
		t.Fatal("no answer with two fires to plant a wrong one in")
	})
}
