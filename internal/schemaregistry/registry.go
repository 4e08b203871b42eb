package schemaregistry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/retry"
)

// Config configures a Registry.
type Config struct {
	// ClientOpts reach the brokers.
	ClientOpts []kgo.Opt
	// Topic holds the registrations, compacted. Defaults to "_schemas",
	// the topic of Confluent's registry, whose records it writes alike.
	Topic string
}

// Registry holds the schemas registered, by id and by subject.
type Registry struct {
	cfg Config
	cl  *kgo.Client
	log *slog.Logger

	mu sync.Mutex
	// texts are the schemas by id, compacted; ids the ids by text.
	texts map[int]string
	ids   map[string]int
	// subjects are the ids of each subject's versions, version 1 first.
	subjects map[string][]int
	lastID   int
}

// recordKey and recordValue are a registration on the topic, as
// Confluent's registry writes them.
type recordKey struct {
	KeyType string `json:"keytype"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
	Magic   int    `json:"magic"`
}

type recordValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      int    `json:"id"`
	Schema  string `json:"schema"`
	Deleted bool   `json:"deleted"`
}

// Open creates the topic when it is missing, reads every registration on
// it and is then ready to serve.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Registry, error) {
	cfg.Topic = cmp.Or(cfg.Topic, "_schemas")
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, cfg.ClientOpts...)...)
	if err != nil {
		return nil, err
	}
	r := &Registry{cfg: cfg, cl: cl, log: log.With("component", "schema-registry"),
		texts: map[int]string{}, ids: map[string]int{}, subjects: map[string][]int{}}
	if err := r.load(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("schema registry: topic %s: %w", cfg.Topic, err)
	}
	r.log.Info("schemas loaded", "topic", cfg.Topic, "schemas", len(r.texts), "subjects", len(r.subjects))
	return r, nil
}

// Close lets the brokers go.
func (r *Registry) Close() { r.cl.Close() }

// load creates the topic if need be and reads it to its end.
func (r *Registry) load(ctx context.Context) error {
	adm := kadm.NewClient(r.cl)
	configs := map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "retention.ms": kadm.StringPtr("-1")}
	resp, err := adm.CreateTopic(ctx, 1, -1, configs, r.cfg.Topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		return resp.Err
	}
	// A topic just created may not be known to every broker yet: asked
	// for 5 s at most.
	var end kadm.ListedOffset
	errNoEnd := errors.New("no end offset")
	err = retry.Do(ctx, retry.Policy{Backoff: retry.Backoff{First: 100 * time.Millisecond}, Attempts: 51}, func() error {
		ends, err := adm.ListEndOffsets(ctx, r.cfg.Topic)
		if err != nil {
			return retry.Permanent(err)
		}
		var ok bool
		if end, ok = ends.Lookup(r.cfg.Topic, 0); ok && end.Err == nil {
			return nil
		}
		return errNoEnd
	})
	if errors.Is(err, errNoEnd) {
		return fmt.Errorf("no end offset: %v", end.Err)
	}
	if err != nil {
		return err
	}
	for next := int64(0); next < end.Offset; {
		fs := r.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fs.Err(); err != nil {
			return err
		}
		fs.EachRecord(func(rec *kgo.Record) {
			next = rec.Offset + 1
			r.apply(rec)
		})
	}
	r.cl.PauseFetchPartitions(map[string][]int32{r.cfg.Topic: {0}})
	return nil
}

// apply takes in one record of the topic; what is no schema registration
// (Confluent's registry writes others: configs, modes, no-ops) is skipped.
func (r *Registry) apply(rec *kgo.Record) {
	var k recordKey
	var v recordValue
	if json.Unmarshal(rec.Key, &k) != nil || k.KeyType != "SCHEMA" || rec.Value == nil || json.Unmarshal(rec.Value, &v) != nil ||
		v.Deleted || v.ID <= 0 || v.Version <= 0 {
		return
	}
	r.texts[v.ID] = v.Schema
	r.ids[v.Schema] = v.ID
	r.lastID = max(r.lastID, v.ID)
	versions := r.subjects[v.Subject]
	for len(versions) < v.Version {
		versions = append(versions, 0)
	}
	versions[v.Version-1] = v.ID
	r.subjects[v.Subject] = versions
}

// register adds text, a valid Avro schema, under subject and returns its
// id; a schema the subject holds already keeps its version and id, and
// the same schema under another subject keeps its id.
func (r *Registry) register(ctx context.Context, subject, text string) (int, error) {
	text = compact(text)
	r.mu.Lock()
	defer r.mu.Unlock()
	id, known := r.ids[text]
	if known && slices.Contains(r.subjects[subject], id) {
		return id, nil
	}
	if !known {
		id = r.lastID + 1
	}
	v := recordValue{Subject: subject, Version: len(r.subjects[subject]) + 1, ID: id, Schema: text}
	key, _ := json.Marshal(recordKey{KeyType: "SCHEMA", Subject: subject, Version: v.Version, Magic: 1})
	value, _ := json.Marshal(v)
	rec := &kgo.Record{Topic: r.cfg.Topic, Partition: 0, Key: key, Value: value}
	if err := r.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return 0, fmt.Errorf("write topic %s: %w", r.cfg.Topic, err)
	}
	r.apply(rec)
	r.log.Info("schema registered", "subject", subject, "version", v.Version, "id", id)
	return id, nil
}

// schema is the schema of id.
func (r *Registry) schema(id int) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.texts[id]
	return s, ok
}

// version is one version of a subject.
type version struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      int    `json:"id"`
	Schema  string `json:"schema"`
}

// versions are the version numbers of subject.
func (r *Registry) versions(subject string) ([]int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids, ok := r.subjects[subject]
	var vs []int
	for i, id := range ids {
		if id > 0 {
			vs = append(vs, i+1)
		}
	}
	return vs, ok
}

// version is version n of subject; -1 is the latest.
func (r *Registry) version(subject string, n int) (version, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids, ok := r.subjects[subject]
	if !ok {
		return version{}, errSubjectNotFound
	}
	if n == -1 {
		n = len(ids)
	}
	if n < 1 || n > len(ids) || ids[n-1] == 0 {
		return version{}, errVersionNotFound
	}
	return version{Subject: subject, Version: n, ID: ids[n-1], Schema: r.texts[ids[n-1]]}, nil
}

// lookup is the version of subject that holds text.
func (r *Registry) lookup(subject, text string) (version, error) {
	text = compact(text)
	r.mu.Lock()
	defer r.mu.Unlock()
	ids, ok := r.subjects[subject]
	if !ok {
		return version{}, errSubjectNotFound
	}
	id, known := r.ids[text]
	if i := slices.Index(ids, id); known && i >= 0 {
		return version{Subject: subject, Version: i + 1, ID: id, Schema: text}, nil
	}
	return version{}, errSchemaNotFound
}

// usage is a subject's version that holds a schema.
type usage struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// usages are the versions that hold the schema of id, by subject.
func (r *Registry) usages(id int) ([]usage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.texts[id]; !ok {
		return nil, false
	}
	us := []usage{}
	for subject, ids := range r.subjects {
		for i, v := range ids {
			if v == id {
				us = append(us, usage{Subject: subject, Version: i + 1})
			}
		}
	}
	slices.SortFunc(us, func(a, b usage) int {
		return cmp.Or(cmp.Compare(a.Subject, b.Subject), cmp.Compare(a.Version, b.Version))
	})
	return us, true
}

// subjectNames lists the subjects, sorted.
func (r *Registry) subjectNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.subjects))
	for s := range r.subjects {
		names = append(names, s)
	}
	slices.Sort(names)
	return names
}

// compact is text with the spaces between JSON tokens dropped: the same
// schema written on one line or many is one schema, with one id.
func compact(text string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(text)) != nil {
		return text
	}
	return b.String()
}
