package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// TestLeadIsWhatWritingTheFiresDueTakes: a runner begins writing the
// transaction of what is due as far ahead as writing it is expected to
// take, twice over, within FireAhead; not for a chained task,
// nor while a run's timer goes off first.
func TestLeadIsWhatWritingTheFiresDueTakes(t *testing.T) {
	const due = 1_000_000
	for _, tc := range []struct {
		name      string
		fireAhead time.Duration
		maxAhead  int
		perFire   time.Duration
		fixed     time.Duration
		now       int64
		tasks     int   // due at due; one more due a second later
		chained   bool  // the first task due follows another
		runAt     int64 // a run's timer; 0: none
		want      int64 // the lead
		writes    int64 // the time writing is expected to take
	}{
		{"a handful", time.Second, 16_384, 0, 0, due - 500, 4, false, 0, 10, 0},
		{"first cost before any is learnt", time.Second, 16_384, 0, 0, due - 500, 2_000, false, 0, 210, 100},
		{"what was learnt", time.Second, 16_384, 30 * time.Microsecond, 0, due - 500, 2_000, false, 0, 130, 60},
		{"within FireAhead", time.Second, 16_384, 0, 0, due - 500, 20_000, false, 0, 1_000, 819},
		{"up to MaxFiresAhead", time.Second, 1_000, 0, 0, due - 500, 20_000, false, 0, 110, 50},
		{"further than FireAhead", time.Second, 16_384, 0, 0, due - 1_500, 4, false, 0, 0, 0},
		{"never ahead", -1, 16_384, 0, 0, due - 5, 4, false, 0, 0, 0},
		{"due already", time.Second, 16_384, 0, 0, due, 4, false, 0, 0, 0},
		{"a chained task", time.Second, 16_384, 0, 0, due - 5, 4, true, 0, 0, 0},
		{"a run's timer before", time.Second, 16_384, 0, 0, due - 5, 4, false, due - 1, 0, 0},
		{"a run's timer at the same time", time.Second, 16_384, 0, 0, due - 5, 4, false, due, 0, 0},
		{"a run's timer after", time.Second, 16_384, 0, 0, due - 5, 4, false, due + 1, 10, 0},
		{"the round trips of a few learnt", time.Second, 16_384, 0, 20 * time.Millisecond, due - 500, 4, false, 0, 50, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{e: &Engine{cfg: Config{FireAhead: tc.fireAhead, MaxFiresAhead: tc.maxAhead}},
				tasks: testTable(t), runs: newRuns(), perFire: tc.perFire, fixed: tc.fixed}
			add := func(name string, at int64, after []string) {
				d := task.Definition{Host: "h", Name: name, Topic: "jobs", Start: task.Ptr(at), After: after}
				st := record.State{Anchor: at, NextFire: at}
				i, err := r.tasks.set(d.Key(), &d, &st, nil)
				if err != nil {
					t.Fatal(err)
				}
				r.tasks.schedule(i)
			}
			var after []string
			if tc.chained {
				after = []string{"before"}
			}
			add("a-first", due, after) // the lowest slot: first of those due
			for n := 1; n < tc.tasks; n++ {
				add(fmt.Sprintf("t%05d", n), due, nil)
			}
			add("later", due+1_000, nil)
			if tc.runAt != 0 {
				r.runs.put(&run{RunState: record.RunState{Run: "r", Fire: "r", Key: "h/x", RetryAt: tc.runAt}})
			}
			if lead, writes := r.lead(due, tc.now); lead != tc.want || writes != tc.writes {
				t.Errorf("lead %d ms, writing %d ms; want %d and %d", lead, writes, tc.want, tc.writes)
			}
		})
	}
}

// TestTableCountsTheTasksDueAtOnce counts the tasks due at the earliest
// time among many due then and later, up to a limit.
func TestTableCountsTheTasksDueAtOnce(t *testing.T) {
	tb := testTable(t)
	for n := range 3_000 {
		at := int64(1_000 + n%3) // a third due at 1000, 1001, 1002
		d := task.Definition{Host: "h", Name: fmt.Sprint("t", n), Topic: "jobs", Start: task.Ptr(at)}
		st := record.State{Anchor: at, NextFire: at}
		i, err := tb.set(d.Key(), &d, &st, nil)
		if err != nil {
			t.Fatal(err)
		}
		tb.schedule(i)
	}
	if got := tb.dueAt(1_000, 10_000); got != 1_000 {
		t.Errorf("%d due at once, want 1000", got)
	}
	if got := tb.dueAt(1_000, 300); got != 300 {
		t.Errorf("%d counted with a limit of 300", got)
	}
}

// offsets are the target topic's end offsets and last stable offsets,
// summed over its partitions: records written, and records a
// read_committed consumer may read.
func offsets(t *testing.T, h *harness, topic string) (written, stable int64) {
	t.Helper()
	adm := kadm.NewClient(kafkatest.Client(t, h.brokers))
	ctx := context.Background()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	lsos, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) { written += o.Offset })
	lsos.Each(func(o kadm.ListedOffset) { stable += o.Offset })
	return written, stable
}

// writeAhead sends n one-shot tasks due at due and brings the clock
// within their lead: every runner holding some writes their transaction
// and waits for due to commit it.
func writeAhead(t *testing.T, h *harness, e *running, n int, due time.Time) {
	t.Helper()
	var defs []task.Definition
	for i := range n {
		defs = append(defs, oneShot(fmt.Sprintf("burst-%03d", i), due))
	}
	h.send(defs...)
	kafkatest.Eventually(t, 30*time.Second, fmt.Sprintf("%d tasks held", n), func() bool { return e.ActiveTasks() == int64(n) })
	h.advanceTo(due.Add(-time.Second)) // FireAhead before: the runners reckon their lead
	h.advanceTo(due.Add(-5 * time.Millisecond))
	h.waitIdle()
	kafkatest.Eventually(t, 30*time.Second, "the fires written ahead", func() bool {
		written, _ := offsets(t, h, "jobs")
		return written == int64(n)
	})
}

// TestFiresWrittenAheadCommitAtTheirDueTime: the occurrences due soon are
// written ahead and committed at their due time: a read_committed
// consumer reads none before, and every one once then, stamped with it;
// meanwhile Urgency counts the runners' wait and Lateness does not, and
// the runners note how long their fires pressed as they commit, for
// Pressure to count on while the fires are read; a later on-time commit
// leaves that window open.
func TestFiresWrittenAheadCommitAtTheirDueTime(t *testing.T) {
	h := newHarness(t)
	jobs := h.watch("jobs")
	execs := h.watch(h.topics.Executions)
	e := h.start()
	due := h.clock.Now().Add(time.Minute)
	const n = 200
	writeAhead(t, h, e, n, due)

	if _, stable := offsets(t, h, "jobs"); stable != 0 {
		t.Errorf("%d events readable before their due time", stable)
	}
	h.clock.Advance(3 * time.Millisecond)
	waitedAt := h.clock.Now()
	if got := e.Urgency(); got != 3*time.Millisecond {
		t.Errorf("Urgency %s 3ms into the wait, want 3ms", got)
	}
	if got := e.Lateness(); got != 0 {
		t.Errorf("Lateness %s before the due time, want 0", got)
	}
	if got := jobs.Count(); got != 0 {
		t.Fatalf("a read_committed consumer read %d events before their due time", got)
	}

	h.advanceTo(due)
	h.waitFired(jobs, n)
	h.waitFired(execs, n)
	got := occurrences(t, jobs.Records())
	if len(got) != n {
		t.Errorf("%d tasks fired, want %d", len(got), n)
	}
	for _, f := range kafkatest.Decode[record.Fired](t, jobs.Records()) {
		if f.ScheduledAt != due.UnixMilli() || f.FiredAt != due.UnixMilli() {
			t.Fatalf("%s: scheduled at %d, fired at %d, want both %d", f.Name, f.ScheduledAt, f.FiredAt, due.UnixMilli())
		}
	}
	for _, rec := range append(jobs.Records(), execs.Records()...) {
		if !rec.Timestamp.Equal(due) {
			t.Fatalf("record of %s on %s stamped %s, want its due time %s", rec.Key, rec.Topic, rec.Timestamp, due)
		}
	}
	for _, x := range kafkatest.Decode[record.Execution](t, execs.Records()) {
		if x.FiredAt != due.UnixMilli() {
			t.Fatalf("execution of %s fired at %d, want %d", x.Name, x.FiredAt, due.UnixMilli())
		}
	}
	kafkatest.Eventually(t, 30*time.Second, "every task ended", func() bool { return e.ActiveTasks() == 0 })
	if got := e.Urgency(); got != 0 {
		t.Errorf("Urgency %s once committed, want 0", got)
	}
	// The burst's consumers read it as it commits: background work
	// still gives way, as it did while the runners waited, and goes on
	// once they had about as long as writing it took (the engine's clock
	// stands still meanwhile).
	pressed := due.Sub(waitedAt) + 3*time.Millisecond
	e.mu.Lock()
	runners := slices.Collect(maps.Values(e.runners))
	e.mu.Unlock()
	var most time.Duration
	for _, r := range runners {
		most = max(most, time.Duration(r.pressed.Load())*time.Millisecond)
	}
	if most != pressed {
		t.Errorf("the runners noted their fires pressed %s as they committed, want %s", most, pressed)
	}
	// An on-time fire committed while that window is open leaves it as
	// it is.
	r := runners[0]
	open := time.Now().Add(time.Hour).UnixMilli()
	r.pressed.Store(pressed.Milliseconds())
	r.settledAt.Store(open)
	r.settle()
	if got, until := time.Duration(r.pressed.Load())*time.Millisecond, r.settledAt.Load(); got != pressed || until != open {
		t.Errorf("an on-time commit in a burst's window left it at %s until %d, want %s until %d", got, until, pressed, open)
	}
	if got := e.Pressure(); got != pressed {
		t.Errorf("Pressure %s in the burst's window, want %s", got, pressed)
	}
	r.settledAt.Store(0)
	kafkatest.Eventually(t, 30*time.Second, "the pressure of the committed fires gone", func() bool { return e.Pressure() == 0 })
}

// TestFiresWrittenAheadOfAStopFireOnceAfterIt: an engine stopped while
// its fires wait written ahead aborts them; the next engine fires every
// occurrence once at its due time.
func TestFiresWrittenAheadOfAStopFireOnceAfterIt(t *testing.T) {
	h := newHarness(t)
	jobs := h.watch("jobs")
	e := h.start()
	due := h.clock.Now().Add(time.Minute)
	const n = 100
	writeAhead(t, h, e, n, due)
	e.stop()
	if written, stable := offsets(t, h, "jobs"); stable != written || written <= n {
		t.Errorf("last stable offsets %d and end offsets %d after the stop, want both past the %d records and their abort markers", stable, written, n)
	}
	if got := jobs.Count(); got != 0 {
		t.Fatalf("a read_committed consumer read %d events of the transactions aborted", got)
	}

	e = h.start()
	kafkatest.Eventually(t, 30*time.Second, "the tasks restored", func() bool { return e.ActiveTasks() == n })
	h.advanceTo(due)
	h.waitFired(jobs, n)
	kafkatest.Eventually(t, 30*time.Second, "every task ended", func() bool { return e.ActiveTasks() == 0 })
	if got := occurrences(t, kafkatest.Drain(t, h.brokers, "jobs")); len(got) != n {
		t.Errorf("%d tasks fired, want %d", len(got), n)
	}
}

// TestFireAheadWithinATransactionTimeout: the default lead is kept to a
// third of a short transaction timeout, and a longer one refused.
func TestFireAheadWithinATransactionTimeout(t *testing.T) {
	targets := kafka.NewTargetTopics(nil, 1, -1, false)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := New(Config{Targets: targets, TransactionTimeout: 3 * time.Second}, log)
	if err != nil {
		t.Fatal(err)
	}
	if e.cfg.FireAhead != time.Second {
		t.Errorf("FireAhead %s by default with a 3s transaction timeout, want 1s", e.cfg.FireAhead)
	}
	if e, err := New(Config{Targets: targets}, log); err != nil || e.cfg.FireAhead != DefaultFireAhead {
		t.Errorf("by default: %v, want FireAhead %s", err, DefaultFireAhead)
	}
	if _, err := New(Config{Targets: targets, TransactionTimeout: 3 * time.Second, FireAhead: 2 * time.Second}, log); err == nil {
		t.Error("FireAhead 2s with a 3s transaction timeout accepted")
	}
}
