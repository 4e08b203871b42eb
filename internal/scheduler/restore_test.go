package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// TestRestoreNeverReadsPastTheLastStableOffset starts an engine while a
// transaction of another producer is open on a state partition: one that
// would add a task and delete another. A restore reads the partition up
// to the ownership marker it commits, and that marker lands after the
// open transaction's records, past the partition's last stable offset:
// the restore must wait there, apply the transaction's records only if it
// commits, and never apply them if it aborts.
func TestRestoreNeverReadsPastTheLastStableOffset(t *testing.T) {
	for _, tc := range []struct {
		name   string
		commit bool
	}{
		{"the transaction aborts", false},
		{"the transaction commits", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			t0 := h.clock.Now()
			jobs := h.watch("jobs")
			kept := every("kept", t0.Add(time.Hour), task.Hours, 1)
			a := h.start()
			h.send(kept)
			kafkatest.Eventually(t, 30*time.Second, "the task in the engine", func() bool { return a.ActiveTasks() == 1 })
			a.stop()

			// Another producer opens a transaction on the task's state
			// partition: a task due at once, and kept's tombstone.
			p := int32(kgo.StickyKeyPartitioner(nil).ForTopic(h.topics.Input).Partition(&kgo.Record{Key: []byte(kept.Key())}, partitions))
			ghost := oneShot("ghost", t0)
			st := record.State{Definition: ghost, Anchor: t0.UnixMilli(), NextFire: t0.UnixMilli()}
			other := kafkatest.Client(t, h.brokers, kgo.TransactionalID("not-the-engine"),
				kgo.RecordPartitioner(kgo.ManualPartitioner()))
			ctx := context.Background()
			if err := other.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for _, r := range []*kgo.Record{
				{Topic: h.topics.State, Partition: p, Key: []byte(ghost.Key()), Value: encodeState(st, nil)},
				{Topic: h.topics.State, Partition: p, Key: []byte(kept.Key())},
			} {
				if err := other.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			adm := kadm.NewClient(kafkatest.Client(t, h.brokers))
			end := func() (high, stable int64) {
				ends, err := adm.ListEndOffsets(ctx, h.topics.State)
				if err != nil {
					t.Fatal(err)
				}
				lsos, err := adm.ListCommittedOffsets(ctx, h.topics.State)
				if err != nil {
					t.Fatal(err)
				}
				e, _ := ends.Lookup(h.topics.State, p)
				l, _ := lsos.Lookup(h.topics.State, p)
				return e.Offset, l.Offset
			}
			opened, _ := end()

			// The engine fences and commits its marker after the open
			// transaction's records: its restore of p stops at the last
			// stable offset, before them, and waits.
			b := h.start()
			kafkatest.Eventually(t, 30*time.Second, "the engine's ownership marker after the open transaction", func() bool {
				high, _ := end()
				return high > opened
			})
			if high, stable := end(); stable >= opened {
				t.Fatalf("partition %d: last stable offset %d, end %d: the transaction is not open", p, stable, high)
			}
			if b.ActiveTasks() != 0 {
				t.Fatalf("the engine holds %d tasks before partition %d could be restored", b.ActiveTasks(), p)
			}

			if err := other.EndTransaction(ctx, kgo.TransactionEndTry(tc.commit)); err != nil {
				t.Fatal(err)
			}
			if tc.commit {
				// Committed before the marker: part of the state. The
				// ghost is due: it fires and ends; kept is deleted.
				h.waitFired(jobs, 1)
				h.waitIdle()
				if n := b.ActiveTasks(); n != 0 {
					t.Errorf("the engine holds %d tasks; want none: kept deleted, ghost fired", n)
				}
			} else {
				kafkatest.Eventually(t, 30*time.Second, fmt.Sprintf("partition %d restored", p), func() bool { return b.ActiveTasks() == 1 })
				h.waitIdle() // the ghost, had it been restored, would have fired by now
				if n := b.ActiveTasks(); n != 1 {
					t.Errorf("the engine holds %d tasks; want kept alone", n)
				}
			}
			b.stop()
			want := 0
			if tc.commit {
				want = 1
			}
			if fired := occurrences(t, kafkatest.Drain(t, h.brokers, "jobs")); len(fired["ghost"]) != want {
				t.Errorf("ghost fired %d times, want %d", len(fired["ghost"]), want)
			}
		})
	}
}
