package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/singleflight"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/retry"
)

// EnsureTopics creates jobdrop's topics where they are missing (the state
// topic compacted) with the given partitions and replication factor, and
// checks them as Prepare does. It is for clients of plain clusters that
// hold no Config, tests above all, and treats the cluster as Prepare
// treats the embedded broker.
func EnsureTopics(ctx context.Context, cl *kgo.Client, t record.Topics, partitions int32, rf int16) error {
	c := Config{Partitions: partitions, ReplicationFactor: rf}.WithDefaults()
	return prepareTopics(ctx, kadm.NewClient(cl), t, c, slog.New(slog.DiscardHandler))
}

// prepareTopics creates the missing topics of t when c allows it, or says
// exactly what to create when it does not, and then checks what the
// engine relies on:
//   - the input and state topics have the same partition count: the state
//     of the tasks of input partition p lives in state partition p;
//   - the state topic is compacted and only compacted: it is a changelog
//     that keeps the latest state of every task, and a delete policy would
//     drop the state of tasks that did not change within retention.ms;
//   - on the embedded broker, the state topic has retention.ms=-1, set
//     here when missing (see keepStateOnEmbedded);
//   - topics found have the partitions, replicas and in-sync replicas
//     the configuration asks for (see checkShapes);
//   - no topic asks for more in-sync replicas than it has, as then no
//     write could ever be acknowledged;
//   - the transaction timeout, when set, is one the brokers accept.
func prepareTopics(ctx context.Context, adm *kadm.Client, t record.Topics, c Config, log *slog.Logger) error {
	names := t.All()
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	var missing, errs []error
	shapes := map[string]topicShape{}
	var create []string
	for _, name := range names {
		switch d := details[name]; {
		case d.Err == nil:
			shapes[name] = topicShape{partitions: len(d.Partitions), replicas: replicaCount(d)}
		case errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			if c.createsTopics() {
				create = append(create, name)
			} else {
				missing = append(missing, fmt.Errorf("topic %s does not exist and kafka.create_topics is false: create it with %s",
					name, topicSpec(c, t, details, name)))
			}
		default:
			errs = append(errs, fmt.Errorf("topic %s: %w", name, d.Err))
		}
	}
	errs = append(errs, checkShapes(t, shapes, c)...)
	if err := errors.Join(append(errs, missing...)...); err != nil {
		return err
	}
	// What was created is known from the answers: listing again could
	// return metadata cached from before, or from a broker that has not
	// heard of the new topic yet.
	created := map[string]bool{}
	for _, name := range create {
		partitions := partitionsFor(c, t, details, name)
		resp, err := adm.CreateTopic(ctx, partitions, c.ReplicationFactor, topicConfigs(c, name == t.State), name)
		if err == nil {
			err = resp.Err
		}
		switch {
		case err == nil:
			created[name] = true
			shapes[name] = topicShape{partitions: int(partitions), replicas: int(c.ReplicationFactor)}
			if resp.NumPartitions > 0 {
				shapes[name] = topicShape{partitions: int(resp.NumPartitions), replicas: int(resp.ReplicationFactor)}
			}
		case errors.Is(err, kerr.TopicAlreadyExists):
			// Another instance starting at the same time made it.
			d, err := listMade(ctx, adm, name)
			if err != nil {
				return err
			}
			shapes[name] = topicShape{partitions: len(d.Partitions), replicas: replicaCount(d)}
		default:
			return fmt.Errorf("create topic %s: %w", name, err)
		}
	}
	if in, st := shapes[t.Input], shapes[t.State]; in.partitions != st.partitions {
		return fmt.Errorf("topic %s has %d partitions but %s has %d: they must match",
			t.Input, in.partitions, t.State, st.partitions)
	}
	if err := checkTopicConfigs(ctx, adm, t, shapes, created, c, log); err != nil {
		return err
	}
	return checkTransactionTimeout(ctx, adm, c)
}

// checkShapes compares the topics found before any is created to the
// configuration: the input and state topics have kafka.partitions
// partitions, and no topic has fewer replicas than kafka.replication_factor
// asks for. A partition count is never changed to match: a task's key
// picks its input partition, and its state is kept in the state partition
// of the same number, so a new count would move tasks away from their
// state. The configuration follows the topics instead.
func checkShapes(t record.Topics, found map[string]topicShape, c Config) []error {
	var errs []error
	for _, name := range []string{t.Input, t.State} {
		if sh, ok := found[name]; ok && sh.partitions != int(c.Partitions) {
			errs = append(errs, fmt.Errorf("topic %s has %d partitions but kafka.partitions is %d: set kafka.partitions: %d "+
				"(a partition count cannot change once tasks exist: their keys would move away from their state)",
				name, sh.partitions, c.Partitions, sh.partitions))
			break
		}
	}
	if c.ReplicationFactor > 0 {
		for _, name := range t.All() {
			if sh, ok := found[name]; ok && sh.replicas > 0 && sh.replicas < int(c.ReplicationFactor) {
				errs = append(errs, fmt.Errorf("topic %s has %d replicas of each partition but kafka.replication_factor is %d: "+
					"losing a broker could lose what it holds; add replicas (kafka-reassign-partitions) or lower kafka.replication_factor",
					name, sh.replicas, c.ReplicationFactor))
			}
		}
	}
	return errs
}

// listMade lists a topic another client just created, waiting out the
// client's metadata cache, which still holds it missing for a few seconds.
func listMade(ctx context.Context, adm *kadm.Client, name string) (kadm.TopicDetail, error) {
	var d kadm.TopicDetail
	err := retry.Do(ctx, retry.Policy{Backoff: retry.Backoff{First: 250 * time.Millisecond}}, func() error {
		details, err := adm.ListTopics(ctx, name)
		if err != nil {
			return retry.Permanent(fmt.Errorf("topic %s: %w", name, err))
		}
		d = details[name]
		switch {
		case errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			return d.Err
		case d.Err != nil:
			return retry.Permanent(fmt.Errorf("topic %s: %w", name, d.Err))
		}
		return nil
	})
	if cerr := ctx.Err(); err != nil && err == cerr {
		return d, fmt.Errorf("topic %s: exists, says the broker, but is not listed yet: %w", name, cerr)
	}
	return d, err
}

// topicShape is what the checks need of a topic's layout.
type topicShape struct {
	partitions int
	// replicas is the fewest replicas of a partition; 0 when unknown.
	replicas int
}

// partitionsFor is the partition count to create topic name with: the
// input and state topics must match, so when one of them exists the other
// follows it.
func partitionsFor(c Config, t record.Topics, details kadm.TopicDetails, name string) int32 {
	var partner string
	switch name {
	case t.Input:
		partner = t.State
	case t.State:
		partner = t.Input
	}
	if d, ok := details[partner]; ok && partner != "" && d.Err == nil && len(d.Partitions) > 0 {
		return int32(len(d.Partitions))
	}
	return c.Partitions
}

// topicConfigs are the configs of a topic jobdrop creates. The state
// topic is compacted and never deleted by age: Apache Kafka and Redpanda
// ignore retention.ms on a topic compacted only, but the embedded broker
// applies it to every topic.
func topicConfigs(c Config, state bool) map[string]*string {
	configs := map[string]*string{}
	if state {
		configs["cleanup.policy"] = kadm.StringPtr("compact")
		configs["retention.ms"] = kadm.StringPtr("-1")
	}
	if c.MinInsyncReplicas > 0 {
		configs["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(int(c.MinInsyncReplicas)))
	}
	return configs
}

// topicSpec says how to create a missing topic, for administrators who
// create topics themselves.
func topicSpec(c Config, t record.Topics, details kadm.TopicDetails, name string) string {
	spec := []string{strconv.Itoa(int(partitionsFor(c, t, details, name))) + " partitions"}
	if c.ReplicationFactor > 0 {
		spec = append(spec, "replication factor "+strconv.Itoa(int(c.ReplicationFactor)))
	}
	for _, k := range []string{"cleanup.policy", "min.insync.replicas"} {
		if v, ok := topicConfigs(c, name == t.State)[k]; ok {
			spec = append(spec, k+"="+*v)
		}
	}
	return strings.Join(spec, ", ")
}

// checkTopicConfigs checks the cleanup policy of the state topic and the
// min.insync.replicas of every topic against its replicas and against
// kafka.min_insync_replicas, and on the
// embedded broker keeps the state topic from deleting by age. A topic just
// created may not be known yet to the broker asked; it was created as it
// should be, so it is not waited for.
func checkTopicConfigs(ctx context.Context, adm *kadm.Client, t record.Topics, shapes map[string]topicShape, created map[string]bool,
	c Config, log *slog.Logger) error {
	names := t.All()
	rcs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return fmt.Errorf("describe topic configs: %w", err)
	}
	var errs []error
	for _, name := range names {
		rc, err := rcs.On(name, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil && created[name] && errors.Is(err, kerr.UnknownTopicOrPartition) {
			continue
		}
		if err != nil {
			// Only the state topic's policy is worth refusing to start
			// over; the other checks give way to tight ACLs.
			if name == t.State {
				errs = append(errs, fmt.Errorf("topic %s: cannot read its cleanup.policy, which must be compact: %w", name, err))
			}
			continue
		}
		value := func(key string) (string, bool) {
			for _, cf := range rc.Configs {
				if cf.Key == key && cf.Value != nil {
					return *cf.Value, true
				}
			}
			return "", false
		}
		if name == t.State {
			if policy, _ := value("cleanup.policy"); strings.ReplaceAll(policy, " ", "") != "compact" {
				errs = append(errs, fmt.Errorf("topic %s has cleanup.policy=%s, want cleanup.policy=compact: it keeps the latest state of every task, "+
					"and deleting by age would lose the state of tasks that did not change for retention.ms", name, policy))
			}
			if ms, _ := value("retention.ms"); c.embedded() && ms != "-1" {
				if err := keepStateOnEmbedded(ctx, adm, name, ms, log); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if v, ok := value("min.insync.replicas"); ok {
			minISR, err := strconv.Atoi(v)
			switch replicas := shapes[name].replicas; {
			case err != nil:
			case replicas > 0 && minISR > replicas:
				errs = append(errs, fmt.Errorf("topic %s has min.insync.replicas=%d but only %d replicas: no write to it could ever be acknowledged",
					name, minISR, replicas))
			case minISR < int(c.MinInsyncReplicas):
				errs = append(errs, fmt.Errorf("topic %s has min.insync.replicas=%d but kafka.min_insync_replicas is %d: a write would count "+
					"with fewer copies than asked; set it on the topic (kafka-configs --alter --add-config min.insync.replicas=%d) or lower kafka.min_insync_replicas",
					name, minISR, c.MinInsyncReplicas, c.MinInsyncReplicas))
			}
		}
	}
	return errors.Join(errs...)
}

// keepStateOnEmbedded sets retention.ms=-1 on the state topic of the
// embedded broker. Unlike Apache Kafka, that broker deletes records older
// than retention.ms (7 days unless set) from compacted topics too, so the
// state of a task not rewritten for a week (a monthly cron, a one-shot a
// month away) and the partition's input checkpoint would be gone at the
// next restore. State topics made before jobdrop created them with the
// setting get it at their next start.
func keepStateOnEmbedded(ctx context.Context, adm *kadm.Client, topic, was string, log *slog.Logger) error {
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("-1")}}, topic)
	if err == nil {
		_, err = resps.On(topic, func(r *kadm.AlterConfigsResponse) error { return r.Err })
	}
	if err != nil {
		return fmt.Errorf("topic %s: set retention.ms=-1, without which the embedded broker deletes task state older than retention.ms: %w", topic, err)
	}
	log.Info("state topic set to keep task state whatever its age", "topic", topic, "retention_ms", "-1", "was", was)
	return nil
}

// replicaCount is the fewest replicas any partition of d has.
func replicaCount(d kadm.TopicDetail) int {
	n := 0
	for _, p := range d.Partitions {
		if n == 0 || len(p.Replicas) < n {
			n = len(p.Replicas)
		}
	}
	return n
}

// checkTransactionTimeout refuses a transaction timeout above the brokers'
// transaction.max.timeout.ms, which would otherwise fail the first
// transaction rather than the start. Brokers that do not let jobdrop read
// their configuration are given the benefit of the doubt.
func checkTransactionTimeout(ctx context.Context, adm *kadm.Client, c Config) error {
	if c.TransactionTimeout <= 0 {
		return nil
	}
	brokers, err := adm.ListBrokers(ctx)
	if err != nil || len(brokers) == 0 {
		return nil
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, brokers.NodeIDs()...)
	if err != nil {
		return nil
	}
	for _, rc := range rcs {
		for _, cf := range rc.Configs {
			if cf.Key != "transaction.max.timeout.ms" || cf.Value == nil {
				continue
			}
			ms, err := strconv.ParseInt(*cf.Value, 10, 64)
			if limit := time.Duration(ms) * time.Millisecond; err == nil && c.TransactionTimeout > limit {
				return fmt.Errorf("kafka.transaction_timeout: %s is above the brokers' transaction.max.timeout.ms (%s): lower it", c.TransactionTimeout, limit)
			}
		}
	}
	return nil
}

// Targets checks the target topics of tasks as c says: missing ones are
// created only when CreateTopics allows it, like jobdrop's own topics and
// with their partitions, replication factor and min.insync.replicas.
func (c Config) Targets(cl *kgo.Client) *TargetTopics {
	c = c.WithDefaults()
	t := NewTargetTopics(cl, c.Partitions, c.ReplicationFactor, c.createsTopics())
	t.configs = topicConfigs(c, false)
	return t
}

// TargetTopics makes sure the topics tasks fire into exist, creating a
// missing one when allowed, and remembers the answer: a usable topic until
// Forget, an unusable one for recheckMissing.
type TargetTopics struct {
	adm        *kadm.Client
	partitions int32
	rf         int16
	create     bool
	configs    map[string]*string
	// recheck is recheckMissing but in tests.
	recheck time.Duration

	mu    sync.Mutex
	known map[string]answer
	// asking lets the partitions' runners that meet a topic at once,
	// as at a burst's first fire, wait for one answer: asked one after
	// another, the eighth of eight waited 44 ms.
	asking singleflight.Group
}

// answer is what was learnt of a target topic, and when.
type answer struct {
	err error
	at  time.Time
}

// recheckMissing is how long a topic that could not be used is taken for
// unusable: with creation off, administrators create missing topics, and
// tasks must reach them then without a restart.
const recheckMissing = 30 * time.Second

// NewTargetTopics checks target topics through cl; with create set, it
// creates missing ones with the given partitions and replication factor.
func NewTargetTopics(cl *kgo.Client, partitions int32, rf int16, create bool) *TargetTopics {
	return &TargetTopics{adm: kadm.NewClient(cl), partitions: partitions, rf: rf, create: create, recheck: recheckMissing, known: map[string]answer{}}
}

// Ensure returns nil when the topic exists (or was created), and an error
// only when the brokers said it cannot be used: when they cannot be asked,
// the topic is assumed usable and producing to it will tell.
func (t *TargetTopics) Ensure(ctx context.Context, topic string) error {
	t.mu.Lock()
	a, ok := t.known[topic]
	t.mu.Unlock()
	if ok && (a.err == nil || time.Since(a.at) < t.recheck) {
		return a.err
	}
	v, _, _ := t.asking.Do(topic, func() (any, error) { return t.ask(ctx, topic), nil })
	err, _ := v.(error)
	return err
}

// ask asks the brokers whether topic can be used, creating it when
// missing and allowed, and remembers the answer.
func (t *TargetTopics) ask(ctx context.Context, topic string) error {
	details, err := t.adm.ListTopics(ctx, topic)
	if err != nil {
		return nil
	}
	d := details[topic]
	switch {
	case d.Err == nil:
		err = nil
	case errors.Is(d.Err, kerr.UnknownTopicOrPartition) && t.create:
		resp, cerr := t.adm.CreateTopic(ctx, t.partitions, t.rf, t.configs, topic)
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
	t.known[topic] = answer{err: err, at: time.Now()}
	t.mu.Unlock()
	return err
}

// Forget drops what is known of topic, so the next Ensure asks again.
func (t *TargetTopics) Forget(topic string) {
	t.mu.Lock()
	delete(t.known, topic)
	t.mu.Unlock()
}

// ScheduleTopics checks topics of schedules, as Targets does, creating a
// missing one compacted: the latest version of every schedule is kept.
func (c Config) ScheduleTopics(cl *kgo.Client) *TargetTopics {
	t := c.Targets(cl)
	t.configs = topicConfigs(c.WithDefaults(), true)
	return t
}
