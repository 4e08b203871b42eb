package avro

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/jobdrop/jobdrop/task"
)

// What can be wrong with a record, as RecordError.Err wraps it.
var (
	// ErrUnknownSchema: the registry has no schema of the record's id.
	ErrUnknownSchema = errors.New("unknown schema id")
	// ErrWrongSchema: the schema of the record's id is not one
	// light-scheduler's record can be read from.
	ErrWrongSchema = errors.New("wrong schema")
	// ErrUndecodable: the bytes do not hold what their schema says.
	ErrUndecodable = errors.New("undecodable bytes")
)

// RecordError is a record that cannot be read for a fault of its own, as
// opposed to the registry being out of reach: skipping it loses nothing
// that reading it again would find.
type RecordError struct {
	// Part is "key" or "value".
	Part string
	// SchemaID is the id the part's framing names; -1 when it has none.
	SchemaID int
	// Err wraps ErrUnknownSchema, ErrWrongSchema or ErrUndecodable.
	Err error
}

func (e *RecordError) Error() string {
	if e.SchemaID < 0 {
		return e.Part + ": " + e.Err.Error()
	}
	return fmt.Sprintf("%s schema id %d: %v", e.Part, e.SchemaID, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// Framed reports whether b starts as Confluent's framing does: a zero
// byte, which no JSON text starts with, and a schema id.
func Framed(b []byte) bool { return len(b) >= 5 && b[0] == 0 }

// part is the key or the value of light-scheduler's records.
type part struct {
	name   string
	reader hamba.Schema
	text   string
}

var (
	keyPart   = part{name: "key", reader: keyReader, text: KeySchema}
	valuePart = part{name: "value", reader: valueReader, text: ValueSchema}
)

// Codec reads light-scheduler's commands and writes its events, asking a
// schema registry for the schemas of the ids records name and for the ids
// of the schemas events are written with. What the registry answered is
// kept: an id's schema never changes. A Codec is safe for concurrent use.
type Codec struct {
	reg *sr.Client

	mu sync.Mutex
	// readers are, by part and writer id, the schemas that read what was
	// written with it into light-scheduler's records, or why none can.
	readers map[readerKey]resolved
	// ids are the ids of light-scheduler's schemas by subject.
	ids map[string]int
}

type readerKey struct {
	part string
	id   int
}

type resolved struct {
	schema hamba.Schema
	err    error // a RecordError
}

// New is a Codec asking reg.
func New(reg *sr.Client) *Codec {
	return &Codec{reg: reg, readers: map[readerKey]resolved{}, ids: map[string]int{}}
}

// Decode reads a command whose value (and key, when framed) are
// light-scheduler's Avro records. key is the task key the record's key
// names: host/name of its TaskDefinitionKey, or the key as it is when
// not framed. An error is a *RecordError when the record is at fault,
// and any other when the registry could not be asked: the record may be
// read later.
func (c *Codec) Decode(ctx context.Context, key, value []byte) (d task.Definition, taskKey string, err error) {
	taskKey = string(key)
	if Framed(key) {
		var k keyRecord
		if err := c.decode(ctx, keyPart, key, &k); err != nil {
			return d, "", err
		}
		taskKey = task.Key(k.Host, k.Name)
	}
	var r definitionRecord
	if err := c.decode(ctx, valuePart, value, &r); err != nil {
		return d, taskKey, err
	}
	return r.definition(), taskKey, nil
}

// Encode is the key and value light-scheduler writes to topic for d: its
// TaskDefinitionKey and its TaskDefinition, each framed with the id the
// registry gives the schema under the topic's subject (TopicNameStrategy:
// topic-key, topic-value), registering it there the first time. A
// producer's command is written so; so is a fired event, whose start is
// the fire time.
func (c *Codec) Encode(ctx context.Context, topic string, d *task.Definition) (key, value []byte, err error) {
	kid, err := c.id(ctx, topic+"-key", keyPart)
	if err != nil {
		return nil, nil, err
	}
	vid, err := c.id(ctx, topic+"-value", valuePart)
	if err != nil {
		return nil, nil, err
	}
	if key, err = encode(kid, keyReader, keyRecord{Host: d.Host, Name: d.Name}); err != nil {
		return nil, nil, err
	}
	if value, err = encode(vid, valueReader, recordOf(d)); err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// encode frames v written with s.
func encode(id int, s hamba.Schema, v any) ([]byte, error) {
	b, err := (&sr.ConfluentHeader{}).AppendEncode(make([]byte, 0, 64), id, nil)
	if err != nil {
		return nil, err
	}
	body, err := hamba.Marshal(s, v)
	if err != nil {
		return nil, err
	}
	return append(b, body...), nil
}

// decode reads the framed b into v, a record of p.
func (c *Codec) decode(ctx context.Context, p part, b []byte, v any) error {
	id, body, err := (&sr.ConfluentHeader{}).DecodeID(b)
	if err != nil || !Framed(b) {
		return &RecordError{Part: p.name, SchemaID: -1, Err: fmt.Errorf("%w: no Confluent framing (magic byte 0, schema id)", ErrUndecodable)}
	}
	s, err := c.reader(ctx, p, id)
	if err != nil {
		return err
	}
	if err := hamba.Unmarshal(s, body, v); err != nil {
		return &RecordError{Part: p.name, SchemaID: id, Err: fmt.Errorf("%w: %v", ErrUndecodable, err)}
	}
	return nil
}

// reader is the schema that reads p written with the schema of id.
func (c *Codec) reader(ctx context.Context, p part, id int) (hamba.Schema, error) {
	k := readerKey{p.name, id}
	c.mu.Lock()
	r, ok := c.readers[k]
	c.mu.Unlock()
	if ok {
		return r.schema, r.err
	}
	s, err := c.reg.SchemaByID(ctx, id)
	if err != nil {
		if notFound(err) {
			return nil, &RecordError{Part: p.name, SchemaID: id, Err: ErrUnknownSchema}
		}
		return nil, fmt.Errorf("schema registry: schema id %d: %w", id, err)
	}
	r = resolve(p, id, s)
	c.mu.Lock()
	c.readers[k] = r
	c.mu.Unlock()
	return r.schema, r.err
}

// resolve makes the schema that reads p written with s, the schema of id.
func resolve(p part, id int, s sr.Schema) resolved {
	wrong := func(format string, args ...any) resolved {
		return resolved{err: &RecordError{Part: p.name, SchemaID: id, Err: fmt.Errorf("%w: "+format, append([]any{ErrWrongSchema}, args...)...)}}
	}
	if s.Type != sr.TypeAvro {
		return wrong("a %s schema, not Avro", s.Type)
	}
	if len(s.References) > 0 {
		return wrong("it refers to other schemas, which jobdrop does not follow")
	}
	w, err := parse(s.Schema)
	if err != nil {
		return wrong("%v", err)
	}
	rs, err := hamba.NewSchemaCompatibility().Resolve(p.reader, w)
	if err != nil {
		return wrong("not light-scheduler's %s: %v", p.reader.(hamba.NamedSchema).Name(), err)
	}
	return resolved{schema: rs}
}

// id is the id of p's schema under subject, registered there if need be.
func (c *Codec) id(ctx context.Context, subject string, p part) (int, error) {
	c.mu.Lock()
	id, ok := c.ids[subject]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := c.reg.RegisterSchema(ctx, subject, sr.Schema{Schema: p.text}, -1, -1)
	if err != nil {
		return 0, fmt.Errorf("schema registry: register light-scheduler's %s schema under subject %s: %w", p.name, subject, err)
	}
	c.mu.Lock()
	c.ids[subject] = id
	c.mu.Unlock()
	return id, nil
}

// notFound reports whether the registry answered that what was asked for
// does not exist.
func notFound(err error) bool {
	var re *sr.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}
