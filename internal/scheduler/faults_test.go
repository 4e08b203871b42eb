package scheduler

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
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
