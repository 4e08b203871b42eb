package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/retry"
)

// consumer builds the Kafka client, starting every partition at the
// offset stored with the data, or at its start when none is stored.
//
// Partitions are learnt from the brokers once, here: a topic that exists
// is read partition by partition from its stored offsets; a topic that
// does not exist yet is read whole from its start once it appears.
// Partitions added to an existing topic are picked up at the next Run.
func (r *Recorder) consumer(ctx context.Context) (*kgo.Client, error) {
	stored, err := r.st.Offsets(ctx)
	if err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	details, err := r.partitions(ctx)
	if err != nil {
		return nil, err
	}
	partitions := make(map[string]map[int32]kgo.Offset)
	var whole []string
	for _, topic := range r.topics {
		d, ok := details[topic]
		if !ok || len(d.Partitions) == 0 {
			whole = append(whole, topic)
			continue
		}
		partitions[topic] = make(map[int32]kgo.Offset, len(d.Partitions))
		for p := range d.Partitions {
			// An exact offset, even 0 for "from the start", lets every
			// partition join the first fetch: AtStart would first need
			// a ListOffsets, and the partition would then wait for the
			// others' fetch to return (up to its max wait). Should 0 be
			// gone already, the reset offset below applies.
			partitions[topic][p] = kgo.NewOffset().At(stored[topic][p])
		}
	}
	opts := append([]kgo.Opt{}, r.cfg.ClientOpts...)
	opts = append(opts,
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers come through so the stored offsets move
		// past them and reach the last stable offset: WaitAudit relies
		// on that to tell when a partition is caught up.
		kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(fetchBytes),
	)
	if len(partitions) > 0 {
		opts = append(opts, kgo.ConsumePartitions(partitions))
	}
	if len(whole) > 0 {
		r.log.Info("topics not found yet; will read them from the start once created", "topics", whole)
		opts = append(opts, kgo.ConsumeTopics(whole...))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("recorder: new kafka client: %w", err)
	}
	return cl, nil
}

// fetchBytes bounds one fetch of the recorder's consumer. What it has
// fetched and not stored yet is memory, and it is behind whenever Kafka
// takes records faster than SQLite (a flood of files, a rebuild): with
// kgo's default of 50 MiB a fetch, decompressed to several times that,
// the recorder held a few hundred MiB. 4 MiB is some ten thousand
// records, more than one SQLite transaction takes.
const fetchBytes = 4 << 20

// partitions asks the brokers for the partitions of the recorder's
// topics, retrying while the brokers cannot be reached.
func (r *Recorder) partitions(ctx context.Context) (kadm.TopicDetails, error) {
	cl, err := kgo.NewClient(r.cfg.ClientOpts...)
	if err != nil {
		return nil, fmt.Errorf("recorder: new kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	out := make(kadm.TopicDetails)
	err = retry.Do(ctx, retry.Policy{Backoff: retry.Backoff{First: 250 * time.Millisecond, Max: 10 * time.Second},
		Log: r.log, Level: slog.LevelWarn, Msg: "cannot reach the brokers; retrying"}, func() error {
		md, err := adm.Metadata(ctx, r.topics...)
		if err != nil {
			return err
		}
		for topic, d := range md.Topics {
			switch {
			case d.Err == nil:
				out[topic] = d
			case errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			default:
				return retry.Permanent(fmt.Errorf("recorder: metadata of topic %s: %w", topic, d.Err))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
