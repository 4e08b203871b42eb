package scheduler

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	segjson "github.com/segmentio/encoding/json"
	"github.com/twmb/franz-go/pkg/kgo"

	cmdrecord "github.com/jobdrop/jobdrop/internal/command"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// chainWorker is a worker outside the engine: it reads the target topic
// "bench" read_committed, reports SUCCESS at once for every event of a
// task its report function picks, and times each event of a chained task
// from the SUCCESS report of the run that released it to its arrival.
type chainWorker struct {
	mu       sync.Mutex
	reported map[string]time.Time // run → when its SUCCESS was written
	late     []time.Duration
	arrived  int
	last     time.Time
	cancel   context.CancelFunc
	done     chan struct{}
}

func startChainWorker(b *testing.B, be *benchEngine, report func(name string) bool) *chainWorker {
	w := &chainWorker{reported: map[string]time.Time{}, done: make(chan struct{})}
	cl, err := kgo.NewClient(kgo.SeedBrokers(be.brokers...), kgo.ConsumeTopics("bench"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() {
		defer close(w.done)
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			arrived := time.Now()
			var statuses []*kgo.Record
			w.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				// What a worker reads of an event: not its data. It
				// decodes as the engine does, so that the worker, on
				// the engine's two cores, takes little from it.
				var f struct {
					Name   string   `json:"name"`
					FireID string   `json:"fireId"`
					After  []string `json:"after"`
				}
				if segjson.Unmarshal(r.Value, &f) != nil {
					return
				}
				if len(f.After) > 0 {
					if at, ok := w.reported[f.After[0]]; ok {
						w.late = append(w.late, arrived.Sub(at))
					}
					w.arrived++
					w.last = arrived
				}
				if report(f.Name) {
					v, _ := json.Marshal(record.Status{FireID: f.FireID, Status: record.StatusSuccess, Worker: "bench", At: time.Now().UnixMilli()})
					statuses = append(statuses, &kgo.Record{Topic: be.topics.Status, Key: []byte(f.FireID), Value: v})
				}
			})
			w.mu.Unlock()
			for _, s := range statuses {
				w.mu.Lock()
				w.reported[string(s.Key)] = time.Now()
				w.mu.Unlock()
				cl.Produce(ctx, s, nil)
			}
		}
	}()
	return w
}

func (w *chainWorker) stop() { w.cancel(); <-w.done }

// wait waits until n chained events arrived.
func (w *chainWorker) wait(b *testing.B, n int, within time.Duration) {
	start := time.Now()
	for {
		w.mu.Lock()
		got := w.arrived
		w.mu.Unlock()
		if got >= n {
			return
		}
		if time.Since(start) > within {
			b.Fatalf("%d of %d chained events after %s", got, n, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reportLateness reports the lateness of the chained events' arrivals:
// p50-ms, p99-ms and max-ms.
func (w *chainWorker) reportLateness(b *testing.B) {
	w.mu.Lock()
	defer w.mu.Unlock()
	reportQuantiles(b, w.late, "", "-ms")
}

// sendChained produces the links of every chained definition, then the
// definitions, as files and the API do.
func (be *benchEngine) sendChained(b *testing.B, defs []task.Definition) {
	var recs []*kgo.Record
	for i := range defs {
		recs = append(recs, cmdrecord.LinkRecords(be.topics.Input, &defs[i])...)
	}
	for i := range defs {
		recs = append(recs, cmdrecord.Record(be.topics.Input, &defs[i], record.Source{Actor: "bench"}, 0, time.Now()))
	}
	be.produce(b, len(recs), func(i int) *kgo.Record { return recs[i] })
}

// BenchmarkChainRelease: one predecessor followed by 10,000 chain-only
// tasks; a worker outside the engine reports the predecessor's SUCCESS,
// and each successor is timed from that report to its fire (fire-p99-ms:
// the commit of its event, as the engine's other benchmarks time a fire)
// and to the event's arrival at the worker, a read-committed consumer
// (p99-ms).
func BenchmarkChainRelease(b *testing.B) {
	const n = 10_000
	for range b.N {
		be := startBenchEngine(b, kafkatest.BrokerProcess(b))
		due := time.Now().Add(5 * time.Second).Truncate(time.Second)
		defs := []task.Definition{{Host: "bench", Name: "root", Action: task.Insert, Topic: "bench", Start: task.Ptr(due.UnixMilli())}}
		for i := range n {
			defs = append(defs, task.Definition{Host: "bench", Name: "leaf-" + strconv.Itoa(i), Action: task.Insert, Topic: "bench",
				After: []string{"root"}, Data: payload(i)})
		}
		be.sendChained(b, defs)
		be.waitActive(b, int64(n+1), 5*time.Minute)
		if time.Now().After(due) {
			b.Fatalf("loading %d tasks took past the root's due time", n)
		}
		w := startChainWorker(b, be, func(name string) bool { return name == "root" })
		w.wait(b, n, 5*time.Minute)
		w.reportLateness(b)
		w.mu.Lock()
		var report time.Time
		for _, at := range w.reported {
			report = at
		}
		b.ReportMetric(float64(n)/w.last.Sub(report).Seconds(), "releases/s")
		w.mu.Unlock()
		// The fires themselves: each commit of a successor's event,
		// from the report (the arrivals above add the worker's fetch).
		be.mu.Lock()
		var fired []time.Duration
		for _, c := range be.commits {
			if c.scheduled != due.UnixMilli() { // not the root's
				fired = append(fired, c.at.Sub(report))
			}
		}
		be.mu.Unlock()
		if len(fired) != n {
			b.Fatalf("%d successors' fires committed, want %d", len(fired), n)
		}
		reportQuantiles(b, fired, "fire-", "-ms")
		w.stop()
		be.stop()
	}
}

// BenchmarkChainSteady: 1,000 two-step chains, each predecessor firing
// every second, its worker reporting SUCCESS at once, for 20 seconds;
// reports the successors' rate and their lateness from the report.
func BenchmarkChainSteady(b *testing.B) {
	const pairs, seconds = 1_000, 20
	for range b.N {
		be := startBenchEngine(b, kafkatest.BrokerProcess(b))
		start := time.Now().Add(5 * time.Second).Truncate(time.Second)
		var defs []task.Definition
		for i := range pairs {
			a := "step1-" + strconv.Itoa(i)
			defs = append(defs,
				task.Definition{Host: "bench", Name: a, Action: task.Insert, Topic: "bench",
					Start: task.Ptr(start.UnixMilli() + int64(i%1000)), Frequency: &task.Frequency{TimeUnit: task.Seconds, Time: 1},
					End: task.Ptr(start.Add(seconds*time.Second).UnixMilli() - 1), Data: payload(i)},
				task.Definition{Host: "bench", Name: "step2-" + strconv.Itoa(i), Action: task.Insert, Topic: "bench",
					After: []string{a}, Data: payload(i)})
		}
		be.sendChained(b, defs)
		be.waitActive(b, 2*pairs, time.Minute)
		w := startChainWorker(b, be, func(name string) bool { return strings.HasPrefix(name, "step1-") })
		w.wait(b, pairs*seconds, 2*time.Minute)
		w.reportLateness(b)
		w.mu.Lock()
		b.ReportMetric(float64(w.arrived)/w.last.Sub(start).Seconds(), "chains/s")
		w.mu.Unlock()
		w.stop()
		be.stop()
	}
}
