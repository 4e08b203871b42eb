package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/task"
)

// TestFiresCalendarRulesAcrossDaylightSaving fires RFC 5545 rules that
// cron cannot say, in Europe/Paris across the spring-forward night of 29
// March 2026: every second Tuesday, the last working day of the month, and
// a daily 02:30 whose time does not exist that night (it fires at 03:30
// CEST, as RFC 5545 reads a skipped local time).
func TestFiresCalendarRulesAcrossDaylightSaving(t *testing.T) {
	paris := task.Location("Europe/Paris")
	local := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, paris)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	h := newHarness(t)
	h.clock = clockwork.NewFakeClockAt(local("2026-03-01 00:00"))
	jobs := h.watch("jobs")
	e := h.start()

	rule := func(name, start, rrule string) task.Definition {
		d := oneShot(name, local(start))
		d.Rrule, d.Timezone = rrule, "Europe/Paris"
		return d
	}
	h.send(
		rule("second-tuesday", "2026-03-01 00:00", "FREQ=MONTHLY;BYDAY=2TU;BYHOUR=9;BYMINUTE=0;BYSECOND=0"),
		rule("last-working-day", "2026-03-01 00:00", "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=18;BYMINUTE=0;BYSECOND=0"),
		rule("nightly", "2026-03-28 02:30", "FREQ=DAILY;COUNT=3"),
	)
	// The fires in time order, as the wall clock of Paris shows them.
	steps := []struct{ name, at string }{
		{"second-tuesday", "2026-03-10T09:00:00+01:00"},
		{"nightly", "2026-03-28T02:30:00+01:00"},
		{"nightly", "2026-03-29T03:30:00+02:00"}, // 02:30 does not exist that night
		{"nightly", "2026-03-30T02:30:00+02:00"},
		{"last-working-day", "2026-03-31T18:00:00+02:00"},
		{"second-tuesday", "2026-04-14T09:00:00+02:00"},
		{"last-working-day", "2026-04-30T18:00:00+02:00"},
	}
	want := map[string][]int64{}
	for i, s := range steps {
		at, err := time.Parse(time.RFC3339, s.at)
		if err != nil {
			t.Fatal(err)
		}
		h.advanceTo(at.Add(-time.Millisecond))
		h.advanceTo(at)
		h.waitFired(jobs, i+1)
		want[s.name] = append(want[s.name], at.UnixMilli())
	}
	h.waitIdle()
	e.stop()
	got := occurrences(t, kafkatest.Drain(t, h.brokers, "jobs"))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fired %v,\nwant  %v", got, want)
	}
}
