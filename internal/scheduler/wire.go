package scheduler

import (
	"encoding/json"

	segjson "github.com/segmentio/encoding/json"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// A task's data is held as the JSON it arrived as, not as a map: it is only
// ever copied into fired events and state records, and a map per task
// would cost several times the bytes of its content.

// defWire is a definition whose data, or message, stays raw JSON.
type defWire struct {
	task.Definition
	Data    json.RawMessage `json:"data"`              // shadows Definition.Data
	Message json.RawMessage `json:"message,omitempty"` // shadows Definition.Message
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

// encode writes v as JSON. Every record the engine writes goes through it,
// two or three per fire: segmentio's encoder writes the same bytes as
// encoding/json (HTML escaped, map keys sorted) in less than half the time.
func encode(v any) []byte {
	b, _ := segjson.Marshal(v)
	return b
}

// encodeState is the state record of a task whose definition's payload
// (its data, or its message: see splitPayload) is payload.
func encodeState(st record.State, payload json.RawMessage) []byte {
	w := defWire{Definition: st.Definition, Data: payload}
	if st.Definition.Message != nil {
		w.Data, w.Message = nil, payload
	}
	return encode(stateWire{State: st, Definition: w})
}

// decodeState reads a state record: the task's definition (its Data nil,
// its Message the mark splitPayload leaves), its state and its payload as
// raw JSON. A restore decodes every task of a
// partition, so this is what a restart waits for: segmentio's decoder, a
// drop-in for encoding/json, reads these records four times as fast.
func decodeState(v []byte) (record.State, json.RawMessage, error) {
	var w stateWire
	if err := segjson.Unmarshal(v, &w); err != nil {
		return record.State{}, nil, err
	}
	w.State.Definition = w.Definition.Definition
	if len(w.Definition.Message) > 0 && string(w.Definition.Message) != "null" {
		w.State.Definition.Message = &task.Message{}
		return w.State, w.Definition.Message, nil
	}
	return w.State, rawData(w.Definition.Data), nil
}

// splitPayload takes out of d what its fires carry, as raw JSON: its
// message, leaving an empty one behind to mark the task's kind, or else
// its data map. Either is kept with the task's key, never in its shape.
func splitPayload(d *task.Definition) json.RawMessage {
	if d.Message != nil {
		v := encode(d.Message)
		d.Message = &task.Message{}
		return v
	}
	return splitData(d)
}

// splitData takes the data map out of d, as raw JSON.
func splitData(d *task.Definition) json.RawMessage {
	if d.Data == nil {
		return nil
	}
	v := encode(d.Data) // sorted keys: equal maps give equal bytes
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
