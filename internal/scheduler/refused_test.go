package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

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
