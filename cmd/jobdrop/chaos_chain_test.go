package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	commandwriter "github.com/jobdrop/jobdrop/internal/command"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

var chaosChains = flag.Int("chaos-chains", 40, "two-step chains whose first step fires every second, in the chaos run")

// chainTopic is where the chaos run's chains fire.
const chainTopic = "chaos-chain"

// chainCommands are the commands of the chaos run's chains, links first
// as every writer sends them: c%04d-1 fires every second from start,
// c%04d-2 follows it.
func chainCommands(topics record.Topics, start time.Time) []*kgo.Record {
	var defs []task.Definition
	for i := range *chaosChains {
		first := fmt.Sprintf("c%04d-1", i)
		defs = append(defs,
			task.Definition{Host: "chaos", Name: first, Action: task.Insert, Topic: chainTopic,
				Start: task.Ptr(start.UnixMilli()), Frequency: &task.Frequency{TimeUnit: task.Seconds, Time: 1}, Misfire: task.FireAll},
			task.Definition{Host: "chaos", Name: fmt.Sprintf("c%04d-2", i), Action: task.Insert, Topic: chainTopic,
				After: []string{first}})
	}
	var recs []*kgo.Record
	for i := range defs {
		recs = append(recs, commandwriter.LinkRecords(topics.Input, &defs[i])...)
	}
	for i := range defs {
		recs = append(recs, commandwriter.Record(topics.Input, &defs[i], record.Source{Actor: "chaos"}, 0, time.Now()))
	}
	return recs
}

// chaosWorker is the worker of the chaos run's chains: it reads their
// topic read_committed and reports SUCCESS for every fire of a first
// step, some of them twice, as a worker that retries its report does.
type chaosWorker struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	reported int
	// seen holds the first steps' fire ids the worker read; failed, the
	// reports the broker refused, by fire id.
	seen   map[string]bool
	failed map[string]error
}

func startChaosWorker(t *testing.T, brokers []string, topics record.Topics) *chaosWorker {
	cl := kafkatest.Client(t, brokers, kgo.ConsumeTopics(chainTopic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithCancel(context.Background())
	w := &chaosWorker{cancel: cancel, done: make(chan struct{}), seen: map[string]bool{}, failed: map[string]error{}}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				var f record.Fired
				if json.Unmarshal(r.Value, &f) != nil || len(f.Name) < 2 || f.Name[len(f.Name)-2:] != "-1" {
					return
				}
				v, _ := json.Marshal(record.Status{FireID: f.FireID, Status: record.StatusSuccess, Worker: "chaos", At: time.Now().UnixMilli()})
				// Each report is a record of its own: the client
				// owns a record it was given until its promise.
				report := func() {
					cl.Produce(ctx, &kgo.Record{Topic: topics.Status, Key: []byte(f.FireID), Value: v}, func(_ *kgo.Record, err error) {
						if err != nil && ctx.Err() == nil {
							w.mu.Lock()
							w.failed[f.FireID] = err
							w.mu.Unlock()
						}
					})
				}
				report()
				if f.ScheduledAt/1000%5 == 0 {
					report()
				}
				w.mu.Lock()
				w.reported++
				w.seen[f.FireID] = true
				w.mu.Unlock()
			})
		}
	}()
	return w
}

func (w *chaosWorker) stop() { w.cancel(); <-w.done }

// chainsDone counts the second steps fired for runs of the first steps
// scheduled up to end, seen by c.
func chainsDone(t *testing.T, c *kafkatest.Collector, end time.Time) int {
	firsts := map[string]bool{}
	done := map[string]bool{}
	for _, f := range kafkatest.Decode[record.Fired](t, c.Records()) {
		if len(f.After) == 0 {
			if f.ScheduledAt <= end.UnixMilli() {
				firsts[f.FireID] = true
			}
			continue
		}
		done[f.After[0]] = true
	}
	n := 0
	for id := range firsts {
		if done[id] {
			n++
		}
	}
	return n
}

// checkChains reads the chains' topic and counts, for every run of a
// first step scheduled up to end, the fires of its second step: lost
// (none) and duplicated (more than one, or a fire id twice).
func checkChains(t *testing.T, brokers []string, start, end time.Time, w *chaosWorker) (runs, lost, dups int) {
	events := kafkatest.Decode[record.Fired](t, kafkatest.Drain(t, brokers, chainTopic))
	ids := map[string]int{}
	released := map[string]int{} // a first step's run → second steps it released
	firsts := map[string][]int64{}
	for _, f := range events {
		ids[f.FireID]++
		if len(f.After) == 0 {
			firsts[f.Name] = append(firsts[f.Name], f.ScheduledAt)
			continue
		}
		released[f.After[0]]++
	}
	for _, n := range ids {
		dups += n - 1
	}
	perTask := int(end.Sub(start)/time.Second) + 1
	for i := range *chaosChains {
		name := fmt.Sprintf("c%04d-1", i)
		for k := range perTask {
			run := record.FireID("chaos", name, start.Add(time.Duration(k)*time.Second).UnixMilli())
			runs++
			switch n := released[run]; {
			case n == 0:
				if lost < 5 {
					t.Logf("no second step for run %s of %s (scheduled %s; the worker read it: %t, its report refused: %v): %s", run, name,
						start.Add(time.Duration(k)*time.Second).Format("15:04:05.000"), w.seen[run], w.failed[run], whereChainStopped(t, brokers, run))
				}
				lost++
			case n > 1:
				dups += n - 1
			}
		}
	}
	return runs, lost, dups
}

// whereChainStopped says what the topics hold of run, a first step's run
// whose second step never fired: its statuses, the outcome records that
// told its follower, its run record, the audit events about it and its
// event.
func whereChainStopped(t *testing.T, brokers []string, run string) string {
	topics := record.Topics{}.WithDefaults()
	var b strings.Builder
	for _, r := range kafkatest.Drain(t, brokers, topics.Status) {
		if string(r.Key) == run {
			fmt.Fprintf(&b, "\n  status p%d@%d %s", r.Partition, r.Offset, r.Value)
		}
	}
	for _, r := range kafkatest.Drain(t, brokers, topics.Input) {
		if bytes.Contains(r.Value, []byte(run)) {
			fmt.Fprintf(&b, "\n  input p%d@%d key %s: %s", r.Partition, r.Offset, r.Key, r.Value)
		}
	}
	for _, r := range kafkatest.Drain(t, brokers, topics.State) {
		if bytes.Contains(r.Key, []byte(run)) || bytes.Contains(r.Value, []byte(run)) {
			fmt.Fprintf(&b, "\n  state p%d@%d key %q: %.300s", r.Partition, r.Offset, r.Key, r.Value)
		}
	}
	for _, r := range kafkatest.Drain(t, brokers, topics.Audit) {
		if bytes.Contains(r.Value, []byte(run)) {
			fmt.Fprintf(&b, "\n  audit %s", r.Value)
		}
	}
	for _, r := range kafkatest.Drain(t, brokers, chainTopic) {
		if bytes.Contains(r.Value, []byte(run)) {
			fmt.Fprintf(&b, "\n  %s (read_committed) p%d@%d: %.200s", chainTopic, r.Partition, r.Offset, r.Value)
		}
	}
	if b.Len() == 0 {
		return "nothing on any topic"
	}
	return b.String()
}
