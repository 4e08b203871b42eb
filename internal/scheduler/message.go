package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	segjson "github.com/segmentio/encoding/json"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// prepareMessage reads the message a message task fires, and checks the
// topic its copy goes to. A fault of either is the task's own: the
// occurrence is refused, as for an unusable target.
func (r *runner) prepareMessage(ctx context.Context, f *fire) {
	var m task.Message
	if err := segjson.Unmarshal(f.data, &m); err != nil {
		f.err = fmt.Errorf("%w: its message cannot be read back: %w", errTarget, err)
		return
	}
	f.msg = &m
	if !slices.Contains(r.e.cfg.ScheduleTopics, m.From.Topic) && f.err == nil {
		// Its tombstone would be written by key, not where the schedule
		// is: a node whose message_scheduler.topics lacks the topic.
		f.err = fmt.Errorf("%w: schedule topic %s is not in message_scheduler.topics of node %s", errTarget, m.From.Topic, r.e.cfg.Node)
	}
	if m.History != "" && f.err == nil {
		if err := r.e.cfg.Targets.Ensure(ctx, m.History); err != nil {
			f.err = fmt.Errorf("%w: history topic %s: %w", errTarget, m.History, err)
		}
	}
}

// messageEvent is the record a message task fires: the schedule's value
// under its target key, with its headers, then kafka-message-scheduler's
// (the schedule's timestamp in seconds, key and topic), then jobdrop's.
func (r *runner) messageEvent(f *fire) *kgo.Record {
	m := f.msg
	headers := make([]kgo.RecordHeader, 0, len(m.Headers)+7)
	for _, h := range m.Headers {
		headers = append(headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	headers = append(headers,
		kgo.RecordHeader{Key: record.HeaderScheduleTimestamp, Value: []byte(strconv.FormatInt(m.From.Timestamp/1000, 10))},
		kgo.RecordHeader{Key: record.HeaderScheduleKey, Value: m.From.Key},
		kgo.RecordHeader{Key: record.HeaderScheduleTopic, Value: []byte(m.From.Topic)},
		kgo.RecordHeader{Key: record.HeaderFireHost, Value: []byte(f.shape.Host)},
		kgo.RecordHeader{Key: record.HeaderFireName, Value: []byte(f.name())},
		kgo.RecordHeader{Key: record.HeaderFireID, Value: []byte(f.fireID)},
		kgo.RecordHeader{Key: record.HeaderFireScheduled, Value: []byte(strconv.FormatInt(f.scheduled, 10))},
	)
	return &kgo.Record{Topic: f.shape.Topic, Key: m.Key, Value: m.Value, Headers: headers}
}

// messageAfter is what a fired message task writes besides its event, in
// the same transaction: the copy for the history topic, and, for a fire
// at its time (not a trigger), the schedule's tombstone on the partition
// it was read from, marked with the fire id so that reading it back
// changes nothing.
func (r *runner) messageAfter(f *fire, produce func(*kgo.Record)) {
	m := f.msg
	if m.History != "" {
		ev := r.messageEvent(f)
		ev.Topic = m.History
		produce(ev)
	}
	if f.triggered {
		return
	}
	produce(&kgo.Record{Topic: m.From.Topic, Partition: m.From.Partition, Key: m.From.Key,
		Headers: []kgo.RecordHeader{{Key: record.HeaderFireID, Value: []byte(f.fireID)}}})
}
