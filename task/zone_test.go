package task

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adhocore/gronx"
)

// TestWallTimesInZonesFarFromUTC: the instants that show a wall time and
// the end of a gap, as the Quartz, Spring and unix cron dialects ask
// them, in zones more than 12 hours from UTC as well as nearer ones: a
// repeated wall time has two instants, an ordinary one exactly one, a
// skipped one none, and its gap ends at the wall clock of the zone's
// change.
func TestWallTimesInZonesFarFromUTC(t *testing.T) {
	utc := func(s string) time.Time {
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	cases := []struct {
		zone, wall string
		want       []string // the instants, in UTC
		gapEnd     string   // the wall time after the gap, for a skipped one
		change     string   // the instant of that change
	}{
		// Auckland, +12:00 and +13:00 in its summer: the clock goes back
		// from 03:00 to 02:00 on 4 April 2027 and on from 02:00 to 03:00
		// on 26 September 2027.
		{zone: "Pacific/Auckland", wall: "2027-04-04T02:30:00", want: []string{"2027-04-03T13:30:00Z", "2027-04-03T14:30:00Z"}},
		{zone: "Pacific/Auckland", wall: "2027-04-04T01:59:00", want: []string{"2027-04-03T12:59:00Z"}},
		{zone: "Pacific/Auckland", wall: "2027-04-04T03:00:00", want: []string{"2027-04-03T15:00:00Z"}},
		{zone: "Pacific/Auckland", wall: "2027-01-15T12:00:00", want: []string{"2027-01-14T23:00:00Z"}},
		{zone: "Pacific/Auckland", wall: "2027-09-26T02:30:00", gapEnd: "2027-09-26T03:00:00", change: "2027-09-25T14:00:00Z"},
		{zone: "Pacific/Auckland", wall: "2027-09-26T01:59:00", want: []string{"2027-09-25T13:59:00Z"}},
		{zone: "Pacific/Auckland", wall: "2027-09-26T03:00:00", want: []string{"2027-09-25T14:00:00Z"}},
		// Chatham, +12:45 and +13:45: back from 03:45 to 02:45 on 4 April
		// 2027, on from 02:45 to 03:45 on 26 September 2027.
		{zone: "Pacific/Chatham", wall: "2027-04-04T03:00:00", want: []string{"2027-04-03T13:15:00Z", "2027-04-03T14:15:00Z"}},
		{zone: "Pacific/Chatham", wall: "2027-04-04T02:30:00", want: []string{"2027-04-03T12:45:00Z"}},
		{zone: "Pacific/Chatham", wall: "2027-04-04T03:45:00", want: []string{"2027-04-03T15:00:00Z"}},
		{zone: "Pacific/Chatham", wall: "2027-09-26T02:30:00", want: []string{"2027-09-25T13:45:00Z"}},
		{zone: "Pacific/Chatham", wall: "2027-09-26T03:00:00", gapEnd: "2027-09-26T03:45:00", change: "2027-09-25T14:00:00Z"},
		{zone: "Pacific/Chatham", wall: "2027-09-26T03:44:59", gapEnd: "2027-09-26T03:45:00", change: "2027-09-25T14:00:00Z"},
		{zone: "Pacific/Chatham", wall: "2027-09-26T03:45:00", want: []string{"2027-09-25T14:00:00Z"}},
		{zone: "Pacific/Chatham", wall: "2027-12-25T12:00:00", want: []string{"2027-12-24T22:15:00Z"}},
		// Kiritimati, +14:00, skipped 31 December 1994 when it left -10:00.
		{zone: "Pacific/Kiritimati", wall: "2027-06-01T12:00:00", want: []string{"2027-05-31T22:00:00Z"}},
		{zone: "Pacific/Kiritimati", wall: "1994-12-30T23:59:00", want: []string{"1994-12-31T09:59:00Z"}},
		{zone: "Pacific/Kiritimati", wall: "1994-12-31T12:00:00", gapEnd: "1995-01-01T00:00:00", change: "1994-12-31T10:00:00Z"},
		{zone: "Pacific/Kiritimati", wall: "1995-01-01T00:00:00", want: []string{"1994-12-31T10:00:00Z"}},
		// Apia skipped 30 December 2011, from -10:00 to +14:00.
		{zone: "Pacific/Apia", wall: "2011-12-30T09:00:00", gapEnd: "2011-12-31T00:00:00", change: "2011-12-30T10:00:00Z"},
		// Nearer zones, as before: Berlin, and Lord Howe's half hour.
		{zone: "Europe/Berlin", wall: "2027-10-31T02:30:00", want: []string{"2027-10-31T00:30:00Z", "2027-10-31T01:30:00Z"}},
		{zone: "Europe/Berlin", wall: "2027-03-28T02:30:00", gapEnd: "2027-03-28T03:00:00", change: "2027-03-28T01:00:00Z"},
		{zone: "Australia/Lord_Howe", wall: "2027-04-04T01:45:00", want: []string{"2027-04-03T14:45:00Z", "2027-04-03T15:15:00Z"}},
		{zone: "Australia/Lord_Howe", wall: "2027-10-03T02:15:00", gapEnd: "2027-10-03T02:30:00", change: "2027-10-02T15:30:00Z"},
	}
	for _, c := range cases {
		loc, err := time.LoadLocation(c.zone)
		if err != nil {
			t.Fatal(err)
		}
		wall := utc(c.wall + "Z")
		var want []time.Time
		for _, s := range c.want {
			want = append(want, utc(s))
		}
		got := instants(wall, loc)
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s %s: instants %v, want %v", c.zone, c.wall, got, want)
		}
		// Unix cron: every showing for an entry that follows the wall
		// clock; the first, or the change for a skipped time, for a
		// fixed one.
		if got := instantsOf(wall, loc, false); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s %s: instantsOf %v, want %v", c.zone, c.wall, got, want)
		}
		fixed := want[:min(len(want), 1)]
		if c.change != "" {
			fixed = []time.Time{utc(c.change)}
		}
		if got := instantsOf(wall, loc, true); !slices.EqualFunc(got, fixed, time.Time.Equal) {
			t.Errorf("%s %s: instantsOf of a fixed entry %v, want %v", c.zone, c.wall, got, fixed)
		}
		if c.gapEnd != "" {
			if got := afterGap(wall, loc); !got.Equal(utc(c.gapEnd + "Z")) {
				t.Errorf("%s %s: the gap ends at %s, want %s", c.zone, c.wall, got.Format(time.DateTime), utc(c.gapEnd+"Z").Format(time.DateTime))
			}
			if end := utc(c.change).In(loc); !naive(end).Equal(utc(c.gapEnd + "Z")) {
				t.Errorf("%s: the change is at %s, its wall clock %s, not %s", c.zone, c.change, end, c.gapEnd)
			}
		}
	}
}

// TestWallTimesAgreeWithGo: every quarter of an hour of wall time over
// the days of zones' changes, the instants and the gap's end agree with
// what Go's own time.In says of every instant of those days.
func TestWallTimesAgreeWithGo(t *testing.T) {
	days := map[string][]string{
		"Pacific/Chatham":     {"2027-04-04", "2027-09-26", "2031-04-06", "2031-09-28", "2040-04-01", "2040-09-30", "2300-04-07"},
		"Pacific/Auckland":    {"2027-04-04", "2027-09-26", "2038-04-04", "2038-09-26", "2040-12-31", "2296-12-31"},
		"Pacific/Kiritimati":  {"1994-12-31", "2027-06-01"},
		"Pacific/Apia":        {"2011-12-30", "2012-04-01", "2012-09-30", "2021-09-26"},
		"Pacific/Tongatapu":   {"2016-11-06", "2017-01-15"},
		"Australia/Lord_Howe": {"2027-04-04", "2027-10-03"},
		"America/New_York":    {"2027-03-14", "2027-11-07", "2040-12-31"},
		"Europe/Berlin":       {"2027-03-28", "2027-10-31", "2500-03-28", "2500-10-31"},
		"Pacific/Pago_Pago":   {"2027-06-01"},
	}
	checked, repeated, skipped := 0, 0, 0
	for name, list := range days {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, day := range list {
			d, err := time.Parse(time.DateOnly, day)
			if err != nil {
				t.Fatal(err)
			}
			// Every minute from a day and a half before to a day and a
			// half after the day, with its wall clock.
			type shown struct{ at, wall time.Time }
			var minutes []shown
			for at := d.Add(-36 * time.Hour); at.Before(d.Add(60 * time.Hour)); at = at.Add(time.Minute) {
				minutes = append(minutes, shown{at, naive(at.In(loc))})
			}
			for wall := d.Add(-3 * time.Hour); wall.Before(d.Add(27 * time.Hour)); wall = wall.Add(15 * time.Minute) {
				var want []time.Time
				var end time.Time // the first wall clock past wall
				for _, m := range minutes {
					if m.wall.Equal(wall) {
						want = append(want, m.at)
					}
					if end.IsZero() && m.wall.After(wall) {
						end = m.wall
					}
				}
				got := instants(wall, loc)
				if !slices.EqualFunc(got, want, time.Time.Equal) {
					t.Errorf("%s %s: instants %v, Go shows it at %v", name, wall.Format(time.DateTime), got, want)
				}
				checked++
				switch len(want) {
				case 2:
					repeated++
				case 0:
					skipped++
					if got := afterGap(wall, loc); !got.Equal(end) {
						t.Errorf("%s %s: the gap ends at %s, Go says %s", name, wall.Format(time.DateTime),
							got.Format(time.DateTime), end.Format(time.DateTime))
					}
				}
			}
		}
	}
	t.Logf("%d wall times, %d repeated, %d skipped", checked, repeated, skipped)
	if repeated == 0 || skipped == 0 {
		t.Error("no repeated or no skipped wall time was checked")
	}
}

// TestCronOnTheLastDayOfALeapYearPastTheZoneFiles: past the last change
// a zone file lists one by one (2037), Go's ZoneBounds ends the period of
// 31 December of a leap year at its start; unix cron asks the zone's
// periods instead, and fires there as on any other day, as stepping
// through the wall clock says.
func TestCronOnTheLastDayOfALeapYearPastTheZoneFiles(t *testing.T) {
	g := gronx.New()
	for _, name := range []string{"Europe/Berlin", "America/New_York", "Pacific/Auckland"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, day := range []string{"2040-12-31", "2296-12-31"} {
			for _, at := range []string{"00:00:30", "12:00:00", "23:59:50"} {
				after, err := time.Parse(time.DateTime, day+" "+at)
				if err != nil {
					t.Fatal(err)
				}
				for _, expr := range []string{"*/20 * * * * *", "* * * * *", "30 2 * * *"} {
					step := time.Minute
					if len(strings.Fields(expr)) == 6 {
						step = time.Second
					}
					want := after.Truncate(step)
					for {
						want = want.Add(step)
						if due, _ := g.IsDue(expr, naive(want.In(loc))); due {
							break
						}
					}
					if got, ok := cronNext(expr, loc, after); !ok || !got.Equal(want) {
						t.Errorf("%s in %s after %s: %s (%v), want %s", expr, name, after.Format(time.RFC3339),
							got.In(loc).Format(time.RFC3339), ok, want.In(loc).Format(time.RFC3339))
					}
				}
			}
		}
	}
}
