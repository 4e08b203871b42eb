package list

import (
	"net/url"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestTimeReadsEveryFormAFilterTakes(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, v string
		end     bool
		want    time.Time
		bad     bool
	}{
		{name: "empty"},
		{name: "duration back", v: "-1h", want: now.Add(-time.Hour)},
		{name: "duration ahead", v: "+24h", want: now.Add(24 * time.Hour)},
		{name: "RFC 3339", v: "2026-11-26T10:00:00+01:00", want: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)},
		{name: "minutes", v: "2026-11-26T10:15", want: time.Date(2026, 11, 26, 10, 15, 0, 0, time.UTC)},
		{name: "day as a start", v: "2026-11-26", want: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)},
		{name: "day as an end includes it", v: "2026-11-26", end: true, want: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)},
		{name: "nonsense", v: "yesterday", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Time(url.Values{"from": {tc.v}}, "from", tc.end, now)
			if (err != nil) != tc.bad || !got.Equal(tc.want) {
				t.Errorf("Time(%q) = %v, %v; want %v (error %v)", tc.v, got, err, tc.want, tc.bad)
			}
		})
	}
}

func TestReaderRefusesWhatAListDoesNotHave(t *testing.T) {
	rd := Reader{Limit: 50, Clock: clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	for _, q := range []string{"status=sleeping", "sort=sideways", "limit=0", "limit=x", "from=someday"} {
		v, _ := url.ParseQuery(q)
		if _, err := rd.Tasks(v); err == nil {
			t.Errorf("tasks ?%s: no error", q)
		}
	}
	f, err := rd.Executions(url.Values{"status": {"success"}, "limit": {"5000"}})
	if err != nil || f.Status != "SUCCESS" || f.Limit != MaxLimit {
		t.Errorf("executions: %+v, %v: want status SUCCESS and the limit at %d", f, err, MaxLimit)
	}
}

func TestQueryKeepsTheListsOrder(t *testing.T) {
	q := Query(url.Values{"to": {"-1h"}, "status": {"active"}, "junk": {"x"}, "limit": {"10"}, "host": {" "}}, TaskParams)
	if got, want := QueryString(q), "?status=active&to=-1h&limit=10"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
