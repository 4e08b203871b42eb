package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

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
