package scheduler

import (
	"encoding/json"
	"strconv"

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
	var w stateWire
	return appendState(nil, &w, st, payload)
}

// appendState appends to b the state record encodeState returns, through
// w, which it overwrites: a runner passes the same one each time, rather
// than a copy of a state and its definition going to the heap per record.
func appendState(b []byte, w *stateWire, st record.State, payload json.RawMessage) []byte {
	*w = stateWire{State: st, Definition: defWire{Definition: st.Definition, Data: payload}}
	if st.Definition.Message != nil {
		w.Definition.Data, w.Definition.Message = nil, payload
	}
	b, _ = segjson.Append(b, w, segjson.EscapeHTML|segjson.SortMapKeys) // encode's flags
	return b
}

// stateSize is about the most appendState appends for a task whose
// payload is payload.
func stateSize(payload json.RawMessage) int { return 768 + len(payload) }

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

// The two records written for every fire, its event and its execution,
// are written by hand: the same bytes as encode writes (the tests compare
// them), in a fraction of the time and with one allocation.

// encodeFired is encode(firedWire{Fired: f, Data: data}), data being
// compact JSON as encode writes it.
func encodeFired(b []byte, f *record.Fired, data json.RawMessage) []byte {
	b = append(b, `{"host":`...)
	b = record.AppendJSONString(b, f.Host)
	b = append(b, `,"name":`...)
	b = record.AppendJSONString(b, f.Name)
	b = appendInt(b, `,"scheduledAt":`, f.ScheduledAt)
	b = appendInt(b, `,"firedAt":`, f.FiredAt)
	b = append(b, `,"fireId":`...)
	b = record.AppendJSONString(b, f.FireID)
	if f.Triggered {
		b = append(b, `,"triggered":true`...)
	}
	b = appendRetry(b, f.Attempt, f.Run, f.After)
	b = append(b, `,"data":`...)
	if len(data) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, data...)
	}
	return append(b, '}')
}

// firedSize is about the most encodeFired(f, data) appends.
func firedSize(f *record.Fired, data json.RawMessage) int {
	return 160 + len(f.Host) + len(f.Name) + len(f.FireID) + len(f.Run) + len(data) + afterLen(f.After)
}

// encodeExecution appends encode(x) to b.
func encodeExecution(b []byte, x *record.Execution) []byte {
	b = append(b, `{"fireId":`...)
	b = record.AppendJSONString(b, x.FireID)
	b = append(b, `,"host":`...)
	b = record.AppendJSONString(b, x.Host)
	b = append(b, `,"name":`...)
	b = record.AppendJSONString(b, x.Name)
	b = append(b, `,"topic":`...)
	b = record.AppendJSONString(b, x.Topic)
	b = appendInt(b, `,"partition":`, int64(x.Partition))
	b = appendInt(b, `,"offset":`, x.Offset)
	b = appendInt(b, `,"scheduledAt":`, x.ScheduledAt)
	b = appendInt(b, `,"firedAt":`, x.FiredAt)
	if x.Batch != "" {
		b = append(b, `,"batch":`...)
		b = record.AppendJSONString(b, x.Batch)
	}
	if x.Timeout != 0 {
		b = appendInt(b, `,"timeout":`, x.Timeout)
	}
	if x.Collapsed != 0 {
		b = appendInt(b, `,"collapsed":`, int64(x.Collapsed))
	}
	b = appendRetry(b, x.Attempt, x.Run, x.After)
	return append(b, '}')
}

// appendRetry appends the attempt, run and after fields an event and its
// execution share, each omitted when empty.
func appendRetry(b []byte, attempt int, run string, after []string) []byte {
	if attempt != 0 {
		b = appendInt(b, `,"attempt":`, int64(attempt))
	}
	if run != "" {
		b = append(b, `,"run":`...)
		b = record.AppendJSONString(b, run)
	}
	if len(after) > 0 {
		b = append(b, `,"after":[`...)
		for i, a := range after {
			if i > 0 {
				b = append(b, ',')
			}
			b = record.AppendJSONString(b, a)
		}
		b = append(b, ']')
	}
	return b
}

// executionSize is about the most encodeExecution(x) appends.
func executionSize(x *record.Execution) int {
	return 200 + len(x.FireID) + len(x.Host) + len(x.Name) + len(x.Topic) + len(x.Batch) + len(x.Run) + afterLen(x.After)
}

func appendInt(b []byte, field string, v int64) []byte {
	return strconv.AppendInt(append(b, field...), v, 10)
}

func afterLen(after []string) int {
	n := 0
	for _, a := range after {
		n += len(a) + 3
	}
	return n
}
