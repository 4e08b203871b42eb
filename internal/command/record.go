package command

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// Record is the record of command d on topic, sent by src (row is its row
// in src's file, for a file's command) at at.
func Record(topic string, d *task.Definition, src record.Source, row int, at time.Time) *kgo.Record {
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
	return &kgo.Record{Topic: topic, Key: []byte(d.Key()), Value: v, Headers: h, Timestamp: at}
}

// AuditRecord is the record of audit event a on topic.
func AuditRecord(topic string, a record.Audit) *kgo.Record {
	v, _ := json.Marshal(a)
	return &kgo.Record{Topic: topic, Key: []byte(a.Key()), Value: v}
}

// StatusRecords are the records of a worker's report s on an execution,
// sent by actor at at: the status on topics.Status and its audit event.
func StatusRecords(topics record.Topics, actor string, s record.Status, at time.Time) []*kgo.Record {
	v, _ := json.Marshal(s)
	a := record.NewAudit(at, actor, "execution."+strings.ToLower(s.Status), s.FireID, record.OutcomeOK)
	a.Detail = s.Message
	return []*kgo.Record{
		{Topic: topics.Status, Key: []byte(s.FireID), Value: v},
		AuditRecord(topics.Audit, a),
	}
}

// LinkRecord is the record, on the input topic, that tells the
// predecessor pred's partition that the task follower follows it (add)
// or no longer does: its runs are then watched, and their outcomes sent
// to follower (see docs/chains.md). Whoever writes a chained task's
// command writes its links before it, in the same transaction, so that a
// predecessor created with it is watched from its first fire.
func LinkRecord(topic, pred, follower string, add bool) *kgo.Record {
	v, _ := json.Marshal(record.Link{Follower: follower})
	op := record.LinkRemove
	if add {
		op = record.LinkAdd
	}
	return &kgo.Record{Topic: topic, Key: []byte(pred), Value: v,
		Headers: []kgo.RecordHeader{{Key: record.HeaderLink, Value: []byte(op)}}}
}

// LinkRecords are the link records of a chained command d: one per
// predecessor it names, none for a command that is no definition.
func LinkRecords(topic string, d *task.Definition) []*kgo.Record {
	if d.Action.KeyOnly() {
		return nil
	}
	var recs []*kgo.Record
	for _, pred := range d.Predecessors() {
		recs = append(recs, LinkRecord(topic, pred, d.Key(), true))
	}
	return recs
}
