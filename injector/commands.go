package injector

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// Send injects commands that did not come from a file (the REST API and the
// console) in one transaction, with an audit event per command.
func (in *Injector) Send(ctx context.Context, actor string, defs ...task.Definition) error {
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		for i := range defs {
			produce(in.command(&defs[i], record.Source{Actor: actor}, 0))
		}
		return nil
	})
}

// ReportStatus writes a worker's report on an execution to the status
// topic, with its audit event, in one transaction.
func (in *Injector) ReportStatus(ctx context.Context, actor string, s record.Status) error {
	v, _ := json.Marshal(s)
	a := record.NewAudit(in.cfg.Now(), actor, "execution."+strings.ToLower(s.Status), s.FireID, record.OutcomeOK)
	a.Detail = s.Message
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(&kgo.Record{Topic: in.cfg.Topics.Status, Key: []byte(s.FireID), Value: v})
		produce(in.encodeAudit(a))
		return nil
	})
}

// AppendLogs writes a worker's log lines on an execution to the status
// topic. They are not audited: a log is the worker's, not an action on
// jobdrop.
func (in *Injector) AppendLogs(ctx context.Context, s record.Status) error {
	v, _ := json.Marshal(s)
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(&kgo.Record{Topic: in.cfg.Topics.Status, Key: []byte(s.FireID), Value: v})
		return nil
	})
}

// Trigger sends a TRIGGER command for the task host/name and returns the
// fire id the engine gives the fire it asks for (see
// record.TriggerFireID): it follows from where the command was written.
func (in *Injector) Trigger(ctx context.Context, actor, host, name string) (string, error) {
	d := task.Definition{Host: host, Name: name, Action: task.Trigger}
	rec := in.command(&d, record.Source{Actor: actor}, 0)
	if err := in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(rec)
		return nil
	}); err != nil {
		return "", err
	}
	return record.TriggerFireID(host, name, rec.Partition, rec.Offset), nil
}

// Reap writes the FAILED status of an execution left with no final
// status, with its audit event, in one transaction.
func (in *Injector) Reap(ctx context.Context, s record.Status, a record.Audit) error {
	v, _ := json.Marshal(s)
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(&kgo.Record{Topic: in.cfg.Topics.Status, Key: []byte(s.FireID), Value: v})
		produce(in.encodeAudit(a))
		return nil
	})
}

// Audit writes one audit event on its own.
func (in *Injector) Audit(ctx context.Context, a record.Audit) error {
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(in.encodeAudit(a))
		return nil
	})
}
