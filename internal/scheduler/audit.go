package scheduler

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
)

// engineAudit is an audit event of the engine's own doing to the task
// with key, about its fire fireID, at now: the node is its actor.
func (r *runner) engineAudit(action, key, fireID, outcome, detail string, now int64) *kgo.Record {
	a := record.NewAudit(time.UnixMilli(now), r.e.cfg.Node, action, key, outcome)
	a.Detail = detail
	return &kgo.Record{Topic: r.e.cfg.Topics.Audit, Key: []byte(a.Actor), Value: encode(a)}
}

// audit is the audit event of a command of src, sent at at, by its actor.
// Its ID is random, not made of the command's fields: the command is
// audited in the transaction that checkpoints past it, so once however
// often the engine restores, and two commands alike to the byte (two
// clients deleting one task in the same millisecond) are two events.
func (r *runner) audit(src record.Source, action, object, outcome, detail string, at time.Time) *kgo.Record {
	actor := src.Actor
	if actor == "" {
		actor = "unknown"
	}
	a := record.NewAudit(at, actor, action, object, outcome)
	a.Detail = detail
	if src.Batch != "" {
		a.Detail = fmt.Sprintf("%s (file %s row %d)", detail, src.File, src.Row)
	}
	v := encode(a)
	return &kgo.Record{Topic: r.e.cfg.Topics.Audit, Key: []byte(actor), Value: v}
}
