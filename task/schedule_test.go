package task

import (
	"slices"
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

func TestCatchUpFiresMissedOccurrencesOnce(t *testing.T) {
	start := ms("2026-03-01T08:00:00Z")
	d := every(Minutes, 10, &start)
	cases := []struct {
		name, due, now, fire, following string
	}{
		{"on time", "2026-03-01T08:10:00Z", "2026-03-01T08:10:00.004Z", "2026-03-01T08:10:00Z", "2026-03-01T08:20:00Z"},
		{"late but nothing missed", "2026-03-01T08:10:00Z", "2026-03-01T08:19:59Z", "2026-03-01T08:10:00Z", "2026-03-01T08:20:00Z"},
		{"down for an hour: the latest missed, once", "2026-03-01T08:10:00Z", "2026-03-01T09:15:00Z", "2026-03-01T09:10:00Z", "2026-03-01T09:20:00Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fire, following, more := d.CatchUp(start, ms(c.due), ms(c.now))
			if !more || fire != ms(c.fire) || following != ms(c.following) {
				t.Errorf("fire %s then %s (more %v), want %s then %s", Time(fire), Time(following), more, c.fire, c.following)
			}
		})
	}
	once := Definition{Start: &start}
	if _, _, more := once.CatchUp(start, start, start+5000); more {
		t.Error("a one-shot has no occurrence after its fire")
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
