package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// Config configures a Writer.
type Config struct {
	// ClientOpts reach the brokers.
	ClientOpts []kgo.Opt
	// TransactionalID identifies the writer's producer. It must be stable
	// across restarts of one instance and differ between instances and
	// from every other transactional id. Required.
	TransactionalID string
	// Topics names jobdrop's topics.
	Topics record.Topics
	// Clock is the clock of commands and audit timestamps. Defaults to
	// the real clock.
	Clock clockwork.Clock
}

// Writer writes commands, status reports and audit events, each call in
// one transaction. It is safe for concurrent use; the transactions go one
// at a time, since one transactional producer serves them all.
type Writer struct {
	cfg Config

	mu sync.Mutex // owns cl: one transaction at a time
	cl *kgo.Client
}

// errClosed is the error of a write asked of a closed Writer.
var errClosed = errors.New("command writer closed")

// New connects a transactional producer.
func New(cfg Config) (*Writer, error) {
	if cfg.TransactionalID == "" {
		return nil, errors.New("command writer: TransactionalID is required")
	}
	cfg.Topics = cfg.Topics.WithDefaults()
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{
		kgo.ProducerBatchMaxBytes(kafka.MaxBatchBytes),
	}, cfg.ClientOpts...), kafka.TxnOpts(cfg.TransactionalID)...)...)
	if err != nil {
		return nil, fmt.Errorf("command writer: %w", err)
	}
	return &Writer{cfg: cfg, cl: cl}, nil
}

// Close releases the producer. It is safe to call more than once.
func (w *Writer) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cl != nil {
		w.cl.Close()
		w.cl = nil
	}
}

// Send writes commands that did not come from a file (the REST API and
// the console) in one transaction; the engine audits each as it applies
// it. The link records of every chained definition go first, so that a
// predecessor sent in the same call is watched from its first fire.
func (w *Writer) Send(ctx context.Context, actor string, defs ...task.Definition) error {
	return w.transact(ctx, func(produce func(*kgo.Record)) error {
		for i := range defs {
			for _, link := range LinkRecords(w.cfg.Topics.Input, &defs[i]) {
				produce(link)
			}
		}
		for i := range defs {
			produce(w.command(&defs[i], actor))
		}
		return nil
	})
}

// ReportStatus writes a worker's report on an execution to the status
// topic, with its audit event, in one transaction.
func (w *Writer) ReportStatus(ctx context.Context, actor string, s record.Status) error {
	recs := StatusRecords(w.cfg.Topics, actor, s, w.cfg.Clock.Now())
	return w.transact(ctx, func(produce func(*kgo.Record)) error {
		for _, rec := range recs {
			produce(rec)
		}
		return nil
	})
}

// AppendLogs writes a worker's log lines on an execution to the status
// topic. They are not audited: a log is the worker's, not an action on
// jobdrop.
func (w *Writer) AppendLogs(ctx context.Context, s record.Status) error {
	v, _ := json.Marshal(s)
	return w.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(&kgo.Record{Topic: w.cfg.Topics.Status, Key: []byte(s.FireID), Value: v})
		return nil
	})
}

// Trigger sends a TRIGGER command for the task host/name and returns the
// fire id the engine gives the fire it asks for (see
// record.TriggerFireID): it follows from where the command was written.
func (w *Writer) Trigger(ctx context.Context, actor, host, name string) (string, error) {
	d := task.Definition{Host: host, Name: name, Action: task.Trigger}
	rec := w.command(&d, actor)
	if err := w.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(rec)
		return nil
	}); err != nil {
		return "", err
	}
	return record.TriggerFireID(host, name, rec.Partition, rec.Offset), nil
}

// Reap writes the FAILED status of an execution left with no final
// status, with its audit event, in one transaction.
func (w *Writer) Reap(ctx context.Context, s record.Status, a record.Audit) error {
	v, _ := json.Marshal(s)
	return w.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(&kgo.Record{Topic: w.cfg.Topics.Status, Key: []byte(s.FireID), Value: v})
		produce(AuditRecord(w.cfg.Topics.Audit, a))
		return nil
	})
}

// Audit writes one audit event on its own.
func (w *Writer) Audit(ctx context.Context, a record.Audit) error {
	return w.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(AuditRecord(w.cfg.Topics.Audit, a))
		return nil
	})
}

// command is the record of command d sent by actor, now.
func (w *Writer) command(d *task.Definition, actor string) *kgo.Record {
	return Record(w.cfg.Topics.Input, d, record.Source{Actor: actor}, 0, w.cfg.Clock.Now())
}

// transact runs fill inside one transaction and commits it, or aborts it
// when fill or any produce fails. A commit the client turned into an
// abort is tried again, on a new client: nothing of it was written.
func (w *Writer) transact(ctx context.Context, fill func(produce func(*kgo.Record)) error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cl == nil {
		return errClosed
	}
	err := kafka.TransactRenewing(ctx, &w.cl, 3, fill)
	if err != nil && w.cl == nil {
		return fmt.Errorf("command writer: %w", err) // no client could be made again
	}
	return err
}
