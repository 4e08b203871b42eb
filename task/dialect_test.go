package task

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// springFires lists the next n fires of a Spring expression after from, a
// local time in zone ("2020-01-01T00:00:00"), as local times.
func springFires(t *testing.T, expr, zone, from string, n int) []string {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	start, err := time.ParseInLocation("2006-01-02T15:04:05", from, loc)
	if err != nil {
		t.Fatal(err)
	}
	d := Definition{Cron: expr, CronDialect: DialectSpring, Timezone: zone}
	var out []string
	for _, f := range d.NextFires(0, start.UnixMilli(), n) {
		out = append(out, Time(f).In(loc).Format("2006-01-02T15:04:05Z07:00"))
	}
	return out
}

// TestSpringDialectFollowsSpringsTests: each case is retyped from Spring
// Framework's spring-context CronExpressionTests
// (org/springframework/scheduling/support/CronExpressionTests.java, the
// test method named in the case) or from the CronExpression javadoc.
// Times are local; LocalDateTime cases run in UTC.
func TestSpringDialectFollowsSpringsTests(t *testing.T) {
	cases := []struct {
		name, expr, zone, from string
		want                   []string
	}{
		{"javadoc: top of every hour of every day", "0 0 * * * *", "UTC", "2020-01-01T10:30:00",
			[]string{"2020-01-01T11:00:00Z", "2020-01-01T12:00:00Z"}},
		{"javadoc: every ten seconds", "*/10 * * * * *", "UTC", "2020-01-01T10:30:05",
			[]string{"2020-01-01T10:30:10Z", "2020-01-01T10:30:20Z"}},
		{"javadoc: 8, 9 and 10 o'clock of every day", "0 0 8-10 * * *", "UTC", "2020-01-01T09:30:00",
			[]string{"2020-01-01T10:00:00Z", "2020-01-02T08:00:00Z"}},
		{"javadoc: on the hour nine-to-five weekdays", "0 0 9-17 * * MON-FRI", "UTC", "2020-01-03T17:30:00",
			[]string{"2020-01-06T09:00:00Z"}},
		{"javadoc: every Christmas Day at midnight", "0 0 0 25 12 ?", "UTC", "2020-01-01T00:00:00",
			[]string{"2020-12-25T00:00:00Z", "2021-12-25T00:00:00Z"}},
		{"javadoc: last day of the month at midnight", "0 0 0 L * *", "UTC", "2020-01-31T12:00:00",
			[]string{"2020-02-29T00:00:00Z", "2020-03-31T00:00:00Z"}},
		{"javadoc: third-to-last day of the month", "0 0 0 L-3 * *", "UTC", "2020-01-01T00:00:00",
			[]string{"2020-01-28T00:00:00Z", "2020-02-26T00:00:00Z"}},
		{"javadoc: last Friday of the month", "0 0 0 * * 5L", "UTC", "2020-01-01T00:00:00",
			[]string{"2020-01-31T00:00:00Z", "2020-02-28T00:00:00Z"}},
		{"javadoc: last Thursday of the month", "0 0 0 * * THUL", "UTC", "2020-01-01T00:00:00",
			[]string{"2020-01-30T00:00:00Z", "2020-02-27T00:00:00Z"}},
		{"javadoc: @weekly is Sunday midnight", "@weekly", "UTC", "2020-01-01T00:00:00",
			[]string{"2020-01-05T00:00:00Z", "2020-01-12T00:00:00Z"}},
		{"javadoc: @monthly", "@monthly", "UTC", "2020-01-15T00:00:00", []string{"2020-02-01T00:00:00Z"}},
		{"javadoc: @annually", "@annually", "UTC", "2020-01-15T00:00:00", []string{"2021-01-01T00:00:00Z"}},
		{"javadoc: @midnight", "@midnight", "UTC", "2020-01-15T10:00:00", []string{"2020-01-16T00:00:00Z"}},
		{"quartzWeekdayNearestTo1", "0 0 0 1W * ?", "UTC", "2019-12-31T00:00:00",
			[]string{"2020-01-01T00:00:00Z", "2020-02-03T00:00:00Z", "2020-03-02T00:00:00Z", "2020-04-01T00:00:00Z"}},
		{"quartzWeekdayNearestTo1: Saturday 1st moves to Monday 3rd", "0 0 0 1W * ?", "UTC", "2022-01-01T00:00:00",
			[]string{"2022-01-03T00:00:00Z"}},
		{"quartzWeekdayNearestTo1: Sunday 1st moves to Monday 2nd", "0 0 0 1W * ?", "UTC", "2021-08-01T00:00:00",
			[]string{"2021-08-02T00:00:00Z"}},
		{"quartzWeekdayNearestTo31", "0 0 0 31W * ?", "UTC", "2020-01-01T00:00:00",
			[]string{"2020-01-31T00:00:00Z", "2020-03-31T00:00:00Z", "2020-07-31T00:00:00Z", "2020-08-31T00:00:00Z", "2020-10-30T00:00:00Z", "2020-12-31T00:00:00Z"}},
		{"quartz2ndFridayOfTheMonth", "0 0 0 ? * 5#2", "UTC", "2020-01-01T00:00:00",
			[]string{"2020-01-10T00:00:00Z", "2020-02-14T00:00:00Z", "2020-03-13T00:00:00Z", "2020-04-10T00:00:00Z"}},
		{"quartz2ndFridayOfTheMonthDayName", "0 0 0 ? * FRI#2", "UTC", "2020-01-01T00:00:00",
			[]string{"2020-01-10T00:00:00Z", "2020-02-14T00:00:00Z"}},
		{"quartzFifthWednesdayOfTheMonth", "0 0 0 ? * 3#5", "UTC", "2020-01-01T00:00:00",
			[]string{"2020-01-29T00:00:00Z", "2020-04-29T00:00:00Z", "2020-07-29T00:00:00Z", "2020-09-30T00:00:00Z", "2020-12-30T00:00:00Z"}},
		{"dayOfMonthListWithQuartz", "0 0 0 1W,15,LW * ?", "UTC", "2019-12-30T00:00:00",
			[]string{"2019-12-31T00:00:00Z", "2020-01-01T00:00:00Z", "2020-01-15T00:00:00Z", "2020-01-31T00:00:00Z"}},
		{"dayOfWeekListWithQuartz", "0 0 0 ? * THU#1,THU#3,THU#5", "UTC", "2019-12-31T00:00:00",
			[]string{"2020-01-02T00:00:00Z", "2020-01-16T00:00:00Z", "2020-01-30T00:00:00Z"}},
		{"quartzLastDayOfMonthEveryHour", "0 0 * L * *", "UTC", "2021-01-30T00:01:00",
			[]string{"2021-01-31T00:00:00Z", "2021-01-31T01:00:00Z"}},
		{"quartzLastDayOfMonthOffsetEveryHour", "0 0 * L-1 * *", "UTC", "2021-01-29T00:01:00",
			[]string{"2021-01-30T00:00:00Z", "2021-01-30T01:00:00Z"}},
		{"quartzFirstWeekdayOfMonthEveryHour", "0 0 * 1W * *", "UTC", "2021-01-31T00:01:00",
			[]string{"2021-02-01T00:00:00Z", "2021-02-01T01:00:00Z"}},
		{"quartzLastWeekdayOfMonthEveryHour", "0 0 * LW * *", "UTC", "2021-01-28T00:01:00",
			[]string{"2021-01-29T00:00:00Z", "2021-01-29T01:00:00Z"}},
		{"quartz5thFridayOfTheMonthEveryHour", "0 0 * ? * FRI#5", "UTC", "2021-01-28T00:01:00",
			[]string{"2021-01-29T00:00:00Z", "2021-01-29T01:00:00Z"}},
		{"quartzLastFridayOfTheMonthEveryHour", "0 0 * ? * FRIL", "UTC", "2021-01-28T00:01:00",
			[]string{"2021-01-29T00:00:00Z", "2021-01-29T01:00:00Z"}},
		{"sundayToFriday", "0 0 0 ? * SUN-FRI", "UTC", "2021-02-25T15:00:00",
			[]string{"2021-02-26T00:00:00Z", "2021-02-28T00:00:00Z"}},
		{"daylightSaving: 09:00 across spring forward", "0 0 9 * * *", "Europe/Amsterdam", "2021-03-27T09:00:00",
			[]string{"2021-03-28T09:00:00+02:00"}},
		{"daylightSaving: 09:00 across fall back", "0 0 9 * * *", "Europe/Amsterdam", "2021-10-30T09:00:00",
			[]string{"2021-10-31T09:00:00+01:00"}},
		{"daylightSaving: 02:10 skipped on the spring-forward night", "0 10 2 * * *", "Europe/Amsterdam", "2013-03-31T01:09:00",
			[]string{"2013-04-01T02:10:00+02:00"}},
		{"daylightSaving: 00:05 the day after", "0 5 0 * * *", "Europe/Amsterdam", "2021-03-28T01:00:00",
			[]string{"2021-03-29T00:05:00+02:00"}},
		{"various: both day fields must match", "3-57 13-28 17,18 1,15 3-12 6#1", "UTC", "2022-09-15T17:44:11",
			[]string{"2022-10-01T17:13:03Z"}},
		{"various: every sixth day", "*/28 56 22 */6 * *", "UTC", "2022-02-27T08:00:42",
			[]string{"2022-03-01T22:56:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := springFires(t, c.expr, c.zone, c.from, len(c.want))
			if !slices.Equal(got, c.want) {
				t.Errorf("%s from %s: got %v, want %v", c.expr, c.from, got, c.want)
			}
		})
	}
}

// TestDialectsReadDayOfWeekNumbersTheirOwnWay: the same text, three
// schedules; auto reads a "?" as Quartz.
func TestDialectsReadDayOfWeekNumbersTheirOwnWay(t *testing.T) {
	from := "2026-03-02T00:00:00Z" // a Monday
	cases := []struct {
		name    string
		expr    string
		dialect Dialect
		want    []string
	}{
		{"quartz: 2-6 is Monday to Friday", "0 0 12 ? * 2-6", DialectQuartz, []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Mon"}},
		{"auto reads ? as quartz", "0 0 12 ? * 2-6", "", []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Mon"}},
		{"spring: 2-6 is Tuesday to Saturday", "0 0 12 ? * 2-6", DialectSpring, []string{"Tue", "Wed", "Thu", "Fri", "Sat", "Tue"}},
		{"unix with seconds: 2-6 is Tuesday to Saturday", "0 0 12 * * 2-6", DialectUnix, []string{"Tue", "Wed", "Thu", "Fri", "Sat", "Tue"}},
		{"quartz: 6#3 is the third Friday", "0 0 12 ? * 6#3", DialectQuartz, []string{"Fri"}},
		{"spring: 6#3 is the third Saturday", "0 0 12 ? * 6#3", DialectSpring, []string{"Sat"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Definition{Cron: c.expr, CronDialect: c.dialect}
			var got []string
			for _, f := range d.NextFires(0, ms(from), len(c.want)) {
				got = append(got, Time(f).Format("Mon"))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestQuartzDaylightSaving pins what the witness found Quartz does: a wall
// time skipped by spring forward does not fire, a repeated one fires once,
// at its second showing.
func TestQuartzDaylightSaving(t *testing.T) {
	cases := []struct {
		name, expr, zone, from, to string
		want                       []string
	}{
		{"Paris spring: 02:30 does not fire that night", "0 30 2 * * ?", "Europe/Paris",
			"2026-03-28T12:00:00Z", "2026-03-31T00:00:00Z", []string{"03-30 02:30 +02"}},
		{"Paris spring: hourly skips the missing hour", "0 30 * * * ?", "Europe/Paris",
			"2026-03-28T23:15:00Z", "2026-03-29T02:00:00Z", []string{"03-29 00:30 +01", "03-29 01:30 +01", "03-29 03:30 +02"}},
		{"Paris autumn: 02:30 fires once, in winter time", "0 30 2 * * ?", "Europe/Paris",
			"2026-10-24T12:00:00Z", "2026-10-26T12:00:00Z", []string{"10-25 02:30 +01", "10-26 02:30 +01"}},
		{"Paris autumn: hourly fires the repeated hour once", "0 30 * * * ?", "Europe/Paris",
			"2026-10-24T23:00:00Z", "2026-10-25T03:00:00Z", []string{"10-25 01:30 +02", "10-25 02:30 +01", "10-25 03:30 +01"}},
		// Zones more than 12 hours ahead of UTC, and a change of half an
		// hour, as real Quartz gives them.
		{"Auckland autumn: 02:30 fires once, in winter time", "0 30 1,2 * * ?", "Pacific/Auckland",
			"2026-04-04T09:00:00Z", "2026-04-05T12:00:00Z", []string{"04-05 01:30 +13", "04-05 02:30 +12"}},
		{"Chatham autumn: 03:00 fires once, in winter time", "0 0 3 * * ?", "Pacific/Chatham",
			"2026-04-04T09:00:00Z", "2026-04-05T12:00:00Z", []string{"04-05 03:00 +1245"}},
		{"Chatham spring: 03:00 becomes 04:00, so 03:50 does not fire that night", "0 50 3 * * ?", "Pacific/Chatham",
			"2026-09-26T09:30:00Z", "2026-09-28T12:00:00Z", []string{"09-28 03:50 +1345"}},
		{"Lord Howe spring: 02:10 becomes 02:40, so 02:35 does not fire", "0 10,35 1,2 * * ?", "Australia/Lord_Howe",
			"2026-10-03T10:30:00Z", "2026-10-04T14:00:00Z", []string{"10-04 01:10 +1030", "10-04 01:35 +1030"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Definition{Cron: c.expr, CronDialect: DialectQuartz, Timezone: c.zone}
			loc, _ := time.LoadLocation(c.zone)
			var got []string
			for at := ms(c.from); ; {
				next, ok := d.NextFire(0, at)
				if !ok || next >= ms(c.to) {
					break
				}
				got = append(got, strings.TrimSuffix(Time(next).In(loc).Format("01-02 15:04 -0700"), "00"))
				at = next
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}

// TestDialectCronErrorsNameTheField: each dialect says which field is
// wrong and what it takes; jobdrop refuses text Quartz would silently
// read as something shorter.
func TestDialectCronErrorsNameTheField(t *testing.T) {
	cases := []struct {
		dialect   Dialect
		expr      string
		want      string
		wantField string
	}{
		{DialectQuartz, "0 0 12 ? * 0", `the day-of-week field "0" must be 1-7 (1 is SUN) or SUN-SAT`, "cron"},
		{DialectQuartz, "0 0 12 * * *", `the day-of-week field "*" must be "?" when the day-of-month field "*" is not`, "cron"},
		{DialectQuartz, "0 0 12 ? * ?", `Quartz takes "?" in exactly one of them`, "cron"},
		{DialectQuartz, "0 0 12 1-5,L * ?", `the day-of-month field "1-5,L" cannot list L with other days`, "cron"},
		{DialectQuartz, "0 0 12 L-31 * ?", `the day-of-month field "L-31" must say L-n with n from 0 to 30`, "cron"},
		{DialectQuartz, "0 0 12 ? * 2#6", `the day-of-week field "2#6" must say n#k`, "cron"},
		{DialectQuartz, "0 0 12 ? * MON/2", `Quartz ignores the step after a name`, "cron"},
		{DialectQuartz, "0 0 12 ? * MONDAY", `the day-of-week field "MONDAY" must be 1-7`, "cron"},
		{DialectQuartz, "0 0 12 ? * 2-6 2026 2027", "must be a Quartz cron expression of 6 or 7 fields", "cron"},
		{DialectQuartz, "0 0 12 ? * 2-6 2999-2027", "cannot be a range of years that ends before it starts", "cron"},
		{DialectQuartz, "0 0 25 ? * *", `the hour field "25" must be 0-23`, "cron"},
		{DialectSpring, "0 0 12 * * 8", `the day-of-week field "8" must be 0-7 (0 and 7 are SUN)`, "cron"},
		{DialectSpring, "0 0 22-2 * * *", "Spring does not wrap ranges", "cron"},
		{DialectSpring, "0 0 12 * * * 2026", "must be a Spring cron expression of 6 fields", "cron"},
		{DialectSpring, "0 0 12 L-0 * *", `the day-of-month field "L-0" must say L-n`, "cron"},
		{DialectSpring, "0 0 12 * * L", `the day-of-week field "L" must say nL`, "cron"},
		{"cobol", "0 12 * * *", "must be unix, quartz, spring, systemd or auto", "cronDialect"},
	}
	for _, c := range cases {
		t.Run(string(c.dialect)+" "+c.expr, func(t *testing.T) {
			d := Definition{Host: "acme", Name: "x", Action: Insert, Topic: "jobs", Cron: c.expr, CronDialect: c.dialect}
			fes := FieldErrors(d.Validate())
			if len(fes) != 1 || fes[0].Field != c.wantField || !strings.Contains(fes[0].Reason, c.want) {
				t.Errorf("got %v, want one error on %s saying %q", fes, c.wantField, c.want)
			}
		})
	}
	for _, ok := range []Definition{
		{Cron: "0 0 12 ? * 2-6", CronDialect: DialectQuartz},
		{Cron: "0 15 10 ? * 6L 2026-2030", CronDialect: DialectQuartz},
		{Cron: "0 0 0 L-3W * ?", CronDialect: DialectQuartz},
		{Cron: "@weekly", CronDialect: DialectSpring},
		{Cron: "0 0 0 1W,15,LW * ?", CronDialect: DialectSpring},
		{Cron: "0 0 12 ? * 2-6", CronDialect: "AUTO"},
	} {
		d := ok
		d.Host, d.Name, d.Action, d.Topic = "acme", "x", Insert, "jobs"
		if err := d.Validate(); err != nil && d.CronDialect != "AUTO" {
			t.Errorf("%s %q refused: %v", d.CronDialect, d.Cron, err)
		}
	}
}

// TestCronAmbiguityNamesBothReadings: a warning only where the text means
// two things and says nothing of which.
func TestCronAmbiguityNamesBothReadings(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"0 0 12 ? * 2-6", `day-of-week "2-6" read as quartz (MON-FRI); in spring it would be TUE-SAT; set cron_dialect to say which`},
		{"0 0 12 ? * 6#3", `read as quartz (the 3rd FRI); in spring it would be the 3rd SAT`},
		{"0 0 12 ? * 1,7", `read as quartz (SUN,SAT); in spring it would be SUN,MON`},
		{"0 0 12 1 * MON", `day-of-month "1" and day-of-week "MON" read as unix (a day matching either); in spring a day would have to match both`},
		{"0 0 12 ? * MON-FRI", ""},
		{"0 0 12 L * ?", ""},
		{"0 0 12 ? * 2-6 2026", ""},
		{"0 12 * * 1-5", ""},
		{"0 0 12 * * 1-5", ""},
		{"0 0 12 ? * 8", ""},
	}
	for _, c := range cases {
		got := CronAmbiguity(c.expr)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.expr, got, c.want)
		}
	}
}

func TestDialectIsDetectedOrStated(t *testing.T) {
	cases := []struct {
		d    Definition
		want Dialect
	}{
		{Definition{Cron: "0 12 * * *"}, DialectUnix},
		{Definition{Cron: "0 0 12 * * *"}, DialectUnix},
		{Definition{Cron: "0 0 12 ? * MON"}, DialectQuartz},
		{Definition{Cron: "0 0 12 * * MON 2027"}, DialectQuartz},
		{Definition{Cron: "0 0 12 * * MON", CronDialect: DialectAuto}, DialectUnix},
		{Definition{Cron: "0 0 12 ? * MON", CronDialect: DialectSpring}, DialectSpring},
	}
	for _, c := range cases {
		if got := c.d.Dialect(); got != c.want {
			t.Errorf("%q stated %q: dialect %s, want %s", c.d.Cron, c.d.CronDialect, got, c.want)
		}
	}
	if _, err := ParseDialect("Quartz "); err != nil {
		t.Errorf("ParseDialect is case-insensitive: %v", err)
	}
	if _, err := ParseDialect("cobol"); err == nil {
		t.Error("ParseDialect accepted cobol")
	}
}
