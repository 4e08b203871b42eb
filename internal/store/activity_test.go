package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// records numbers records per topic, as a broker would, for Apply.
type records struct {
	next map[string]int64
	recs []*kgo.Record
}

func (rs *records) add(t *testing.T, topic, key string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if rs.next == nil {
		rs.next = map[string]int64{}
	}
	rs.recs = append(rs.recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: b, Offset: rs.next[topic]})
	rs.next[topic]++
}

// TestActivityChartCountsEachStep records fires of known lateness and
// failures in three steps of five minutes, and around them, and checks
// each step's fires, failures and lateness (median and 99th percentile by
// nearest rank, and the worst), the whole span's, that a fire at the
// span's end belongs to the next span, and that the executions are read
// in the order of their index by time.
func TestActivityChartCountsEachStep(t *testing.T) {
	st := openStore(t, tempDB(t))
	ctx := context.Background()
	from := time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC)
	var rs records
	fire := func(id string, scheduled time.Time, late time.Duration, failed bool) {
		rs.add(t, testTopics.Executions, id, record.Execution{FireID: id, Host: "acme", Name: "job", Topic: "jobs",
			ScheduledAt: scheduled.UnixMilli(), FiredAt: scheduled.Add(late).UnixMilli()})
		if failed {
			rs.add(t, testTopics.Status, id, record.Status{FireID: id, Status: record.StatusFailed, At: scheduled.Add(late + time.Second).UnixMilli()})
		}
	}
	// 02:00 to 02:05: a hundred fires, 1 to 100 ms late, every tenth
	// failed.
	for i := 1; i <= 100; i++ {
		fire(fmt.Sprintf("a%03d", i), from.Add(time.Duration(i)*time.Second), time.Duration(i)*time.Millisecond, i%10 == 0)
	}
	// 02:05 to 02:10: only a worker's report, its fire not recorded yet.
	rs.add(t, testTopics.Status, "b001", record.Status{FireID: "b001", Status: record.StatusFailed, At: from.Add(7 * time.Minute).UnixMilli()})
	// 02:10 to 02:15: three fires, 5 ms, 7 ms and 9 s late, the last failed;
	// one at 02:14:59.999.
	fire("c001", from.Add(10*time.Minute), 5*time.Millisecond, false)
	fire("c002", from.Add(11*time.Minute), 7*time.Millisecond, false)
	fire("c003", from.Add(15*time.Minute-9*time.Second-time.Millisecond), 9*time.Second, true)
	// Before the span, and at its end.
	fire("z001", from.Add(-time.Millisecond-2*time.Millisecond), 2*time.Millisecond, true)
	fire("z002", from.Add(15*time.Minute-4*time.Millisecond), 4*time.Millisecond, true)
	if _, err := st.Apply(ctx, testTopics, rs.recs); err != nil {
		t.Fatal(err)
	}

	c, err := st.ActivityChart(ctx, from, from.Add(15*time.Minute), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := storetype.ActivityChart{From: from, To: from.Add(15 * time.Minute), StepSeconds: 300,
		Fires: 104, Failures: 12, LatenessP50Ms: 50, LatenessP99Ms: 100, LatenessMaxMs: 9000,
		Buckets: []storetype.ActivityBucket{
			{Start: from, Fires: 100, Failures: 10, LatenessP50Ms: 50, LatenessP99Ms: 99, LatenessMaxMs: 100},
			{Start: from.Add(5 * time.Minute), Fires: 1, Failures: 1},
			{Start: from.Add(10 * time.Minute), Fires: 3, Failures: 1, LatenessP50Ms: 7, LatenessP99Ms: 9000, LatenessMaxMs: 9000},
		}}
	if got, _ := json.Marshal(c); string(got) != string(mustJSON(t, want)) {
		t.Errorf("chart\n got %s\nwant %s", got, mustJSON(t, want))
	}

	db, done := st.reader()
	defer done()
	rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+activityChartQuery, from.UnixMilli(), from.Add(15*time.Minute).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if !slices.ContainsFunc(plan, func(s string) bool { return strings.Contains(s, "USING INDEX executions_by_time") }) {
		t.Errorf("the chart's executions are read by %q, not on the index by time", plan)
	}

	for _, bad := range []struct {
		name     string
		from, to time.Time
		step     time.Duration
	}{
		{"no step", from, from.Add(time.Hour), 0},
		{"backwards", from, from.Add(-time.Hour), time.Minute},
		{"too many steps", from, from.Add(24 * time.Hour), time.Second},
	} {
		if _, err := st.ActivityChart(ctx, bad.from, bad.to, bad.step); !errors.Is(err, storetype.ErrBadFilter) {
			t.Errorf("%s: %v, want a bad filter", bad.name, err)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTaskSchedulesAreTheTasksThatFire records tasks due, late, paused,
// deleted and due after the bound, and checks that only the active ones
// due before it are read, with their definition, anchor and next fire.
func TestTaskSchedulesAreTheTasksThatFire(t *testing.T) {
	st := openStore(t, tempDB(t))
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC)
	var rs records
	state := func(name string, next time.Time, paused bool) task.Definition {
		d := task.Definition{Host: "acme", Name: name, Action: task.Insert, Topic: "jobs", Frequency: &task.Frequency{TimeUnit: task.Hours, Time: 1}}
		if paused {
			d.Active = task.Ptr(false)
		}
		rs.add(t, testTopics.State, d.Key(), record.State{Definition: d, Anchor: now.Add(-time.Hour).UnixMilli(), NextFire: next.UnixMilli(), UpdatedAt: now.UnixMilli()})
		return d
	}
	due := state("due", now.Add(time.Hour), false)
	late := state("late", now.Add(-time.Hour), false)
	state("paused", now.Add(time.Hour), true)
	state("tomorrow", now.Add(25*time.Hour), false)
	deleted := state("deleted", now.Add(time.Hour), false)
	if _, err := st.Apply(ctx, testTopics, rs.recs); err != nil {
		t.Fatal(err)
	}
	rs.recs = nil
	rs.add(t, testTopics.State, deleted.Key(), nil)
	rs.recs[0].Value = nil // a tombstone: the task is gone
	if _, err := st.Apply(ctx, testTopics, rs.recs); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := st.TaskSchedules(ctx, now.Add(24*time.Hour), func(s storetype.TaskSchedule) error {
		var d task.Definition
		if err := json.Unmarshal([]byte(s.Definition), &d); err != nil {
			return err
		}
		got = append(got, fmt.Sprintf("%s %s %s %s %s", s.Key, s.Host, s.Topic, s.Anchor.Format(time.RFC3339), s.NextFire.Format(time.RFC3339)))
		if d.Key() != s.Key {
			t.Errorf("%s has the definition of %s", s.Key, d.Key())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	wantTasks := []string{
		due.Key() + " acme jobs 2026-11-25T01:00:00Z 2026-11-25T03:00:00Z",
		late.Key() + " acme jobs 2026-11-25T01:00:00Z 2026-11-25T01:00:00Z",
	}
	if !slices.Equal(got, wantTasks) {
		t.Errorf("tasks read:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantTasks, "\n"))
	}
}
