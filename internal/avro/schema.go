package avro

import (
	_ "embed"
	"fmt"

	hamba "github.com/hamba/avro/v2"

	"github.com/jobdrop/jobdrop/task"
)

// The schemas of light-scheduler (com.networknt.scheduler), the
// TaskDefinition with its named types inline, as its generated classes
// register them.
var (
	//go:embed TaskDefinitionKey.avsc
	KeySchema string
	//go:embed TaskDefinition.avsc
	ValueSchema string
)

// keyRecord is a TaskDefinitionKey.
type keyRecord struct {
	Host string `avro:"host"`
	Name string `avro:"name"`
}

// frequencyRecord is a TaskFrequency.
type frequencyRecord struct {
	TimeUnit string `avro:"timeUnit"`
	Time     int32  `avro:"time"`
}

// definitionRecord is a TaskDefinition.
type definitionRecord struct {
	Host      string             `avro:"host"`
	Name      string             `avro:"name"`
	Action    string             `avro:"action"`
	Frequency *frequencyRecord   `avro:"frequency"`
	Topic     string             `avro:"topic"`
	Start     *int64             `avro:"start"`
	Data      *map[string]string `avro:"data"`
}

// parse reads an Avro schema on its own: named types of one schema never
// stand for those of another, as they would in hamba's shared cache.
func parse(text string) (hamba.Schema, error) {
	return hamba.ParseWithCache(text, "", &hamba.SchemaCache{})
}

// Valid says why text is no Avro schema, if it is not.
func Valid(text string) error {
	_, err := parse(text)
	return err
}

// mustParse parses one of the embedded schemas.
func mustParse(text string) hamba.Schema {
	s, err := parse(text)
	if err != nil {
		panic(fmt.Sprintf("embedded schema: %v", err))
	}
	return s
}

var (
	keyReader   = mustParse(KeySchema)
	valueReader = mustParse(ValueSchema)
)

// definition is the command r holds.
func (r *definitionRecord) definition() task.Definition {
	d := task.Definition{Host: r.Host, Name: r.Name, Action: task.Action(r.Action), Topic: r.Topic, Start: r.Start}
	if r.Data != nil {
		d.Data = *r.Data
	}
	if f := r.Frequency; f != nil {
		d.Frequency = &task.Frequency{TimeUnit: task.TimeUnit(f.TimeUnit), Time: f.Time}
	}
	return d
}

// recordOf is the TaskDefinition of d. Its action is one of
// DefinitionAction's symbols: others (a trigger) write INSERT.
func recordOf(d *task.Definition) definitionRecord {
	r := definitionRecord{Host: d.Host, Name: d.Name, Action: string(d.Action), Topic: d.Topic, Start: d.Start}
	if d.Data != nil {
		r.Data = &d.Data
	}
	switch d.Action {
	case task.Insert, task.Update, task.Delete:
	default:
		r.Action = string(task.Insert)
	}
	if f := d.Frequency; f != nil {
		r.Frequency = &frequencyRecord{TimeUnit: string(f.TimeUnit), Time: f.Time}
	}
	return r
}
