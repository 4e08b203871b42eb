package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	segjson "github.com/segmentio/encoding/json"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/avro"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// A command on the input topic is JSON, or light-scheduler's Avro in
// Confluent's framing, told apart by its value's first byte (0 starts no
// JSON text); the two may be mixed on one partition. A task created by an
// Avro command fires Avro events, as light-scheduler does: the task's
// state says so (record.State.Format), and its slot keeps it.

// errNoRegistry refuses Avro when no schema registry is configured.
var errNoRegistry = errors.New("no schema registry configured (kafka.schema_registry.url)")

// command is what an input record asks for.
type command struct {
	def task.Definition
	// key is the task the record's key names.
	key string
	// format is record.FormatAvro for light-scheduler's Avro, else empty.
	format string
	// err is why the record is no valid command; it is skipped.
	err error
}

// command reads rec. It fails only when the schema registry could not be
// asked: the record is read again once the partition is restored.
func (r *runner) command(ctx context.Context, rec *kgo.Record) (command, error) {
	if !avro.Framed(rec.Value) {
		c := command{key: string(rec.Key)}
		c.err = segjson.Unmarshal(rec.Value, &c.def)
		return c, nil
	}
	c := command{format: record.FormatAvro}
	codec := r.e.cfg.Avro
	err := errNoRegistry
	if codec != nil {
		c.def, c.key, err = codec.Decode(ctx, rec.Key, rec.Value)
		var re *avro.RecordError
		if err != nil && !errors.As(err, &re) {
			return c, fmt.Errorf("topic %s partition %d offset %d: %w", rec.Topic, rec.Partition, rec.Offset, err)
		}
	}
	if err != nil {
		c.err = fmt.Errorf("light-scheduler Avro record at topic %s partition %d offset %d: %w", rec.Topic, rec.Partition, rec.Offset, err)
		if c.key == "" {
			// The key is unreadable: the audit event names the record.
			c.key = fmt.Sprintf("%s/%d@%d", rec.Topic, rec.Partition, rec.Offset)
		}
	}
	return c, nil
}

// avroEvent is the key and value of a fire of a task that came as Avro.
type avroEvent struct {
	key, value []byte
}

// encodeAvro writes, for fire f of a task that came as Avro, the event
// light-scheduler would: the task's TaskDefinitionKey and TaskDefinition,
// with its start set to the occurrence fired. A registry that cannot be
// asked refuses the fire, which the fault policy fires again later.
func (r *runner) encodeAvro(ctx context.Context, f *fire) {
	if f.err != nil {
		return
	}
	codec := r.e.cfg.Avro
	if codec == nil {
		f.err = fmt.Errorf("%w: %w", errTarget, errNoRegistry)
		return
	}
	d := *f.shape
	d.Name, d.Start = f.name(), task.Ptr(f.scheduled)
	if len(f.data) > 0 {
		if err := json.Unmarshal(f.data, &d.Data); err != nil {
			f.err = fmt.Errorf("%w: data: %w", errTarget, err)
			return
		}
	}
	key, value, err := codec.Encode(ctx, d.Topic, &d)
	if err != nil {
		f.err = fmt.Errorf("%w: %w", errTarget, err)
		return
	}
	f.avro = &avroEvent{key: key, value: value}
}

// formatAfter is the format a command of format gives the task it changes,
// whose format is was: Avro makes it Avro, a file makes it JSON, a JSON
// change by hand (the console, the API) keeps what it was.
func formatAfter(format, was string, src record.Source) string {
	if format == "" && src.Batch == "" {
		return was
	}
	return format
}

// format is record.State.Format of the task of slot i.
func (t *table) format(i int32) string {
	if t.at(i).avro {
		return record.FormatAvro
	}
	return ""
}

// rekeyAvro is, for a valid Avro command whose key is light-scheduler's
// framed TaskDefinitionKey, the same command keyed host/name, as jobdrop's
// own commands (the console, the API, files) key the task: the key picks
// the input partition, and a task lives on one partition only. The engine
// writes it back to the input topic in the transaction that reads the
// original, and applies it when it reads it there; nil for any other
// command, which applies as it is.
func (r *runner) rekeyAvro(rec *kgo.Record, cmd command) *kgo.Record {
	if cmd.format != record.FormatAvro || !avro.Framed(rec.Key) {
		return nil
	}
	return &kgo.Record{Topic: rec.Topic, Key: []byte(cmd.key), Value: rec.Value, Headers: rec.Headers, Timestamp: rec.Timestamp}
}
