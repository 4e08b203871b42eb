package msgsched

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// Actor is who the commands and audit events of schedules are by.
const Actor = "message-scheduler"

// HeaderDropped marks the tombstone of a schedule dropped as too late:
// reading it back changes nothing.
const HeaderDropped = "jobdrop-schedule-dropped"

// converter turns schedule records into what the bridge writes.
type converter struct {
	input, audit string
	history      string
	grace        time.Duration
	clock        clockwork.Clock
}

// convert is what one schedule record becomes, all in the transaction
// that moves the bridge past it: a command on the input topic, and for a
// schedule dropped or rejected its audit event (and, dropped, its
// tombstone).
func (c converter) convert(rec *kgo.Record) []*kgo.Record {
	if ownTombstone(rec) {
		return nil // the tombstone of a schedule fired or dropped: done already
	}
	if len(rec.Key) == 0 {
		return []*kgo.Record{c.auditRec(rec, "", record.ActionScheduleRejected, record.OutcomeRejected,
			"has no key: a schedule's key names it")}
	}
	host, name := rec.Topic, task.EscapeName(rec.Key)
	key := task.Key(host, name)
	if len(name) > task.MaxNameLen {
		return []*kgo.Record{c.auditRec(rec, "", record.ActionScheduleRejected, record.OutcomeRejected,
			fmt.Sprintf("key is %d bytes long (escaped): at most %d are kept", len(name), task.MaxNameLen))}
	}
	if rec.Value == nil {
		return []*kgo.Record{c.command(key, task.Definition{Host: host, Name: name, Action: task.Delete})}
	}
	d, err := c.definition(rec, host, name)
	if err != nil {
		return []*kgo.Record{c.auditRec(rec, key, record.ActionScheduleRejected, record.OutcomeRejected, err.Error())}
	}
	if late := rec.Timestamp.Sub(task.Time(*d.Start)); late > c.grace {
		// Past due on arrival by more than the grace: dropped, and any
		// earlier version it replaces goes with it.
		return []*kgo.Record{
			c.command(key, task.Definition{Host: host, Name: name, Action: task.Delete}),
			{Topic: rec.Topic, Partition: rec.Partition, Key: rec.Key,
				Headers: []kgo.RecordHeader{{Key: HeaderDropped, Value: []byte("late")}}},
			c.auditRec(rec, key, record.ActionScheduleDropped, record.OutcomeRejected, fmt.Sprintf(
				"due at %s, %s before it arrived: more than the grace of %s",
				task.Time(*d.Start).Format(time.RFC3339), late.Round(time.Millisecond), c.grace)),
		}
	}
	return []*kgo.Record{c.command(key, d)}
}

// definition reads a schedule: its three headers, its value and where it
// was read from.
func (c converter) definition(rec *kgo.Record, host, name string) (task.Definition, error) {
	var missing []string
	get := func(h string) []byte {
		v := header(rec, h)
		if v == nil {
			missing = append(missing, h)
		}
		return v
	}
	epoch, topic, target := get(record.HeaderScheduleEpoch), get(record.HeaderScheduleTargetTopic), get(record.HeaderScheduleTargetKey)
	if len(missing) > 0 {
		return task.Definition{}, fmt.Errorf("is no schedule: header %s missing", strings.Join(missing, ", "))
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(string(epoch)), 10, 64)
	if err != nil || secs < 0 || secs > task.MaxMillis/1000 {
		return task.Definition{}, fmt.Errorf("header %s %q: want the fire time in whole seconds since 1970", record.HeaderScheduleEpoch, epoch)
	}
	m := &task.Message{Key: target, Value: rec.Value, History: c.history,
		From: task.Origin{Topic: rec.Topic, Partition: rec.Partition, Key: rec.Key, Timestamp: rec.Timestamp.UnixMilli()}}
	for _, h := range rec.Headers {
		switch h.Key {
		case record.HeaderScheduleEpoch, record.HeaderScheduleTargetTopic, record.HeaderScheduleTargetKey:
		default:
			m.Headers = append(m.Headers, task.Header{Key: h.Key, Value: h.Value})
		}
	}
	d := task.Definition{Host: host, Name: name, Action: task.Insert, Topic: string(topic),
		Start: task.Ptr(secs * 1000), Message: m}
	if err := d.Validate(); err != nil {
		// Say what in the record is wrong: the key (the task's name), the
		// target topic's header, or the epoch's.
		var parts []string
		for _, fe := range task.FieldErrors(err) {
			switch fe.Field {
			case "name", "host":
				parts = append(parts, "key: "+fe.Reason)
			case "topic":
				parts = append(parts, fmt.Sprintf("header %s %q: %s", record.HeaderScheduleTargetTopic, fe.Value, fe.Reason))
			case "start":
				parts = append(parts, fmt.Sprintf("header %s %q: %s", record.HeaderScheduleEpoch, epoch, fe.Reason))
			default:
				parts = append(parts, fe.Error())
			}
		}
		return task.Definition{}, errors.New(strings.Join(parts, "; "))
	}
	return d, nil
}

// command is the input topic's record of d.
func (c converter) command(key string, d task.Definition) *kgo.Record {
	v, _ := json.Marshal(d)
	return &kgo.Record{Topic: c.input, Key: []byte(key), Value: v,
		Headers: []kgo.RecordHeader{{Key: record.HeaderActor, Value: []byte(Actor)}}}
}

// auditRec is the audit event of a schedule record the bridge did not
// take as it came: what it was (topic, partition, offset, key) and why.
func (c converter) auditRec(rec *kgo.Record, object, action, outcome, why string) *kgo.Record {
	where := fmt.Sprintf("%s partition %d offset %d", rec.Topic, rec.Partition, rec.Offset)
	if object == "" {
		object = where
	}
	// Keyed by the schedule record's place: one record is one event however
	// often a bridge reads it (again after an aborted transaction, or as
	// the partition's next owner), a guard beside the transaction's.
	a := record.NewAudit(c.clock.Now(), Actor, action, object, outcome).Keyed(where)
	a.Detail = fmt.Sprintf("schedule at %s (key %s) %s", where, quoteKey(rec.Key), why)
	v, _ := json.Marshal(a)
	return &kgo.Record{Topic: c.audit, Key: []byte(Actor), Value: v}
}

// ownTombstone reports whether rec is a tombstone jobdrop wrote once it
// fired or dropped a schedule.
func ownTombstone(rec *kgo.Record) bool {
	return rec.Value == nil && (header(rec, record.HeaderFireID) != nil || header(rec, HeaderDropped) != nil)
}

// maxQuotedKey bounds the bytes of a key an audit event quotes: a key
// may be as large as a record.
const maxQuotedKey = 64

// quoteKey quotes key for an audit event, cut to its first bytes.
func quoteKey(key []byte) string {
	if len(key) <= maxQuotedKey {
		return strconv.Quote(string(key))
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(string(key[:maxQuotedKey])), len(key))
}

// header is the value of the last header called key, nil when none is.
func header(rec *kgo.Record, key string) []byte {
	var v []byte
	for _, h := range rec.Headers {
		if h.Key == key {
			v = h.Value
			if v == nil {
				v = []byte{}
			}
		}
	}
	return v
}
