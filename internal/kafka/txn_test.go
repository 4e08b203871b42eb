package kafka

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// TestCommitTheClientTurnsIntoAnAbortIsAnError: when kgo ends a
// transaction asked to commit with an abort, and says so only in its log,
// Transact returns ErrEndedWithAbort, and a read_committed consumer finds
// nothing of that transaction. kgo takes that branch whenever it holds no
// partition as added to the transaction; the test brings it there by
// having the broker refuse the records of a transaction and committing it
// anyway, by hand.
func TestCommitTheClientTurnsIntoAnAbortIsAnError(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	cl := kafkatest.Client(t, brokers, append([]kgo.Opt{kgo.RecordRetries(0)}, TxnOpts("watched")...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	one := func(v string) func(func(*kgo.Record)) error {
		return func(produce func(*kgo.Record)) error {
			produce(&kgo.Record{Topic: "jobs", Value: []byte(v)})
			return nil
		}
	}
	// A first transaction commits: the client learns what the broker
	// supports, as every long-lived client has.
	if err := Transact(ctx, cl, one("committed"), nil); err != nil {
		t.Fatal(err)
	}

	// The broker refuses every record of the next one.
	var refuse atomic.Bool
	refuse.Store(true)
	c.ControlKey(kmsg.Produce.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !refuse.Load() {
			return nil, nil, false
		}
		pr := req.(*kmsg.ProduceRequest)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range pr.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	watch := cl.OptValue(kgo.WithLogger).(*endWatch)
	before := watch.count()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var refused error
	cl.Produce(ctx, &kgo.Record{Topic: "jobs", Value: []byte("refused")}, func(_ *kgo.Record, err error) { refused = err })
	if err := cl.Flush(ctx); err != nil || refused == nil {
		t.Fatalf("flush %v, record error %v; want the record refused", err, refused)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("EndTransaction: %v; want the abort kgo does in silence", err)
	}
	if watch.count() != before+1 {
		t.Fatalf("the watch counted %d commits turned into aborts, want 1: kgo no longer logs %q", watch.count()-before, abortNotice)
	}
	refuse.Store(false)
	if err := Transact(ctx, cl, one("next"), nil); err != nil {
		t.Fatalf("the next transaction: %v", err)
	}
	var got []string
	for _, r := range kafkatest.Drain(t, brokers, "jobs") {
		got = append(got, string(r.Value))
	}
	if len(got) != 2 || got[0] != "committed" || got[1] != "next" {
		t.Errorf("read_committed read %q, want committed, next", got)
	}

	// Transact reports such an abort: the notice comes as the client ends
	// the transaction, here before.
	err = Transact(ctx, cl, one("reported"), func() error {
		watch.Log(kgo.LogLevelInfo, abortNotice+" but produces were attempted")
		return nil
	})
	if !errors.Is(err, ErrEndedWithAbort) {
		t.Errorf("Transact: %v, want ErrEndedWithAbort", err)
	}
	// A renewed client takes up the work.
	if cl, err = Renew(cl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := Transact(ctx, cl, one("renewed"), nil); err != nil {
		t.Fatalf("a transaction of the renewed client: %v", err)
	}
	if recs := kafkatest.Drain(t, brokers, "jobs"); string(recs[len(recs)-1].Value) != "renewed" {
		t.Errorf("read_committed read %q last, want renewed", recs[len(recs)-1].Value)
	}
}
