package injector

import (
	"cmp"
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/command"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

func (in *Injector) audit(ctx context.Context, f File, action, outcome string, b *record.Batch, detail string) error {
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(in.auditRecord(f, action, outcome, b, detail))
		return nil
	})
}

// actor is who the audit trail says handled f.
func (in *Injector) actor(f File) string { return cmp.Or(f.Actor, in.cfg.Actor) }

func (in *Injector) auditRecord(f File, action, outcome string, b *record.Batch, detail string) *kgo.Record {
	a := record.NewAudit(in.cfg.Clock.Now(), in.actor(f), action, b.File, outcome)
	a.Detail, a.Batch = detail, b
	return in.encodeAudit(a)
}

func (in *Injector) encodeAudit(a record.Audit) *kgo.Record {
	return command.AuditRecord(in.cfg.Topics.Audit, a)
}

func (in *Injector) command(d *task.Definition, src record.Source, row int) *kgo.Record {
	return command.Record(in.cfg.Topics.Input, d, src, row, in.cfg.Clock.Now())
}
