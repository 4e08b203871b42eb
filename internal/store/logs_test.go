package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// offsets numbers the records of successive applies per partition, as a
// broker would.
type offsets map[topicPartition]int64

func (o offsets) apply(t *testing.T, st *Store, logCap int64, recs ...*kgo.Record) []Skipped {
	t.Helper()
	for _, r := range recs {
		tp := topicPartition{r.Topic, r.Partition}
		r.Offset = o[tp]
		o[tp]++
		r.Timestamp = time.UnixMilli(t0).UTC()
	}
	skipped, err := st.apply(context.Background(), testTopics, recs, nil, logCap, nil)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return skipped
}

func logLines(at int64, msgs ...string) []record.LogLine {
	var out []record.LogLine
	for i, m := range msgs {
		out = append(out, record.LogLine{At: at + int64(i), Level: "info", Message: m})
	}
	return out
}

// TestExecutionLogKeepsItsCap: a worker's lines are kept in order, a
// range of time selects some, and past the cap the oldest go while the
// log says how many went. A line of an unknown level spoils its record,
// and only it.
func TestExecutionLogKeepsItsCap(t *testing.T) {
	st := openStore(t, tempDB(t))
	o := offsets{}
	ctx := context.Background()
	fire := "f1"
	o.apply(t, st, DefaultMaxLogBytes, executionRec(t, 0, record.Execution{FireID: fire, Host: "acme", Name: "x", FiredAt: t0}))
	o.apply(t, st, DefaultMaxLogBytes,
		statusRec(t, 0, record.Status{FireID: fire, Status: "RUNNING", Worker: "w1", At: t0 + 10, Logs: logLines(t0+10, "starting")}),
		statusRec(t, 0, record.Status{FireID: fire, Worker: "w1", At: t0 + 20, Logs: logLines(t0+20, "step 1", "step 2")}))
	skipped := o.apply(t, st, DefaultMaxLogBytes, statusRec(t, 0, record.Status{FireID: fire, At: t0 + 30,
		Logs: []record.LogLine{{At: t0 + 30, Level: "info", Message: "fine"}, {At: t0 + 31, Level: "debug", Message: "noise"}}}))
	if len(skipped) != 1 || !strings.Contains(skipped[0].Err.Error(), `level "debug" is not info or error`) {
		t.Errorf("a line of level debug: skipped %v", skipped)
	}
	log, err := st.ExecutionLog(ctx, fire, time.Time{}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := messages(log); got != "starting|step 1|step 2" || log.Dropped != 0 || log.Lines[0].Worker != "w1" {
		t.Fatalf("log = %q, dropped %d, %+v", got, log.Dropped, log.Lines)
	}
	e, err := st.ExecutionByFireID(ctx, fire)
	if err != nil || e.StartedAt == nil || e.StartedAt.UnixMilli() != t0+10 {
		t.Errorf("started at %v (%v), want the RUNNING report's time", e.StartedAt, err)
	}
	if newest, err := st.ExecutionLog(ctx, fire, time.Time{}, time.Time{}, 2); err != nil || messages(newest) != "step 1|step 2" || newest.Kept != 3 {
		t.Errorf("the newest two lines: %q of %d (%v)", messages(newest), newest.Kept, err)
	}
	ranged, err := st.ExecutionLog(ctx, fire, time.UnixMilli(t0+20), time.UnixMilli(t0+21), 0)
	if err != nil || messages(ranged) != "step 1" {
		t.Errorf("lines in [t0+20, t0+21): %q (%v)", messages(ranged), err)
	}

	// A cap of three lines of this size: two more lines drop the two
	// oldest.
	lineSize := int64(len("step 1") + logLineOverhead)
	o.apply(t, st, 3*lineSize, statusRec(t, 0, record.Status{FireID: fire, At: t0 + 40, Logs: logLines(t0+40, "step 3", "step 4")}))
	log, err = st.ExecutionLog(ctx, fire, time.Time{}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := messages(log); got != "step 2|step 3|step 4" || log.Dropped != 2 || log.Bytes != 3*lineSize {
		t.Errorf("over the cap: %q, dropped %d, %d bytes; want the last three, 2 dropped, %d bytes", got, log.Dropped, log.Bytes, 3*lineSize)
	}

	// A line longer than a message may be is cut, and says so.
	long := strings.Repeat("é", record.MaxLogMessage)
	o.apply(t, st, DefaultMaxLogBytes, statusRec(t, 0, record.Status{FireID: "f2", At: t0, Logs: logLines(t0, long)}))
	log, _ = st.ExecutionLog(ctx, "f2", time.Time{}, time.Time{}, 0)
	if len(log.Lines) != 1 || len(log.Lines[0].Message) > record.MaxLogMessage || !strings.HasSuffix(log.Lines[0].Message, "[cut]") {
		t.Errorf("a long line kept as %d bytes", len(log.Lines[0].Message))
	}

	// Retention: logs whose last line is older than the cut go.
	n, err := st.DropLogsBefore(ctx, time.UnixMilli(t0+35))
	if err != nil || n != 1 {
		t.Fatalf("dropped %d logs (%v), want f2's", n, err)
	}
	if log, _ := st.ExecutionLog(ctx, "f2", time.Time{}, time.Time{}, 0); len(log.Lines) != 0 {
		t.Errorf("f2's log kept past retention: %d lines", len(log.Lines))
	}
	if log, _ := st.ExecutionLog(ctx, fire, time.Time{}, time.Time{}, 0); len(log.Lines) != 3 {
		t.Errorf("f1's recent log: %d lines, want 3", len(log.Lines))
	}
}

func messages(l storetype.ExecutionLog) string {
	var out []string
	for _, line := range l.Lines {
		out = append(out, line.Message)
	}
	return strings.Join(out, "|")
}

// TestReapedStatus: the reaper's FAILED ends an execution with no final
// status, replaces no final status a worker reported, and no later
// RUNNING undoes it, while a worker's final status read after it, however
// old, replaces it; once reaped, an execution is no longer unfinished.
func TestReapedStatus(t *testing.T) {
	st := openStore(t, tempDB(t))
	o := offsets{}
	ctx := context.Background()
	const timeout = 60_000
	for _, id := range []string{"done", "left", "fresh"} {
		fired := t0
		if id == "fresh" {
			fired = t0 + 50_000
		}
		o.apply(t, st, DefaultMaxLogBytes, executionRec(t, 0, record.Execution{FireID: id, Host: "acme", Name: id, FiredAt: fired, Timeout: timeout}))
	}
	o.apply(t, st, DefaultMaxLogBytes,
		statusRec(t, 0, record.Status{FireID: "done", Status: "SUCCESS", Worker: "w", At: t0 + 1000}),
		statusRec(t, 0, record.Status{FireID: "left", Status: "RUNNING", Worker: "w", At: t0 + 1000}))

	un, err := st.Unfinished(ctx, time.UnixMilli(t0+timeout+1), 10)
	if err != nil || len(un) != 1 || un[0].FireID != "left" || un[0].Status != "RUNNING" || un[0].Timeout != time.Minute {
		t.Fatalf("unfinished past the deadline: %+v (%v); want left alone", un, err)
	}
	reap := func(id string, at int64) *kgo.Record {
		return statusRec(t, 0, record.Status{FireID: id, Status: "FAILED", Worker: record.ReaperWorker, Message: "reaped", At: at})
	}
	o.apply(t, st, DefaultMaxLogBytes, reap("done", t0+400_000), reap("left", t0+400_000))
	o.apply(t, st, DefaultMaxLogBytes, statusRec(t, 0, record.Status{FireID: "left", Status: "RUNNING", Worker: "w", At: t0 + 500_000}),
		reap("left", t0+600_000))
	for id, want := range map[string]string{"done": "SUCCESS", "left": "FAILED", "fresh": "FIRED"} {
		e, err := st.ExecutionByFireID(ctx, id)
		if err != nil || e.Status != want {
			t.Errorf("%s: %s (%v), want %s", id, e.Status, err, want)
		}
		if id == "left" && (e.StatusAt.UnixMilli() != t0+400_000 || e.Worker != record.ReaperWorker) {
			t.Errorf("left: reaped at %v by %q; want the first reap's record", e.StatusAt, e.Worker)
		}
	}
	un, err = st.Unfinished(ctx, time.UnixMilli(t0+10*timeout), 10)
	if err != nil || len(un) != 1 || un[0].FireID != "fresh" {
		t.Errorf("unfinished after the reap: %+v (%v); want fresh alone", un, err)
	}
	// A view reading the topics anew may read a worker's SUCCESS after
	// the reap that came later: the worker's word stands.
	o.apply(t, st, DefaultMaxLogBytes, reap("fresh", t0+900_000))
	o.apply(t, st, DefaultMaxLogBytes, statusRec(t, 0, record.Status{FireID: "fresh", Status: "SUCCESS", Worker: "w", At: t0 + 60_000}))
	if e, err := st.ExecutionByFireID(ctx, "fresh"); err != nil || e.Status != "SUCCESS" || e.Worker != "w" {
		t.Errorf("fresh, reaped, then its SUCCESS read: %s by %s (%v)", e.Status, e.Worker, err)
	}
}
