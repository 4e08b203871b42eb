package task

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func TestAnchorRoundsUpToTheNextWholeUnit(t *testing.T) {
	accepted := ms("2026-03-01T08:17:42.123Z")
	cases := []struct {
		name string
		def  Definition
		want string
	}{
		{"milliseconds keep the instant", every(Milliseconds, 250, nil), "2026-03-01T08:17:42.123Z"},
		{"seconds", every(Seconds, 10, nil), "2026-03-01T08:17:43Z"},
		{"minutes", every(Minutes, 5, nil), "2026-03-01T08:18:00Z"},
		{"hours", every(Hours, 1, nil), "2026-03-01T09:00:00Z"},
		{"days: next UTC midnight", every(Days, 1, nil), "2026-03-02T00:00:00Z"},
		{"one-shot fires at once", Definition{}, "2026-03-01T08:17:42.123Z"},
		{"explicit start wins", every(Hours, 1, Ptr(ms("2026-01-01T00:00:00Z"))), "2026-01-01T00:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.def.Anchor(accepted); got != ms(c.want) {
				t.Errorf("anchor %s, want %s", Time(got).Format(time.RFC3339Nano), c.want)
			}
		})
	}
	onBoundary := ms("2026-03-01T08:00:00Z")
	if d := every(Hours, 1, nil); d.Anchor(onBoundary) != onBoundary {
		t.Errorf("a time on the unit boundary is already whole")
	}
}

func every(u TimeUnit, n int32, start *int64) Definition {
	return Definition{Frequency: &Frequency{TimeUnit: u, Time: n}, Start: start}
}

func TestNextFires(t *testing.T) {
	start := ms("2026-03-01T08:00:00Z")
	cases := []struct {
		name string
		def  Definition
		from string
		want []string
	}{
		{"one-shot in the future", Definition{Start: &start}, "2026-03-01T07:00:00Z", []string{"2026-03-01T08:00:00Z"}},
		{"one-shot already fired", Definition{Start: &start}, "2026-03-01T08:00:00Z", nil},
		{"every 250 ms", every(Milliseconds, 250, &start), "2026-03-01T08:00:00.100Z",
			[]string{"2026-03-01T08:00:00.25Z", "2026-03-01T08:00:00.5Z", "2026-03-01T08:00:00.75Z"}},
		{"every 90 s, counted from start", every(Seconds, 90, &start), "2026-03-01T08:02:00Z",
			[]string{"2026-03-01T08:03:00Z", "2026-03-01T08:04:30Z", "2026-03-01T08:06:00Z"}},
		{"every 15 min", every(Minutes, 15, &start), "2026-03-01T07:00:00Z",
			[]string{"2026-03-01T08:00:00Z", "2026-03-01T08:15:00Z", "2026-03-01T08:30:00Z"}},
		{"every 6 h, a week on: no drift", every(Hours, 6, &start), "2026-03-08T09:59:59.999Z",
			[]string{"2026-03-08T14:00:00Z", "2026-03-08T20:00:00Z", "2026-03-09T02:00:00Z"}},
		{"every 2 days across February 29", every(Days, 2, Ptr(ms("2028-02-26T00:00:00Z"))), "2028-02-26T00:00:00Z",
			[]string{"2028-02-28T00:00:00Z", "2028-03-01T00:00:00Z", "2028-03-03T00:00:00Z"}},
		{"stops at end", Definition{Frequency: &Frequency{Hours, 1}, Start: &start, End: Ptr(ms("2026-03-01T10:00:00Z"))},
			"2026-03-01T08:30:00Z", []string{"2026-03-01T09:00:00Z", "2026-03-01T10:00:00Z"}},
		{"cron in Paris time", Definition{Cron: "30 2 * * *", Timezone: "Europe/Paris", Start: &start}, "2026-03-01T08:00:00Z",
			[]string{"2026-03-02T01:30:00Z", "2026-03-03T01:30:00Z", "2026-03-04T01:30:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			anchor := c.def.Anchor(0)
			var got []string
			for _, f := range c.def.NextFires(anchor, ms(c.from), 3) {
				got = append(got, Time(f).Format(time.RFC3339Nano))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestPlanAppliesTheMisfirePolicy(t *testing.T) {
	start := ms("2026-03-01T08:00:00Z")
	tenMin := func(p Misfire) Definition {
		d := every(Minutes, 10, &start)
		d.Misfire = p
		return d
	}
	cases := []struct {
		name       string
		def        Definition
		due, now   string
		fire       string // "" when nothing fires
		following  string
		wantNoMore bool
		// stands is how many occurrences the fire stands for, itself
		// included: more than one for a catch-up that collapsed them.
		stands int
	}{
		{"on time", tenMin(""), "2026-03-01T08:10:00Z", "2026-03-01T08:10:00.004Z", "2026-03-01T08:10:00Z", "2026-03-01T08:20:00Z", false, 1},
		{"late within the threshold fires as scheduled", tenMin(Skip), "2026-03-01T08:10:00Z", "2026-03-01T08:10:04.9Z", "2026-03-01T08:10:00Z", "2026-03-01T08:20:00Z", false, 1},
		{"FIRE_ONCE after an hour down: the latest missed, once", tenMin(""), "2026-03-01T08:10:00Z", "2026-03-01T09:15:00Z", "2026-03-01T09:10:00Z", "2026-03-01T09:20:00Z", false, 7},
		{"FIRE_ONCE named", tenMin(FireOnce), "2026-03-01T08:10:00Z", "2026-03-01T09:15:00Z", "2026-03-01T09:10:00Z", "2026-03-01T09:20:00Z", false, 7},
		{"FIRE_ALL replays from the first missed", tenMin(FireAll), "2026-03-01T08:10:00Z", "2026-03-01T09:15:00Z", "2026-03-01T08:10:00Z", "2026-03-01T08:20:00Z", false, 1},
		{"FIRE_ALL bounded to the last 1000", tenMin(FireAll), "2026-03-01T08:10:00Z", "2026-04-01T08:00:00Z", "2026-03-25T09:30:00Z", "2026-03-25T09:40:00Z", false, 3465},
		{"SKIP fires nothing and waits", tenMin(Skip), "2026-03-01T08:10:00Z", "2026-03-01T09:15:00Z", "", "2026-03-01T09:20:00Z", false, 0},
		{"a one-shot missed still fires once", Definition{Start: &start, Misfire: FireAll}, "2026-03-01T08:00:00Z", "2026-03-02T08:00:00Z", "2026-03-01T08:00:00Z", "", true, 1},
		{"a one-shot missed with SKIP is dropped", Definition{Start: &start, Misfire: Skip}, "2026-03-01T08:00:00Z", "2026-03-02T08:00:00Z", "", "", true, 0},
		{"cron FIRE_ONCE", Definition{Cron: "0 * * * *", Start: &start}, "2026-03-01T09:00:00Z", "2026-03-01T12:30:00Z", "2026-03-01T12:00:00Z", "2026-03-01T13:00:00Z", false, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fire, fires, following, more := c.def.Plan(start, ms(c.due), ms(c.now))
			gotFire := ""
			if fires {
				gotFire = Time(fire).Format(time.RFC3339Nano)
			}
			gotNext := ""
			if more {
				gotNext = Time(following).Format(time.RFC3339Nano)
			}
			if gotFire != c.fire || gotNext != c.following || more == c.wantNoMore {
				t.Errorf("fire %q then %q, want %q then %q", gotFire, gotNext, c.fire, c.following)
			}
			stands := 0
			if fires {
				stands = c.def.Occurrences(start, ms(c.due), fire)
			}
			if stands != c.stands {
				t.Errorf("the fire stands for %d occurrences, want %d", stands, c.stands)
			}
		})
	}
}

// fires lists a cron task's fires in [from, to) as local times with offsets.
func cronFires(t *testing.T, expr, zone, from, to string) []string {
	t.Helper()
	d := Definition{Cron: expr, Timezone: zone}
	loc, _ := time.LoadLocation(zone)
	var out []string
	for at := ms(from); ; {
		next, ok := d.NextFire(0, at)
		if !ok || next >= ms(to) {
			return out
		}
		out = append(out, Time(next).In(loc).Format("01-02 15:04 -07"))
		at = next
	}
}

func TestCronFollowsLinuxCronAcrossDaylightSaving(t *testing.T) {
	cases := []struct {
		name, expr, zone, from, to string
		want                       []string
	}{
		// Paris springs forward on 2026-03-29 at 02:00 → 03:00.
		{"Paris spring, fixed time in the skipped hour fires right after the change", "30 2 * * *", "Europe/Paris",
			"2026-03-27T12:00:00Z", "2026-03-31T00:00:00Z",
			[]string{"03-28 02:30 +01", "03-29 03:00 +02", "03-30 02:30 +02"}},
		{"Paris spring, two fixed times in the skipped hour fire once", "0,30 2 * * *", "Europe/Paris",
			"2026-03-28T12:00:00Z", "2026-03-30T00:00:00Z",
			[]string{"03-29 03:00 +02"}},
		{"Paris spring, a wildcard hour follows the clock: nothing in the skipped hour", "30 * * * *", "Europe/Paris",
			"2026-03-28T23:15:00Z", "2026-03-29T02:00:00Z",
			[]string{"03-29 00:30 +01", "03-29 01:30 +01", "03-29 03:30 +02"}},
		// Paris falls back on 2026-10-25 at 03:00 → 02:00.
		{"Paris autumn, fixed time in the repeated hour fires once", "30 2 * * *", "Europe/Paris",
			"2026-10-24T12:00:00Z", "2026-10-26T12:00:00Z",
			[]string{"10-25 02:30 +02", "10-26 02:30 +01"}},
		{"Paris autumn, a wildcard hour fires in both copies", "30 * * * *", "Europe/Paris",
			"2026-10-24T23:00:00Z", "2026-10-25T03:00:00Z",
			[]string{"10-25 01:30 +02", "10-25 02:30 +02", "10-25 02:30 +01", "10-25 03:30 +01"}},
		// New York springs forward on 2026-03-08 at 02:00 and falls back on 2026-11-01 at 02:00.
		{"New York spring, fixed", "15 2 * * *", "America/New_York",
			"2026-03-07T05:00:00Z", "2026-03-09T12:00:00Z",
			[]string{"03-07 02:15 -05", "03-08 03:00 -04", "03-09 02:15 -04"}},
		{"New York autumn, fixed", "15 1 * * *", "America/New_York",
			"2026-10-31T12:00:00Z", "2026-11-02T12:00:00Z",
			[]string{"11-01 01:15 -04", "11-02 01:15 -05"}},
		{"New York autumn, every 30 minutes follows the clock", "*/30 1 * * *", "America/New_York",
			"2026-11-01T04:00:00Z", "2026-11-01T07:00:00Z",
			[]string{"11-01 01:00 -04", "11-01 01:30 -04", "11-01 01:00 -05", "11-01 01:30 -05"}},
		{"month ends", "0 9 31 * *", "UTC", "2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z",
			[]string{"01-31 09:00 +00", "03-31 09:00 +00", "05-31 09:00 +00"}},
		{"29 February", "0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", "2033-01-01T00:00:00Z",
			[]string{"02-29 00:00 +00", "02-29 00:00 +00"}},
		{"six fields: seconds", "*/20 * * * * *", "UTC", "2025-12-31T23:59:59Z", "2026-01-01T00:01:00Z",
			[]string{"01-01 00:00 +00", "01-01 00:00 +00", "01-01 00:00 +00"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := cronFires(t, c.expr, c.zone, c.from, c.to)
			if !slices.Equal(got, c.want) {
				t.Errorf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestWindowMovesFiresToTheNextOpening(t *testing.T) {
	start := ms("2026-03-02T00:00:00Z") // a Monday
	d := every(Hours, 4, &start)
	d.Timezone = "Europe/Paris"
	d.Window = &Window{From: "09:00", To: "17:00", Days: []string{"MON", "TUE", "WED", "THU", "FRI"}}
	loc, _ := time.LoadLocation("Europe/Paris")
	var got []string
	for _, f := range d.NextFires(start, ms("2026-03-05T11:59:00Z"), 6) {
		got = append(got, Time(f).In(loc).Format("Mon 15:04"))
	}
	// Every 4 h from midnight UTC is 01,05,09,13,17,21 in Paris (+01):
	// 13:00 Thu is open; 17:00, 21:00, 01:00, 05:00 move to 09:00 Fri; the
	// weekend moves to Monday 09:00.
	want := []string{"Thu 13:00", "Fri 09:00", "Fri 13:00", "Mon 09:00", "Mon 13:00", "Tue 09:00"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	night := Definition{Cron: "0 * * * *", Window: &Window{From: "22:00", To: "02:00"}}
	var nights []string
	for _, f := range night.NextFires(0, ms("2026-03-02T12:00:00Z"), 5) {
		nights = append(nights, Time(f).Format("02 15:04"))
	}
	if want := []string{"02 22:00", "02 23:00", "03 00:00", "03 01:00", "03 22:00"}; !slices.Equal(nights, want) {
		t.Errorf("window over midnight: got %v, want %v", nights, want)
	}
}

func TestValidateNamesFieldAndValue(t *testing.T) {
	d := Definition{Host: "a/b", Name: "", Action: "UPSERT", Topic: "bad topic", Frequency: &Frequency{"WEEKS", 0},
		Timezone: "Mars/Olympus"}
	got := map[string]string{}
	for _, fe := range FieldErrors(d.Validate()) {
		got[fe.Field] = fe.Value
	}
	want := map[string]string{"host": "a/b", "name": "", "action": "UPSERT", "topic": "bad topic",
		"frequency.timeUnit": "WEEKS", "frequency.time": "0", "timezone": "Mars/Olympus"}
	for f, v := range want {
		if gv, ok := got[f]; !ok || gv != v {
			t.Errorf("field %s: got %q (reported %v), want value %q", f, gv, ok, v)
		}
	}
	ok := Definition{Host: "acme", Name: "nightly/report", Action: Insert, Topic: "jobs"}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid definition rejected: %v", err)
	}
	del := Definition{Host: "acme", Name: "x", Action: Delete}
	if err := del.Validate(); err != nil {
		t.Errorf("a DELETE needs only its key: %v", err)
	}
}

// TestCronErrorsNameTheField: a refused cron expression is explained by
// the field that is wrong and the values it takes, or by the fields a cron
// expression has.
func TestCronErrorsNameTheField(t *testing.T) {
	for expr, want := range map[string]string{
		"61 * * * *":     `the minute field "61" must be 0-59`,
		"0 25 * * *":     `the hour field "25" must be 0-23`,
		"0 0 32 * *":     `the day-of-month field "32" must be 1-31`,
		"0 0 1 13 *":     `the month field "13" must be 1-12 or JAN-DEC`,
		"0 0 * * 1-9":    `the day-of-week field "1-9" must be 0-7 or SUN-SAT`,
		"*/ 0 * * *":     `the minute field "*/" must be`,
		"0,,30 * * * *":  `the minute field "0,,30" must be`,
		"75 0 9 * * *":   `the second field "75" must be 0-59`,
		"every day":      "must be a cron expression of 5 fields (minute hour day-of-month month day-of-week)",
		"@dayly":         "or a shorthand such as @daily",
		"0 9 * * MON-FR": `the day-of-week field "MON-FR" must be`,
	} {
		d := Definition{Host: "acme", Name: "x", Action: Insert, Topic: "jobs", Cron: expr}
		fes := FieldErrors(d.Validate())
		if len(fes) != 1 || fes[0].Field != "cron" || fes[0].Value != expr || !strings.Contains(fes[0].Reason, want) {
			t.Errorf("cron %q: got %v, want one error on cron saying %q", expr, fes, want)
		}
	}
	for _, expr := range []string{"0 9 * * MON-FRI", "*/15 * * * *", "0 0 L * *", "30 0 9 * * *", "@daily"} {
		d := Definition{Host: "acme", Name: "x", Action: Insert, Topic: "jobs", Cron: expr}
		if err := d.Validate(); err != nil {
			t.Errorf("cron %q refused: %v", expr, err)
		}
	}
}

// TestFiresPreviewsWhatTheEngineWillDo: a preview shows the instants a new
// task will fire: a one-shot already past fires at once unless its policy
// skips it, a schedule started in the past goes on from its next
// occurrence, and a DELETE or a paused task fires nothing.
func TestFiresPreviewsWhatTheEngineWillDo(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 20, 0, 0, time.UTC).UnixMilli()
	at := func(h, m int) int64 { return time.Date(2026, 11, 25, h, m, 0, 0, time.UTC).UnixMilli() }
	past, future := Ptr(at(8, 0)), Ptr(at(12, 0))
	hourly := &Frequency{TimeUnit: Hours, Time: 1}
	off := false
	for _, c := range []struct {
		name string
		d    Definition
		want []int64
	}{
		{"one-shot to come", Definition{Action: Insert, Start: future}, []int64{at(12, 0)}},
		{"one-shot missed, FIRE_ONCE", Definition{Action: Insert, Start: past}, []int64{now}},
		{"one-shot missed, FIRE_ALL", Definition{Action: Insert, Start: past, Misfire: FireAll}, []int64{now}},
		{"one-shot missed, SKIP", Definition{Action: Insert, Start: past, Misfire: Skip}, nil},
		{"hourly from the past", Definition{Action: Insert, Start: past, Frequency: hourly}, []int64{at(11, 0), at(12, 0), at(13, 0)}},
		{"hourly from the past, FIRE_ALL", Definition{Action: Insert, Start: past, Frequency: hourly, Misfire: FireAll}, []int64{at(11, 0), at(12, 0), at(13, 0)}},
		{"hourly from no start", Definition{Action: Insert, Frequency: hourly}, []int64{at(11, 0), at(12, 0), at(13, 0)}},
		{"cron", Definition{Action: Insert, Cron: "30 10 * * *"}, []int64{at(10, 30), at(10, 30) + 24*3600_000, at(10, 30) + 48*3600_000}},
		{"delete", Definition{Action: Delete, Start: future}, nil},
		{"trigger", Definition{Action: Trigger, Start: future}, nil},
		{"paused", Definition{Action: Insert, Start: future, Active: &off}, nil},
	} {
		if got := c.d.Fires(now, 3); !slices.Equal(got, c.want) {
			t.Errorf("%s: fires %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDailyTasksKeepTheirLocalTimeAcrossDaylightSaving: a task repeating
// every N days in a time zone fires at the same local time whatever the
// season, as a migrated crontab line did; in UTC days are 24 hours.
func TestDailyTasksKeepTheirLocalTimeAcrossDaylightSaving(t *testing.T) {
	daily := func(zone, start string, n int32) Definition {
		d := every(Days, n, Ptr(ms(start)))
		d.Timezone = zone
		return d
	}
	cases := []struct {
		name string
		def  Definition
		from string
		want []string
	}{
		{"Paris 22:30 through spring forward", daily("Europe/Paris", "2026-03-27T21:30:00Z", 1), "2026-03-27T00:00:00Z",
			[]string{"2026-03-27T21:30:00Z", "2026-03-28T21:30:00Z", "2026-03-29T20:30:00Z", "2026-03-30T20:30:00Z"}},
		{"Paris 22:30 through fall back", daily("Europe/Paris", "2026-10-23T20:30:00Z", 1), "2026-10-24T00:00:00Z",
			[]string{"2026-10-24T20:30:00Z", "2026-10-25T21:30:00Z", "2026-10-26T21:30:00Z"}},
		{"New York 08:00 every 2 days", daily("America/New_York", "2026-03-05T13:00:00Z", 2), "2026-03-06T00:00:00Z",
			[]string{"2026-03-07T13:00:00Z", "2026-03-09T12:00:00Z", "2026-03-11T12:00:00Z"}},
		{"Paris 02:30 skipped on spring-forward night", daily("Europe/Paris", "2026-03-28T01:30:00Z", 1), "2026-03-28T02:00:00Z",
			[]string{"2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"}},
		{"UTC days are 24 hours", daily("", "2026-03-27T21:30:00Z", 1), "2026-03-28T00:00:00Z",
			[]string{"2026-03-28T21:30:00Z", "2026-03-29T21:30:00Z"}},
		{"a year on, still 22:30 in Paris", daily("Europe/Paris", "2026-03-27T21:30:00Z", 1), "2027-07-01T00:00:00Z",
			[]string{"2027-07-01T20:30:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, f := range c.def.NextFires(*c.def.Start, ms(c.from)-1, len(c.want)) {
				got = append(got, Time(f).Format(time.RFC3339))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("fires %v, want %v", got, c.want)
			}
		})
	}
	// FIRE_ALL replays missed days on the same calendar.
	d := daily("Europe/Paris", "2026-03-27T21:30:00Z", 1)
	d.Misfire = FireAll
	if fire, _, next, _ := d.Plan(*d.Start, ms("2026-03-28T21:30:00Z"), ms("2026-03-31T00:00:00Z")); fire != ms("2026-03-28T21:30:00Z") || next != ms("2026-03-29T20:30:00Z") {
		t.Errorf("FIRE_ALL fired %s then %s", Time(fire).Format(time.RFC3339), Time(next).Format(time.RFC3339))
	}
}

func TestWhenSaysHowADefinitionFires(t *testing.T) {
	tests := []struct {
		name string
		def  Definition
		want string
	}{
		{"one-shot", Definition{}, "once"},
		{"every minute", Definition{Frequency: &Frequency{TimeUnit: Minutes, Time: 1}}, "every minute"},
		{"every 5 hours", Definition{Frequency: &Frequency{TimeUnit: Hours, Time: 5}}, "every 5 hours"},
		{"cron in UTC", Definition{Cron: "*/5 * * * *"}, "cron */5 * * * *"},
		{"with an end", Definition{Frequency: &Frequency{TimeUnit: Days, Time: 2}, End: Ptr(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())}, "every 2 days, until 2026-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.def.When(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
