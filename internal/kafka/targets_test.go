package kafka

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// TestTargetTopicsAskOnceForRunnersMeetingATopicTogether: the runners of
// eight partitions meeting a target topic at once, as at a burst's first
// fire, wait for one answer from the brokers rather than ask one after
// another.
func TestTargetTopicsAskOnceForRunnersMeetingATopicTogether(t *testing.T) {
	const runners = 8
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "reports"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// The brokers hold each question about the topic until all the
	// runners have asked, or a second has passed: asked once, the
	// one question waits that second.
	var asked atomic.Int32
	all := make(chan struct{})
	c.ControlKey(kmsg.Metadata.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		for _, rt := range req.(*kmsg.MetadataRequest).Topics {
			if rt.Topic == nil || *rt.Topic != "reports" {
				continue
			}
			if asked.Add(1) == runners {
				close(all)
			}
			c.SleepControl(func() {
				select {
				case <-all:
				case <-time.After(time.Second):
				}
			})
			break
		}
		return nil, nil, false
	})
	targets := NewTargetTopics(kafkatest.Client(t, c.ListenAddrs()), 1, -1, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, runners)
	for range runners {
		wg.Go(func() { errs <- targets.Ensure(ctx, "reports") })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("ensure reports: %v", err)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the brokers were asked about reports %d times by %d runners at once, want once", n, runners)
	}
}
