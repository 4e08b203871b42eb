package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// TestOutcomeRecordsTellEveryFollowerOnce: a predecessor of 4,500
// followers tells them in a few records per input partition (more than
// outcomeFollowers on each), every follower fires once; and an outcome
// record placed on a partition that holds only some of the followers it
// names (as a writer that counted the partitions otherwise would place it)
// sends the others on to their own partitions.
func TestOutcomeRecordsTellEveryFollowerOnce(t *testing.T) {
	const n = 4_500
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	input := h.watch(h.topics.Input)
	h.start()
	defs := []task.Definition{oneShot("root", t0.Add(time.Second))}
	for i := range n {
		defs = append(defs, task.Definition{Host: "acme", Name: fmt.Sprintf("leaf-%d", i), Action: task.Insert, Topic: "jobs", After: []string{"root"}})
	}
	h.sendChained(defs...)
	h.advanceTo(t0.Add(time.Second))
	root := h.waitFor(jobs, "root", 1)
	h.report(root.FireID, record.StatusSuccess)
	h.waitFired(jobs, n+1)
	h.waitIdle()
	got := firedOn(t, jobs).byName
	for i := range n {
		name := fmt.Sprintf("leaf-%d", i)
		if len(got[name]) != 1 || !slices.Equal(got[name][0].After, []string{root.FireID}) {
			t.Fatalf("%s fired %+v, want once after %s", name, got[name], root.FireID)
		}
	}
	outcomes := 0
	for _, r := range input.Records() {
		for _, hd := range r.Headers {
			if hd.Key == record.HeaderOutcome {
				outcomes++
			}
		}
	}
	if outcomes < partitions || outcomes > n/outcomeFollowers+partitions {
		t.Errorf("%d outcome records for %d followers on %d partitions", outcomes, n, partitions)
	}

	// Two followers of another predecessor, on two partitions, told by
	// one record on the first one's.
	part := kgo.StickyKeyPartitioner(nil).ForTopic(h.topics.Input)
	on := func(key string) int { return part.Partition(&kgo.Record{Key: []byte(key)}, partitions) }
	a, b := "acme/x-0", ""
	for i := 1; b == ""; i++ {
		if k := fmt.Sprintf("acme/x-%d", i); on(k) != on(a) {
			b = k
		}
	}
	h.sendChained(task.Definition{Host: "acme", Name: "other", Action: task.Insert, Topic: "jobs", Start: task.Ptr(t0.Add(time.Hour).UnixMilli())},
		task.Definition{Host: "acme", Name: a[len("acme/"):], Action: task.Insert, Topic: "jobs", After: []string{"other"}},
		task.Definition{Host: "acme", Name: b[len("acme/"):], Action: task.Insert, Topic: "jobs", After: []string{"other"}})
	h.waitIdle()
	v, _ := json.Marshal(record.Outcome{Pred: "acme/other", Run: "acme/other@1", Fire: "acme/other@1", Status: record.StatusSuccess,
		At: h.clock.Now().UnixMilli(), Followers: []string{a, b}})
	cl := kafkatest.Client(t, h.brokers)
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: h.topics.Input, Key: []byte(a), Value: v,
		Headers: []kgo.RecordHeader{{Key: record.HeaderOutcome, Value: []byte(record.StatusSuccess)}}}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	h.waitFired(jobs, n+3)
	h.waitIdle()
	got = firedOn(t, jobs).byName
	for _, k := range []string{a, b} {
		name := k[len("acme/"):]
		if len(got[name]) != 1 || !slices.Equal(got[name][0].After, []string{"acme/other@1"}) {
			t.Errorf("%s fired %+v, want once after acme/other@1", name, got[name])
		}
	}
}
