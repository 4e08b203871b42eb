package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
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
}

func startChaosWorker(t *testing.T, brokers []string, topics record.Topics) *chaosWorker {
	cl := kafkatest.Client(t, brokers, kgo.ConsumeTopics(chainTopic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithCancel(context.Background())
	w := &chaosWorker{cancel: cancel, done: make(chan struct{})}
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
				s := &kgo.Record{Topic: topics.Status, Key: []byte(f.FireID), Value: v}
				cl.Produce(ctx, s, nil)
				if f.ScheduledAt/1000%5 == 0 {
					cl.Produce(ctx, s, nil)
				}
				w.mu.Lock()
				w.reported++
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
func checkChains(t *testing.T, brokers []string, start, end time.Time) (runs, lost, dups int) {
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
				lost++
			case n > 1:
				dups += n - 1
			}
		}
	}
	return runs, lost, dups
}
