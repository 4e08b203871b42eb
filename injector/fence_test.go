package injector

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// TestFenceEndsWhatAKilledRunLeftOpen: a run of the injector killed
// between a record and its commit leaves its transaction open, and a
// read_committed reader of that partition reads nothing past it, what
// others commit after it included, until the brokers abort it: after the
// injector's timeout of minutes, or at once when the next run fences it.
func TestFenceEndsWhatAKilledRunLeftOpen(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	in, topics := injectorOn(t, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	on0 := kgo.RecordPartitioner(kgo.ManualPartitioner())

	// The killed run: its record is flushed, its transaction never ends.
	killed := kafkatest.Client(t, brokers, append([]kgo.Opt{on0, kgo.TransactionTimeout(txnTimeout)}, kafka.TxnOpts("test-injector")...)...)
	if err := killed.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := killed.ProduceSync(ctx, &kgo.Record{Topic: topics.Audit, Partition: 0, Value: []byte("left open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Another writer commits after it on the same partition.
	other := kafkatest.Client(t, brokers, append([]kgo.Opt{on0}, kafka.TxnOpts("other")...)...)
	err = kafka.Transact(ctx, other, func(produce func(*kgo.Record)) error {
		produce(&kgo.Record{Topic: topics.Audit, Partition: 0, Value: []byte("committed after")})
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stable := func() int64 {
		t.Helper()
		offs, err := kadm.NewClient(kafkatest.Client(t, brokers)).ListCommittedOffsets(ctx, topics.Audit)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup(topics.Audit, 0)
		return o.Offset
	}
	if got := stable(); got != 0 {
		t.Fatalf("before the fence the partition is readable up to offset %d, want 0: the open transaction holds it", got)
	}

	if err := in.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range kafkatest.Drain(t, brokers, topics.Audit) {
		got = append(got, string(r.Value))
	}
	if len(got) != 1 || got[0] != "committed after" {
		t.Errorf("after the fence read_committed reads %q, want only the record committed after", got)
	}
	// The fenced injector itself goes on.
	path := writeFile(t, "after.csv", "host,name,topic,timeUnit,time\nacme,a,jobs,MINUTES,1\n")
	if res, err := in.Inject(ctx, File{Path: path}, converters.CSV{}, converters.Options{}); err != nil || res.Outcome != Injected {
		t.Errorf("a file after the fence: %+v, %v", res, err)
	}
}
