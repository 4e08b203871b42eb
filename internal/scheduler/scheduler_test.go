package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

const partitions = 4

type harness struct {
	t       *testing.T
	brokers []string
	topics  record.Topics
	clock   *clockwork.FakeClock
	targets *kafka.TargetTopics
}

func newHarness(t *testing.T) *harness { return newHarnessOn(t, kafkatest.Cluster(t)) }

// newHarnessOn is newHarness on a cluster of the test's own.
func newHarnessOn(t *testing.T, brokers []string) *harness {
	topics := record.Topics{}.WithDefaults()
	cl := kafkatest.Client(t, brokers)
	ctx := context.Background()
	if err := kafka.EnsureTopics(ctx, cl, topics, partitions, -1); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, brokers: brokers, topics: topics,
		clock:   clockwork.NewFakeClockAt(time.Now().Truncate(time.Minute)),
		targets: kafka.NewTargetTopics(cl, partitions, -1, true)}
}

type running struct {
	*Engine
	cancel context.CancelFunc
	done   chan error
}

func (h *harness) start() *running { return h.startWith(nil) }

// startWith starts an engine whose configuration tune changes first.
func (h *harness) startWith(tune func(*Config)) *running {
	cfg := Config{
		ClientOpts:     kafka.ClientOpts(h.brokers, "test"),
		Topics:         h.topics,
		Targets:        h.targets,
		Clock:          h.clock,
		SessionTimeout: 2 * time.Second,
		Node:           fmt.Sprintf("node-%d", time.Now().UnixNano()),
	}
	if tune != nil {
		tune(&cfg)
	}
	e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Engine: e, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- e.Run(ctx) }()
	h.t.Cleanup(r.stop)
	return r
}

func (r *running) stop() {
	r.cancel()
	<-r.done
	r.done <- nil // let a second stop return
}

func (h *harness) send(defs ...task.Definition) {
	h.t.Helper()
	cl := kafkatest.Client(h.t, h.brokers)
	var recs []*kgo.Record
	for _, d := range defs {
		v, _ := json.Marshal(d)
		recs = append(recs, &kgo.Record{Topic: h.topics.Input, Key: []byte(d.Key()), Value: v, Timestamp: h.clock.Now(),
			Headers: []kgo.RecordHeader{{Key: record.HeaderActor, Value: []byte("test")}}})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		h.t.Fatal(err)
	}
}

// advanceTo moves the clock once every runner of e waits on it.
func (h *harness) advanceTo(t time.Time) {
	h.t.Helper()
	h.waitIdle()
	h.clock.Advance(t.Sub(h.clock.Now()))
}

// waitIdle returns once every runner waits on the clock: what was due is
// committed.
func (h *harness) waitIdle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.clock.BlockUntilContext(ctx, partitions); err != nil {
		h.t.Fatalf("runners never all waited on the clock: %v", err)
	}
}

// watch collects what a downstream consumer of topic sees.
func (h *harness) watch(topic string) *kafkatest.Collector {
	if err := h.targets.Ensure(context.Background(), topic); err != nil {
		h.t.Fatal(err)
	}
	return kafkatest.Collect(h.t, h.brokers, topic)
}

func (h *harness) waitFired(tg *kafkatest.Collector, n int) {
	h.t.Helper()
	kafkatest.Eventually(h.t, 30*time.Second, fmt.Sprintf("%d fired events", n), func() bool { return tg.Count() >= n })
}

func oneShot(name string, at time.Time) task.Definition {
	return task.Definition{Host: "acme", Name: name, Action: task.Insert, Topic: "jobs", Start: task.Ptr(at.UnixMilli()),
		Data: map[string]string{"cmd": name}}
}

func every(name string, from time.Time, unit task.TimeUnit, n int32) task.Definition {
	d := oneShot(name, from)
	d.Frequency = &task.Frequency{TimeUnit: unit, Time: n}
	return d
}

// occurrences counts fired events per task and scheduled time, failing on
// any duplicate fire id.
func occurrences(t *testing.T, recs []*kgo.Record) map[string][]int64 {
	t.Helper()
	seen := map[string]bool{}
	out := map[string][]int64{}
	for _, f := range kafkatest.Decode[record.Fired](t, recs) {
		if seen[f.FireID] {
			t.Errorf("fire %s of %s at %d fired twice", f.FireID, f.Name, f.ScheduledAt)
		}
		seen[f.FireID] = true
		if !f.Triggered && f.FireID != record.FireID(f.Host, f.Name, f.ScheduledAt) {
			t.Errorf("fire id %s is not derived from %s/%s at %d", f.FireID, f.Host, f.Name, f.ScheduledAt)
		}
		out[f.Name] = append(out[f.Name], f.ScheduledAt)
	}
	return out
}

func TestFiresOnTimeExactlyOnce(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	audit := h.watch(h.topics.Audit)
	e := h.start()
	gone := oneShot("gone", t0.Add(time.Second))
	h.send(oneShot("once", t0.Add(time.Second)), every("every", t0.Add(time.Second), task.Seconds, 10), gone)
	kafkatest.Eventually(t, 30*time.Second, "3 tasks active", func() bool { return e.ActiveTasks() == 3 })
	gone.Action = task.Delete
	h.send(gone, oneShot("once", t0.Add(time.Second))) // the INSERT again is a no-op
	h.waitFired(audit, 5)
	kafkatest.Eventually(t, 30*time.Second, "2 tasks active", func() bool { return e.ActiveTasks() == 2 })
	outcomes := map[string]string{}
	for _, a := range kafkatest.Decode[record.Audit](t, audit.Records()) {
		outcomes[a.Action+" "+a.Object] = a.Outcome + " by " + a.Actor
	}
	wantAudit := map[string]string{
		"task.created acme/once":  "unchanged by test", // the later, identical INSERT
		"task.created acme/every": "ok by test",
		"task.created acme/gone":  "ok by test",
		"task.deleted acme/gone":  "ok by test",
	}
	if fmt.Sprint(outcomes) != fmt.Sprint(wantAudit) {
		t.Fatalf("audit %v, want %v", outcomes, wantAudit)
	}

	h.advanceTo(t0.Add(time.Second - time.Millisecond))
	h.advanceTo(t0.Add(time.Second))
	h.waitFired(jobs, 2)
	h.advanceTo(t0.Add(11 * time.Second))
	h.waitFired(jobs, 3)
	h.advanceTo(t0.Add(21 * time.Second))
	h.waitFired(jobs, 4)
	e.stop()

	recs := kafkatest.Drain(t, h.brokers, "jobs")
	got := occurrences(t, recs)
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	want := map[string][]int64{
		"once":  {ms(time.Second)},
		"every": {ms(time.Second), ms(11 * time.Second), ms(21 * time.Second)},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	r := recs[0]
	headers := map[string]string{}
	for _, hd := range r.Headers {
		headers[hd.Key] = string(hd.Value)
	}
	for _, k := range []string{record.HeaderFireHost, record.HeaderFireName, record.HeaderFireID, record.HeaderFireScheduled} {
		if headers[k] == "" {
			t.Errorf("fired event lacks header %s: %v", k, headers)
		}
	}
	if string(r.Key) != "acme/"+headers[record.HeaderFireName] {
		t.Errorf("fired event key %q", r.Key)
	}

	execs := kafkatest.Decode[record.Execution](t, kafkatest.Drain(t, h.brokers, h.topics.Executions))
	if len(execs) != 4 {
		t.Fatalf("%d execution records, want 4", len(execs))
	}
	byID := map[string]*kgo.Record{}
	for _, r := range recs {
		var f record.Fired
		_ = json.Unmarshal(r.Value, &f)
		byID[f.FireID] = r
	}
	for _, x := range execs {
		r, ok := byID[x.FireID]
		if !ok || r.Partition != x.Partition || r.Offset != x.Offset || x.Topic != "jobs" {
			t.Errorf("execution %+v does not point at its fired event", x)
		}
	}
}

func TestFreshEngineAfterCrashMidFireFiresEachOccurrenceOnce(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	const n = 100
	var defs []task.Definition
	used := map[int32]bool{}
	part := kgo.StickyKeyPartitioner(nil).ForTopic(h.topics.Input)
	for i := range n {
		d := oneShot(fmt.Sprintf("once-%03d", i), t0.Add(time.Second))
		if i%2 == 1 {
			d = every(fmt.Sprintf("every-%03d", i), t0.Add(time.Second), task.Seconds, 1)
		}
		defs = append(defs, d)
		used[int32(part.Partition(&kgo.Record{Key: []byte(d.Key())}, partitions))] = true
	}

	var mu sync.Mutex
	crashed := map[int32]bool{}
	testHookBeforeCommit = func(p int32, fires int) bool {
		mu.Lock()
		defer mu.Unlock()
		if fires == 0 || crashed[p] {
			return false
		}
		crashed[p] = true
		return true
	}
	a := h.start()
	h.send(defs...)
	kafkatest.Eventually(t, 30*time.Second, "tasks active", func() bool { return a.ActiveTasks() == n })
	h.advanceTo(t0.Add(time.Second))
	kafkatest.Eventually(t, 30*time.Second, "every runner with tasks to crash mid-fire", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(crashed) == len(used)
	})
	a.stop()
	testHookBeforeCommit = nil
	if c := jobs.Count(); c != 0 {
		t.Fatalf("%d events of uncommitted fires are visible", c)
	}

	b := h.start()
	h.waitFired(jobs, n)
	for s := 2; s <= 3; s++ {
		h.advanceTo(t0.Add(time.Duration(s) * time.Second))
		h.waitFired(jobs, n+(s-1)*n/2)
	}
	b.stop()

	got := occurrences(t, kafkatest.Drain(t, h.brokers, "jobs"))
	for _, d := range defs {
		want := 1
		if d.Frequency != nil {
			want = 3
		}
		if len(got[d.Name]) != want {
			t.Errorf("%s fired %d times (%v), want %d", d.Name, len(got[d.Name]), got[d.Name], want)
		}
	}
}

func TestNewScheduleStartsAtItsNextOccurrenceNotInThePast(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	e := h.start()
	// Daily at t0-2h since a week ago; a one-shot that was due an hour ago.
	h.send(every("daily", t0.Add(-7*24*time.Hour-2*time.Hour), task.Days, 1), oneShot("late", t0.Add(-time.Hour)))
	kafkatest.Eventually(t, 30*time.Second, "the late one-shot to fire", func() bool { return jobs.Count() == 1 })
	h.advanceTo(t0.Add(22*time.Hour - time.Millisecond))
	h.advanceTo(t0.Add(22 * time.Hour))
	h.waitFired(jobs, 2)
	e.stop()
	got := occurrences(t, kafkatest.Drain(t, h.brokers, "jobs"))
	want := map[string][]int64{"late": {t0.Add(-time.Hour).UnixMilli()}, "daily": {t0.Add(22 * time.Hour).UnixMilli()}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
}

// TestTaskEndingAsItIsCreatedKeepsItsState: a one-shot already past is
// created and ended in one transaction (fired at once, or skipped); the
// state topic still holds its definition, then its end, so the console
// knows what it was and where it came from.
func TestTaskEndingAsItIsCreatedKeepsItsState(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	late := oneShot("late", t0.Add(-time.Hour))
	skipped := oneShot("skipped", t0.Add(-time.Hour))
	skipped.Misfire = task.Skip
	h.send(late, skipped)
	e := h.start()
	h.waitFired(jobs, 1)
	// Ended on the state topic (the engine's count of tasks is 0 before
	// it has applied any, too).
	kafkatest.Eventually(t, 30*time.Second, "both tasks to end", func() bool {
		ended := 0
		kafkatest.EachCommitted(t, h.brokers, h.topics.State, func(r *kgo.Record) {
			if r.Value == nil && (string(r.Key) == late.Key() || string(r.Key) == skipped.Key()) {
				ended++
			}
		})
		return ended == 2
	})
	e.stop()
	seen := map[string][]string{}
	for _, r := range kafkatest.Drain(t, h.brokers, h.topics.State) {
		k := string(r.Key)
		if k != late.Key() && k != skipped.Key() {
			continue
		}
		if r.Value == nil {
			seen[k] = append(seen[k], "end")
			continue
		}
		var st record.State
		if err := json.Unmarshal(r.Value, &st); err != nil {
			t.Fatal(err)
		}
		seen[k] = append(seen[k], st.Definition.Data["cmd"]+" from "+st.Source.Actor)
	}
	for _, d := range []task.Definition{late, skipped} {
		if got, want := seen[d.Key()], []string{d.Name + " from test", "end"}; !slices.Equal(got, want) {
			t.Errorf("state topic for %s: %q, want %q", d.Key(), got, want)
		}
	}
}

// TestDeletedAndCreatedAgainInOneTransactionSurvivesARestart: commands
// that reach a runner together are applied in one transaction; a task
// deleted and created again there must be restored as created, not as
// its tombstone.
func TestDeletedAndCreatedAgainInOneTransactionSurvivesARestart(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	first := oneShot("again", t0.Add(time.Minute))
	gone := first
	gone.Action = task.Delete
	second := oneShot("again", t0.Add(2*time.Minute))
	second.Data = map[string]string{"cmd": "second"}
	// Sent before any engine runs, so the runner fetches them at once.
	h.send(first, gone, second)
	a := h.start()
	kafkatest.Eventually(t, 30*time.Second, "the task to be held", func() bool { return a.ActiveTasks() == 1 })
	a.stop()

	b := h.start()
	kafkatest.Eventually(t, 30*time.Second, "the task to be restored", func() bool { return b.ActiveTasks() == 1 })
	h.advanceTo(t0.Add(2 * time.Minute))
	h.waitFired(jobs, 1)
	b.stop()
	fired := kafkatest.Decode[record.Fired](t, kafkatest.Drain(t, h.brokers, "jobs"))
	if len(fired) != 1 || fired[0].Data["cmd"] != "second" || fired[0].ScheduledAt != t0.Add(2*time.Minute).UnixMilli() {
		t.Fatalf("fired %+v, want the second definition once", fired)
	}
}

// TestRefusedSessionTimeoutStopsTheEngine runs the engine with a session
// timeout below the brokers' floor (Kafka's default is 6s): it must stop
// and say so, not retry forever without firing.
func TestRefusedSessionTimeoutStopsTheEngine(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	topics := record.Topics{}.WithDefaults()
	cl := kafkatest.Client(t, brokers)
	if err := kafka.EnsureTopics(context.Background(), cl, topics, partitions, -1); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{
		ClientOpts:     kafka.ClientOpts(brokers, "test"),
		Topics:         topics,
		Targets:        kafka.NewTargetTopics(cl, partitions, -1, true),
		SessionTimeout: 3 * time.Second,
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = e.Run(ctx)
	if ctx.Err() != nil {
		t.Fatal("the engine ran on until the test gave up")
	}
	if err == nil || !strings.Contains(err.Error(), "refuse a session timeout of 3s") {
		t.Errorf("Run returned %v; want it to name the refused session timeout", err)
	}
}

// TestInGroupFollowsTheMember: the engine says it is in its consumer group
// once its member joined, and no more once Run returned.
func TestInGroupFollowsTheMember(t *testing.T) {
	h := newHarness(t)
	r := h.start()
	kafkatest.Eventually(t, 30*time.Second, "the engine to join its group", r.InGroup)
	h.waitIdle() // the runners restored: the member has its partitions
	if !r.InGroup() {
		t.Error("InGroup false while the runners run")
	}
	r.stop()
	if r.InGroup() {
		t.Error("InGroup true after Run returned")
	}
}
