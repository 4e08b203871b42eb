package scheduler

import (
	"encoding/json"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// A task's data is held as the JSON it arrived as, not as a map: it is only
// ever copied into fired events and state records, and a map per task
// would cost several times the bytes of its content.

// defWire is a definition whose data stays raw JSON.
type defWire struct {
	task.Definition
	Data json.RawMessage `json:"data"` // shadows Definition.Data
}

// stateWire is record.State with its definition's data raw.
type stateWire struct {
	record.State
	Definition defWire `json:"definition"` // shadows State.Definition
}

// firedWire is record.Fired with the data raw.
type firedWire struct {
	record.Fired
	Data json.RawMessage `json:"data"`
}

func encodeState(e *entry) []byte {
	v, _ := json.Marshal(stateWire{State: e.st, Definition: defWire{Definition: e.st.Definition, Data: e.data}})
	return v
}

// decodeState reads a state record into e.
func (r *runner) decodeState(v []byte, e *entry) error {
	var w stateWire
	if err := json.Unmarshal(v, &w); err != nil {
		return err
	}
	e.st = w.State
	e.st.Definition = w.Definition.Definition
	e.data = rawData(w.Definition.Data)
	r.internStrings(&e.st)
	return nil
}

// splitData takes the data map out of d, as raw JSON.
func splitData(d *task.Definition) json.RawMessage {
	if d.Data == nil {
		return nil
	}
	v, _ := json.Marshal(d.Data) // sorted keys: equal maps give equal bytes
	d.Data = nil
	return v
}

// rawData keeps only data worth keeping: nothing for null.
func rawData(v json.RawMessage) json.RawMessage {
	if string(v) == "null" || len(v) == 0 {
		return nil
	}
	return v
}

// internStrings makes tasks share the strings many of them hold the same:
// the batch, file and actor of their source, their host and topic.
func (r *runner) internStrings(st *record.State) {
	for _, s := range []*string{&st.Source.Batch, &st.Source.File, &st.Source.Actor,
		&st.Definition.Host, &st.Definition.Topic, &st.Definition.Timezone, &st.Definition.Cron} {
		if *s == "" {
			continue
		}
		if v, ok := r.strs[*s]; ok {
			*s = v
		} else {
			r.strs[*s] = *s
		}
	}
}
