package injector

import (
	"cmp"
	"context"
	"encoding/json"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

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
	a := record.NewAudit(in.cfg.Now(), in.actor(f), action, b.File, outcome)
	a.Detail, a.Batch = detail, b
	return in.encodeAudit(a)
}

func (in *Injector) encodeAudit(a record.Audit) *kgo.Record {
	v, _ := json.Marshal(a)
	// Events of one file share a key, so they are read in order.
	key := a.Actor
	switch {
	case a.Arrival != nil:
		key = a.Arrival.ID
	case a.Batch != nil && a.Batch.Arrival != "":
		key = a.Batch.Arrival
	case a.Batch != nil && a.Batch.ID != "":
		key = a.Batch.ID
	}
	return &kgo.Record{Topic: in.cfg.Topics.Audit, Key: []byte(key), Value: v}
}

func (in *Injector) command(d *task.Definition, src record.Source, row int) *kgo.Record {
	v, _ := json.Marshal(d)
	h := []kgo.RecordHeader{{Key: record.HeaderActor, Value: []byte(src.Actor)}}
	if src.Batch != "" {
		h = append(h,
			kgo.RecordHeader{Key: record.HeaderBatch, Value: []byte(src.Batch)},
			kgo.RecordHeader{Key: record.HeaderFile, Value: []byte(src.File)},
			kgo.RecordHeader{Key: record.HeaderFolder, Value: []byte(src.Folder)},
			kgo.RecordHeader{Key: record.HeaderRow, Value: []byte(strconv.Itoa(row))})
	}
	// The command's timestamp is when it was submitted: a task with no
	// start counts from it.
	return &kgo.Record{Topic: in.cfg.Topics.Input, Key: []byte(d.Key()), Value: v, Headers: h, Timestamp: in.cfg.Now()}
}
