package kafkatest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Cluster starts a one-broker cluster on a free port, closed with the test.
func Cluster(t testing.TB) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// ClosedAddr is a loopback address where nothing listens: a broker that
// cannot be reached.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Client returns a client of brokers, closed with the test. Its fetch
// sessions are off, as jobdrop's own clients' are (kafka.Config.Options).
func Client(t testing.TB, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.DisableFetchSessions()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

const sentinel = "kafkatest-sentinel"

// Drain returns every committed record of topic, in partition order. It
// knows it has reached the end when it reads back a marker it writes to
// each partition, so records of transactions committed before the call
// are all included.
func Drain(t testing.TB, brokers []string, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(Client(t, brokers))
	details, err := adm.ListTopics(ctx, topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("drain %s: %v %v", topic, err, details[topic].Err)
	}
	parts := details[topic].Partitions.Numbers()
	prod := Client(t, brokers, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, p := range parts {
		rec := &kgo.Record{Topic: topic, Partition: p, Headers: []kgo.RecordHeader{{Key: sentinel}}}
		if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("drain %s: %v", topic, err)
		}
	}
	cons := Client(t, brokers, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []*kgo.Record
	pending := len(parts)
	for pending > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("drain %s: %d partitions not read to the end", topic, pending)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Headers) == 1 && r.Headers[0].Key == sentinel {
				pending--
				return
			}
			out = append(out, r)
		})
	}
	return out
}

// EachCommitted calls fn with every committed record of topic, partition
// by partition, up to the last stable offsets at the call: what a
// read_committed consumer reads of the transactions committed so far. It
// holds one fetch in memory, so it reads topics of any size.
func EachCommitted(t testing.TB, brokers []string, topic string, fn func(*kgo.Record)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm := kadm.NewClient(Client(t, brokers))
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	pending := map[int32]int64{}
	start := map[string]map[int32]kgo.Offset{topic: {}}
	ends.Each(func(o kadm.ListedOffset) {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			return // no topic yet: nothing committed
		}
		if o.Err != nil {
			t.Fatalf("read %s/%d: %v", topic, o.Partition, o.Err)
		}
		if s, ok := starts.Lookup(topic, o.Partition); ok && s.Err == nil && s.Offset >= o.Offset {
			return // no record left to read
		}
		if o.Offset > 0 {
			pending[o.Partition] = o.Offset
			start[topic][o.Partition] = kgo.NewOffset().At(0)
		}
	})
	if len(pending) == 0 {
		return
	}
	// Transaction markers come through, so that a partition's position
	// reaches its last stable offset.
	cons := Client(t, brokers, kgo.ConsumePartitions(start), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cons.Close()
	for len(pending) > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: partitions %v not read to their end", topic, pending)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("read %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := pending[r.Partition]
			if !ok {
				return
			}
			if r.Offset+1 >= end {
				delete(pending, r.Partition)
			}
			if r.Offset < end && !r.Attrs.IsControl() {
				fn(r)
			}
		})
	}
}

// Decode unmarshals every record's value into a T.
func Decode[T any](t testing.TB, recs []*kgo.Record) []T {
	t.Helper()
	out := make([]T, 0, len(recs))
	for _, r := range recs {
		var v T
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("decode %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
		}
		out = append(out, v)
	}
	return out
}

// Eventually polls cond until it holds or the deadline passes.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Describe formats a record for failure messages.
func Describe(r *kgo.Record) string {
	return fmt.Sprintf("%s/%d@%d key=%s", r.Topic, r.Partition, r.Offset, r.Key)
}

// Collector gathers what a downstream read_committed consumer of a topic
// sees, from its start, until the test ends.
type Collector struct {
	mu   sync.Mutex
	recs []*kgo.Record
}

// Collect starts collecting topic; opts add to the consumer's options
// (TLS and SASL for a secured cluster).
func Collect(t testing.TB, brokers []string, topic string, opts ...kgo.Opt) *Collector {
	cl := Client(t, brokers, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	c := &Collector{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			c.mu.Lock()
			c.recs = append(c.recs, fs.Records()...)
			c.mu.Unlock()
		}
	}()
	return c
}

// Count is how many records were seen so far.
func (c *Collector) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.recs)
}

// Records returns the records seen so far.
func (c *Collector) Records() []*kgo.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recs)
}
