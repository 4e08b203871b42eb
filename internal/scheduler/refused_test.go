package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// faultCluster starts a one-broker cluster whose faults the test sets.
func faultCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// refuseProduce makes the brokers answer err to the next n produce
// requests (-1: every one) that write topic, whatever else they write:
// kfake checks its faults per partition, so the records of other topics in
// the same request go through.
func refuseProduce(c *kfake.Cluster, topic string, err *kerr.Error, n int) {
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: err, Count: n})
}

// lateness collects, from the engine's OnCommit hook, how late each
// committed fire was by the real clock, counted from the moment its due
// time came on the fake clock.
type lateness struct {
	mu    sync.Mutex
	due   time.Time // real time at which the fake clock reached the due time
	late  []time.Duration
	fired int
}

func (l *lateness) onCommit(scheduled []int64, committed time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range scheduled {
		l.late = append(l.late, committed.Sub(l.due))
	}
	l.fired += len(scheduled)
}

func (l *lateness) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fired
}

// quantile of the lateness seen, q in [0, 1].
func (l *lateness) quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.late)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// refusals collects the engine's OnRefused reports.
type refusals struct {
	mu    sync.Mutex
	codes []string
}

func (r *refusals) onRefused(code string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.codes = append(r.codes, code)
}

func (r *refusals) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.codes)
}

// randomText is n letters that compress about as little as real payloads.
func randomText(n int) string {
	rnd := rand.New(rand.NewPCG(uint64(n), 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz0123456789/-_ "[rnd.IntN(40)]
	}
	return string(b)
}

// TestRefusedFireFailsItsOccurrenceNotItsPartition: 1,000 one-shot tasks
// are due in the same second and the brokers refuse the fired event of
// one of them for a reason of its own. The 999 others fire once each, on
// time; the one is recorded FAILED with the brokers' answer, fired again
// after 1, 2, 4 and 8 s (the default policy) and then paused by the
// policy; every step is audited, and a fresh engine restores the pause.
func TestRefusedFireFailsItsOccurrenceNotItsPartition(t *testing.T) {
	for _, tc := range []struct {
		name string
		// refuse sets the fault up and returns the faulty task's topic
		// and data, and the error code the brokers answer.
		refuse func(t *testing.T, c *kfake.Cluster, h *harness) (topic string, data map[string]string, code string)
	}{
		{"its own topic is not authorised", func(t *testing.T, c *kfake.Cluster, h *harness) (string, map[string]string, string) {
			const topic = "forbidden-jobs"
			h.watch(topic)
			refuseProduce(c, topic, kerr.TopicAuthorizationFailed, -1)
			return topic, map[string]string{"cmd": "refused"}, kerr.TopicAuthorizationFailed.Message
		}},
		{"too large for the topic it shares", func(t *testing.T, c *kfake.Cluster, h *harness) (string, map[string]string, string) {
			// The brokers refuse the whole batch that holds the large
			// event: the other tasks of that batch must be told apart.
			limit := "131072"
			resp, err := kadm.NewClient(kafkatest.Client(t, h.brokers)).AlterTopicConfigs(context.Background(),
				[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &limit}}, "jobs")
			if err == nil {
				err = resp[0].Err
			}
			if err != nil {
				t.Fatal(err)
			}
			return "jobs", map[string]string{"cmd": randomText(400 << 10)}, kerr.MessageTooLarge.Message
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := faultCluster(t)
			h := newHarnessOn(t, c.ListenAddrs())
			t0 := h.clock.Now()
			due := t0.Add(time.Second)
			h.watch("jobs")
			topic, data, code := tc.refuse(t, c, h)

			const n = 1_000
			var defs []task.Definition
			for i := range n - 1 {
				defs = append(defs, oneShot(fmt.Sprintf("job-%04d", i), due))
			}
			faulty := oneShot("refused", due)
			faulty.Topic, faulty.Data = topic, data
			defs = append(defs, faulty)
			late := &lateness{}
			refused := &refusals{}
			e := h.startWith(func(c *Config) { c.OnCommit, c.OnRefused = late.onCommit, refused.onRefused })
			h.send(defs...)
			kafkatest.Eventually(t, 60*time.Second, "1,000 tasks held", func() bool { return e.ActiveTasks() == n })

			// Due: every runner waits for the clock, which reaches the due
			// time now by the real clock too.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := h.clock.BlockUntilContext(ctx, partitions); err != nil {
				t.Fatal(err)
			}
			late.due = time.Now()
			h.clock.Advance(due.Sub(h.clock.Now()))
			kafkatest.Eventually(t, 60*time.Second, "999 fires committed", func() bool { return late.count() >= n-1 })
			kafkatest.Eventually(t, 60*time.Second, "the first refusal committed", func() bool { return len(refused.seen()) == 1 })
			p50, p99 := late.quantile(0.5), late.quantile(0.99)
			t.Logf("999 healthy fires: lateness p50 %s, p99 %s, max %s", p50, p99, late.quantile(1))
			if p99 >= time.Second {
				t.Errorf("p99 lateness of the healthy fires is %s, want under 1s", p99)
			}

			// The policy: fired again 1, 2, 4 and 8 s after each refusal,
			// then paused.
			attemptsAt := []time.Time{due}
			for attempt, wait := 2, time.Second; attempt <= 5; attempt, wait = attempt+1, 2*wait {
				at := attemptsAt[len(attemptsAt)-1].Add(wait)
				h.advanceTo(at)
				kafkatest.Eventually(t, 30*time.Second, fmt.Sprintf("refusal %d", attempt),
					func() bool { return len(refused.seen()) == attempt })
				attemptsAt = append(attemptsAt, at)
			}
			kafkatest.Eventually(t, 30*time.Second, "the task paused", func() bool { return e.PausedByFaultPolicy() == 1 })
			if got := e.ActiveTasks(); got != 1 {
				t.Errorf("%d tasks held after the burst, want the paused one", got)
			}
			// Paused, it fires no more.
			h.advanceTo(attemptsAt[4].Add(time.Hour))
			h.waitIdle()
			e.stop()
			if got, want := refused.seen(), slices.Repeat([]string{code}, 5); !slices.Equal(got, want) {
				t.Errorf("refusals counted %v, want %v", got, want)
			}

			// What a read_committed consumer of each topic sees.
			fired := occurrences(t, kafkatest.Drain(t, h.brokers, "jobs"))
			for _, d := range defs[:n-1] {
				if got := fired[d.Name]; len(got) != 1 || got[0] != due.UnixMilli() {
					t.Errorf("%s fired at %v, want once at %d", d.Name, got, due.UnixMilli())
				}
			}
			if got := fired[faulty.Name]; len(got) != 0 {
				t.Errorf("the refused task fired at %v", got)
			}
			if topic != "jobs" {
				kafkatest.EachCommitted(t, h.brokers, topic, func(r *kgo.Record) {
					t.Errorf("event committed to %s: %s", topic, kafkatest.Describe(r))
				})
			}
			fireID := record.FireID(faulty.Host, faulty.Name, due.UnixMilli())
			var execs []record.Execution
			for _, x := range kafkatest.Decode[record.Execution](t, kafkatest.Drain(t, h.brokers, h.topics.Executions)) {
				if x.FireID == fireID {
					execs = append(execs, x)
				} else if x.Partition < 0 {
					t.Errorf("healthy execution %+v has no event", x)
				}
			}
			if len(execs) != 5 {
				t.Fatalf("%d execution records of the refused fire, want one per attempt: %+v", len(execs), execs)
			}
			for i, x := range execs {
				if x.Partition != -1 || x.ScheduledAt != due.UnixMilli() || x.FiredAt != attemptsAt[i].UnixMilli() {
					t.Errorf("execution of attempt %d: %+v, want no event, scheduled %d, attempted %d",
						i+1, x, due.UnixMilli(), attemptsAt[i].UnixMilli())
				}
			}
			var statuses []record.Status
			for _, s := range kafkatest.Decode[record.Status](t, kafkatest.Drain(t, h.brokers, h.topics.Status)) {
				if s.FireID == fireID {
					statuses = append(statuses, s)
				}
			}
			if len(statuses) != 5 {
				t.Fatalf("%d statuses of the refused fire, want 5: %+v", len(statuses), statuses)
			}
			for i, s := range statuses {
				if s.Status != record.StatusFailed || !strings.Contains(s.Message, code) ||
					!strings.Contains(s.Message, fmt.Sprintf("attempt %d of 5", i+1)) {
					t.Errorf("status of attempt %d: %+v, want FAILED naming %s", i+1, s, code)
				}
			}
			if last := statuses[4].Message; !strings.Contains(last, "task paused by fault policy") {
				t.Errorf("last status %q does not say the task is paused", last)
			}

			var refusedAt []int64
			paused := 0
			for _, a := range kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, h.brokers, h.topics.Audit)) {
				if a.Object != faulty.Key() {
					continue
				}
				switch a.Action {
				case record.ActionTaskFireRefused:
					refusedAt = append(refusedAt, a.At)
					if a.Outcome != record.OutcomeFailed || !strings.Contains(a.Detail, code) {
						t.Errorf("refusal audited as %+v", a)
					}
				case record.ActionTaskPaused:
					paused++
					if !strings.HasPrefix(a.Detail, "paused by fault policy: ") || !strings.Contains(a.Detail, code) {
						t.Errorf("pause audited as %+v", a)
					}
				}
			}
			var wantAt []int64
			for _, at := range attemptsAt {
				wantAt = append(wantAt, at.UnixMilli())
			}
			if !slices.Equal(refusedAt, wantAt) || paused != 1 {
				t.Errorf("audited refusals at %v and %d pauses, want refusals at %v and 1 pause", refusedAt, paused, wantAt)
			}

			var last *record.State
			for _, r := range kafkatest.Drain(t, h.brokers, h.topics.State) {
				if string(r.Key) != faulty.Key() {
					continue
				}
				last = nil
				if r.Value != nil {
					last = &record.State{}
					if err := json.Unmarshal(r.Value, last); err != nil {
						t.Fatal(err)
					}
				}
			}
			switch {
			case last == nil:
				t.Fatal("the paused task has no state")
			case !last.Definition.Paused() || last.Fault == nil || !last.Fault.Paused || last.Fault.Attempts != 5 ||
				last.Fault.Occurrence != due.UnixMilli() || !strings.Contains(last.Fault.Reason, code) || last.NextFire != 0:
				t.Errorf("state of the paused task: %+v fault %+v", last, last.Fault)
			case last.Definition.Data["cmd"] != data["cmd"] || last.Source.Actor != "test" || last.LastFire != 0 || last.FireCount != 0:
				t.Errorf("the paused task lost its data or source, or counts a fire: source %+v, last fire %d, %d fires",
					last.Source, last.LastFire, last.FireCount)
			}

			// A fresh engine restores the task as paused by the policy.
			again := h.start()
			kafkatest.Eventually(t, 30*time.Second, "the pause restored", func() bool { return again.PausedByFaultPolicy() == 1 })
		})
	}
}

// TestRefusedOccurrenceFiresOnceWhenTheBrokersTakeIt: the brokers refuse
// the first two attempts at an occurrence, and the engine is replaced
// between them; the third attempt fires the occurrence once, with its own
// fire id, and the task's next occurrence fires on time.
func TestRefusedOccurrenceFiresOnceWhenTheBrokersTakeIt(t *testing.T) {
	c := faultCluster(t)
	h := newHarnessOn(t, c.ListenAddrs())
	t0 := h.clock.Now()
	due := t0.Add(time.Second)
	jobs := h.watch("jobs")
	refuseProduce(c, "jobs", kerr.PolicyViolation, 2)
	refused := &refusals{}
	tune := func(c *Config) { c.OnRefused = refused.onRefused }
	a := h.startWith(tune)
	minutely := every("minutely", due, task.Minutes, 1)
	h.send(minutely)
	kafkatest.Eventually(t, 30*time.Second, "the task held", func() bool { return a.ActiveTasks() == 1 })
	h.advanceTo(due)
	kafkatest.Eventually(t, 30*time.Second, "the first refusal", func() bool { return len(refused.seen()) == 1 })
	a.stop()

	b := h.startWith(tune)
	kafkatest.Eventually(t, 30*time.Second, "the task restored", func() bool { return b.ActiveTasks() == 1 })
	h.advanceTo(due.Add(time.Second)) // attempt 2, restored from the state
	kafkatest.Eventually(t, 30*time.Second, "the second refusal", func() bool { return len(refused.seen()) == 2 })
	h.advanceTo(due.Add(3 * time.Second)) // attempt 3 goes through
	h.waitFired(jobs, 1)
	h.advanceTo(due.Add(time.Minute))
	h.waitFired(jobs, 2)
	b.stop()

	recs := kafkatest.Drain(t, h.brokers, "jobs")
	if got, want := occurrences(t, recs)["minutely"], []int64{due.UnixMilli(), due.Add(time.Minute).UnixMilli()}; !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	first := kafkatest.Decode[record.Fired](t, recs)[0]
	if want := record.FireID(minutely.Host, minutely.Name, due.UnixMilli()); first.FireID != want ||
		first.FiredAt != due.Add(3*time.Second).UnixMilli() {
		t.Errorf("retried fire %+v, want fire id %s fired at attempt 3", first, want)
	}
	var last record.Execution
	for _, x := range kafkatest.Decode[record.Execution](t, kafkatest.Drain(t, h.brokers, h.topics.Executions)) {
		if x.FireID == first.FireID {
			last = x
		}
	}
	if last.Partition != recs[0].Partition || last.Offset != recs[0].Offset {
		t.Errorf("last execution of the retried fire %+v does not point at its event", last)
	}
	var actions []string
	audits := kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, h.brokers, h.topics.Audit))
	// Each engine audits under its own node name, on its own partition.
	slices.SortStableFunc(audits, func(a, b record.Audit) int { return cmp.Compare(a.At, b.At) })
	for _, a := range audits {
		if a.Object == minutely.Key() && a.Action != record.ActionTaskCreated {
			actions = append(actions, a.Action+" "+a.Outcome+" "+strconv.Quote(a.Detail))
		}
	}
	want := []string{
		record.ActionTaskFireRefused + " failed",
		record.ActionTaskFireRefused + " failed",
		record.ActionTaskFireRetried + " ok",
	}
	if len(actions) != len(want) {
		t.Fatalf("audit of the task: %q, want %q", actions, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(actions[i], w) {
			t.Errorf("audit event %d: %s, want %s …", i, actions[i], w)
		}
	}
	if !strings.Contains(actions[2], "fired on attempt 3") || !strings.Contains(actions[1], kerr.PolicyViolation.Message) {
		t.Errorf("audit details: %q", actions)
	}
	if got := refused.seen(); !slices.Equal(got, []string{kerr.PolicyViolation.Message, kerr.PolicyViolation.Message}) {
		t.Errorf("refusals counted %v", got)
	}
}

// TestClusterFaultsAreNotTheTasks: a fired event refused for a reason of
// the cluster is no task's fault: the transaction waits and is written
// again, and the occurrence fires once, neither FAILED nor retried by the
// task's policy.
func TestClusterFaultsAreNotTheTasks(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *kerr.Error
		n    int
	}{
		{"a timed-out write, retried by the client", kerr.RequestTimedOut, 2},
		{"a corrupt request, the transaction aborted and written again", kerr.CorruptMessage, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := faultCluster(t)
			h := newHarnessOn(t, c.ListenAddrs())
			due := h.clock.Now().Add(time.Second)
			jobs := h.watch("jobs")
			refused := &refusals{}
			e := h.startWith(func(c *Config) { c.OnRefused = refused.onRefused })
			h.send(oneShot("once", due))
			kafkatest.Eventually(t, 30*time.Second, "the task held", func() bool { return e.ActiveTasks() == 1 })
			refuseProduce(c, "jobs", tc.err, tc.n)
			h.advanceTo(due)
			h.waitFired(jobs, 1)
			e.stop()
			if got := occurrences(t, kafkatest.Drain(t, h.brokers, "jobs"))["once"]; !slices.Equal(got, []int64{due.UnixMilli()}) {
				t.Errorf("fired at %v, want once at %d", got, due.UnixMilli())
			}
			if got := refused.seen(); len(got) != 0 {
				t.Errorf("cluster faults counted as refused fires: %v", got)
			}
			for _, s := range kafkatest.Decode[record.Status](t, kafkatest.Drain(t, h.brokers, h.topics.Status)) {
				t.Errorf("status %+v written for a fire the cluster held up", s)
			}
		})
	}
}

// TestRefusedTriggerIsNotRetried: a fire asked for by hand (TRIGGER) that
// the brokers refuse is recorded FAILED and audited, and that is all: it
// is no occurrence of the schedule, so the policy neither retries it nor
// pauses the task, and it is not counted as a fire.
func TestRefusedTriggerIsNotRetried(t *testing.T) {
	c := faultCluster(t)
	h := newHarnessOn(t, c.ListenAddrs())
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	refuseProduce(c, "jobs", kerr.MessageTooLarge, 1)
	refused := &refusals{}
	e := h.startWith(func(c *Config) { c.OnRefused = refused.onRefused })
	daily := every("daily", t0.Add(time.Hour), task.Days, 1)
	h.send(daily, task.Definition{Host: daily.Host, Name: daily.Name, Action: task.Trigger})
	kafkatest.Eventually(t, 30*time.Second, "the refused trigger", func() bool { return len(refused.seen()) == 1 })
	h.advanceTo(t0.Add(time.Hour))
	h.waitFired(jobs, 1)
	h.waitIdle()
	if got := e.PausedByFaultPolicy(); got != 0 {
		t.Errorf("%d tasks paused by a refused trigger", got)
	}
	e.stop()
	if got := occurrences(t, kafkatest.Drain(t, h.brokers, "jobs"))["daily"]; !slices.Equal(got, []int64{t0.Add(time.Hour).UnixMilli()}) {
		t.Errorf("fired at %v, want the scheduled occurrence only", got)
	}
	failed := kafkatest.Decode[record.Status](t, kafkatest.Drain(t, h.brokers, h.topics.Status))
	if len(failed) != 1 || failed[0].Status != record.StatusFailed || !strings.Contains(failed[0].Message, kerr.MessageTooLarge.Message) {
		t.Errorf("statuses %+v, want the trigger FAILED with the brokers' answer", failed)
	}
	var last record.State
	for _, r := range kafkatest.Drain(t, h.brokers, h.topics.State) {
		if string(r.Key) == daily.Key() && r.Value != nil {
			if err := json.Unmarshal(r.Value, &last); err != nil {
				t.Fatal(err)
			}
		}
	}
	if last.FireCount != 1 || last.Fault != nil || last.Definition.Paused() {
		t.Errorf("state after the refused trigger and one fire: %d fires, fault %+v, paused %v; want 1 fire and no fault",
			last.FireCount, last.Fault, last.Definition.Paused())
	}
}

func TestFaultPolicyDefaultsAndChecks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  FaultPolicy
		want    FaultPolicy
		waits   []time.Duration // after refusals 1, 2, …
		wantErr string
	}{
		{name: "defaults", want: FaultPolicy{Attempts: 5, FirstRetry: time.Second, MaxRetry: time.Minute},
			waits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{name: "capped", policy: FaultPolicy{Attempts: 9, FirstRetry: 10 * time.Second, MaxRetry: 30 * time.Second},
			want:  FaultPolicy{Attempts: 9, FirstRetry: 10 * time.Second, MaxRetry: 30 * time.Second},
			waits: []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, 30 * time.Second}},
		{name: "negative attempts", policy: FaultPolicy{Attempts: -1}, wantErr: "attempts: -1 is negative"},
		{name: "negative first retry", policy: FaultPolicy{FirstRetry: -time.Second}, wantErr: "first_retry: -1s is negative"},
		{name: "max below first", policy: FaultPolicy{FirstRetry: 2 * time.Minute}, wantErr: "max_retry: 1m0s is below first_retry 2m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(Config{Targets: kafka.NewTargetTopics(nil, 1, -1, false), Refused: tc.policy}, slog.New(slog.DiscardHandler))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New: %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := e.cfg.Refused; got != tc.want {
				t.Errorf("policy %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.waits {
				if got := e.cfg.Refused.wait(i + 1); got != w {
					t.Errorf("wait after refusal %d: %s, want %s", i+1, got, w)
				}
			}
		})
	}
}

// TestRefusedFireOfAMissingTopicFiresOnceItIsCreated: with topic creation
// off, a task's target topic does not exist; the engine asks the brokers
// again before each attempt, so the occurrence fires as soon as an
// administrator creates the topic, not when a remembered answer expires.
func TestRefusedFireOfAMissingTopicFiresOnceItIsCreated(t *testing.T) {
	h := newHarness(t)
	// The brokers' answers are not kept beyond a test's real time.
	cl := kafkatest.Client(t, h.brokers, kgo.MetadataMinAge(10*time.Millisecond))
	h.targets = kafka.NewTargetTopics(cl, partitions, -1, false)
	due := h.clock.Now().Add(time.Second)
	refused := &refusals{}
	e := h.startWith(func(c *Config) { c.OnRefused = refused.onRefused })
	late := oneShot("late", due)
	late.Topic = "created-later"
	h.send(late)
	kafkatest.Eventually(t, 30*time.Second, "the task held", func() bool { return e.ActiveTasks() == 1 })
	h.advanceTo(due)
	kafkatest.Eventually(t, 30*time.Second, "the first refusal", func() bool { return len(refused.seen()) == 1 })
	if resp, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, -1, nil, late.Topic); err != nil || resp.Err != nil {
		t.Fatal(err, resp.Err)
	}
	created := kafkatest.Collect(t, h.brokers, late.Topic)
	kafkatest.Eventually(t, 30*time.Second, "the brokers to list the new topic", func() bool {
		d, err := kadm.NewClient(cl).ListTopics(context.Background(), late.Topic)
		return err == nil && d[late.Topic].Err == nil
	})
	h.advanceTo(due.Add(time.Second))
	h.waitFired(created, 1)
	e.stop()
	if got := refused.seen(); !slices.Equal(got, []string{"TARGET_UNAVAILABLE"}) {
		t.Errorf("refusals counted %v, want one of an unusable target", got)
	}
	if got := occurrences(t, created.Records())["late"]; !slices.Equal(got, []int64{due.UnixMilli()}) {
		t.Errorf("fired at %v, want once at %d", got, due.UnixMilli())
	}
}
