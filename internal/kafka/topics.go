package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
)

// EnsureTopics creates jobdrop's topics where they are missing (the state
// topic compacted) and checks that the input and state topics have the same
// partition count, which the engine relies on: the state of the tasks of
// input partition p lives in state partition p.
func EnsureTopics(ctx context.Context, cl *kgo.Client, t record.Topics, partitions int32, rf int16) error {
	adm := kadm.NewClient(cl)
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	for _, name := range t.All() {
		var configs map[string]*string
		if name == t.State {
			configs = compact
		}
		resp, err := adm.CreateTopic(ctx, partitions, rf, configs, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", name, err)
		}
	}
	details, err := adm.ListTopics(ctx, t.Input, t.State)
	if err != nil {
		return fmt.Errorf("describe topics: %w", err)
	}
	in, st := details[t.Input], details[t.State]
	if in.Err != nil || st.Err != nil {
		return fmt.Errorf("describe topics: %w", errors.Join(in.Err, st.Err))
	}
	if len(in.Partitions) != len(st.Partitions) {
		return fmt.Errorf("topic %s has %d partitions but %s has %d: they must match",
			t.Input, len(in.Partitions), t.State, len(st.Partitions))
	}
	return nil
}

// TargetTopics makes sure the topics tasks fire into exist, creating a
// missing one when allowed, and remembers the answer.
type TargetTopics struct {
	adm        *kadm.Client
	partitions int32
	rf         int16
	create     bool

	mu    sync.Mutex
	known map[string]error
}

// NewTargetTopics checks target topics through cl; with create set, it
// creates missing ones with the given partitions and replication factor.
func NewTargetTopics(cl *kgo.Client, partitions int32, rf int16, create bool) *TargetTopics {
	return &TargetTopics{adm: kadm.NewClient(cl), partitions: partitions, rf: rf, create: create, known: map[string]error{}}
}

// Ensure returns nil when the topic exists (or was created), and an error
// only when the brokers said it cannot be used: when they cannot be asked,
// the topic is assumed usable and producing to it will tell.
func (t *TargetTopics) Ensure(ctx context.Context, topic string) error {
	t.mu.Lock()
	err, ok := t.known[topic]
	t.mu.Unlock()
	if ok {
		return err
	}
	details, err := t.adm.ListTopics(ctx, topic)
	if err != nil {
		return nil
	}
	d := details[topic]
	switch {
	case d.Err == nil:
		err = nil
	case errors.Is(d.Err, kerr.UnknownTopicOrPartition) && t.create:
		resp, cerr := t.adm.CreateTopic(ctx, t.partitions, t.rf, nil, topic)
		if cerr == nil {
			cerr = resp.Err
		}
		if cerr != nil && !errors.Is(cerr, kerr.TopicAlreadyExists) {
			err = fmt.Errorf("target topic %s does not exist and could not be created: %w", topic, cerr)
		}
	case errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		err = fmt.Errorf("target topic %s does not exist", topic)
	default:
		err = fmt.Errorf("target topic %s: %w", topic, d.Err)
	}
	t.mu.Lock()
	t.known[topic] = err
	t.mu.Unlock()
	return err
}

// Forget drops what is known of topic, so the next Ensure asks again.
func (t *TargetTopics) Forget(topic string) {
	t.mu.Lock()
	delete(t.known, topic)
	t.mu.Unlock()
}
