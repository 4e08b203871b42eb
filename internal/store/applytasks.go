package store

import (
	"encoding/json"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

func (a *applier) state(r *kgo.Record) error {
	key := string(r.Key)
	if key == checkpointKey && len(r.Value) > 0 {
		var c struct {
			InputOffset int64 `json:"inputOffset"`
		}
		if err := decode(r, &c); err != nil {
			return err
		}
		return a.exec(`INSERT INTO engine_checkpoints (partition, input_offset) VALUES (?, ?)
			ON CONFLICT (partition) DO UPDATE SET input_offset = max(input_offset, excluded.input_offset)`,
			r.Partition, c.InputOffset)
	}
	if id, ok := strings.CutPrefix(key, record.RunKeyPrefix); ok {
		return a.run(r, id)
	}
	if strings.HasPrefix(key, "#") {
		return nil // the engine's own records
	}
	if len(r.Value) == 0 {
		return a.stateEnd(r, key)
	}
	var st record.State
	if err := decode(r, &st); err != nil {
		return err
	}
	d := &st.Definition
	if key == "" {
		key = d.Key()
	}
	host, name, ok := task.SplitKey(key)
	if !ok || host == "" {
		return malformed("key %q is not host/name", key)
	}
	if d.Host != "" {
		host = d.Host
	}
	if d.Name != "" {
		name = d.Name
	}
	if err := a.taskFault(key, st.Fault); err != nil {
		return err
	}
	def, err := json.Marshal(d)
	if err != nil {
		return malformed("encode definition: %v", err)
	}
	chain := ""
	if st.Chain != nil {
		b, err := json.Marshal(st.Chain)
		if err != nil {
			return malformed("encode chain: %v", err)
		}
		chain = string(b)
	}
	// A name alone in after is a task of the key's host.
	follower := *d
	follower.Host = host
	if err := a.taskEdges(key, follower.Predecessors()); err != nil {
		return err
	}
	return a.exec(`INSERT INTO tasks (key, host, name, topic, schedule, definition, anchor, next_fire, fire_count, last_fire,
			batch_id, source_file, source_folder, source_row, status, updated_at, paused, chain)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET
			host = excluded.host, name = excluded.name, topic = excluded.topic,
			schedule = excluded.schedule, definition = excluded.definition,
			anchor = excluded.anchor, next_fire = excluded.next_fire,
			fire_count = excluded.fire_count, last_fire = excluded.last_fire,
			batch_id = excluded.batch_id, source_file = excluded.source_file, source_folder = excluded.source_folder,
			source_row = excluded.source_row,
			status = 'active', updated_at = excluded.updated_at, paused = excluded.paused, chain = excluded.chain`,
		key, host, name, d.Topic, d.When(), string(def), nullMillis(st.Anchor), nullMillis(st.NextFire),
		st.FireCount, nullMillis(st.LastFire), st.Source.Batch, st.Source.File, st.Source.Folder, st.Source.Row,
		millisOr(st.UpdatedAt, r), d.Paused(), chain)
}

// taskEdges records that the task with key follows preds, in that order,
// as its latest state says: none for a task that follows no other, or
// that ended.
func (a *applier) taskEdges(key string, preds []string) error {
	if err := a.exec(`DELETE FROM task_edges WHERE succ = ?`, key); err != nil {
		return err
	}
	for i, pred := range preds {
		if err := a.exec(`INSERT INTO task_edges (succ, pred, position) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, key, pred, i); err != nil {
			return err
		}
	}
	return nil
}

// stateEnd applies a tombstone: the task ended, for the reason in its
// HeaderEnd header (deleted when the header is missing or unknown).
func (a *applier) stateEnd(r *kgo.Record, key string) error {
	host, name, ok := task.SplitKey(key)
	if !ok || host == "" {
		return malformed("tombstone key %q is not host/name", key)
	}
	status := storetype.TaskDeleted
	for _, h := range r.Headers {
		if h.Key == record.HeaderEnd && string(h.Value) == record.EndCompleted {
			status = storetype.TaskCompleted
		}
	}
	if err := a.taskFault(key, nil); err != nil {
		return err
	}
	// An ended task follows nothing any more; the tasks that follow it
	// still name it.
	if err := a.taskEdges(key, nil); err != nil {
		return err
	}
	// Nor is it tried again: the engine drops a deleted task's retries.
	if err := a.exec(`DELETE FROM pending_retries WHERE task = ?`, key); err != nil {
		return err
	}
	return a.exec(`INSERT INTO tasks (key, host, name, status, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET status = excluded.status, next_fire = NULL, chain = '', updated_at = excluded.updated_at`,
		key, host, name, status, r.Timestamp.UnixMilli())
}

// taskFault records what the engine's fault policy holds of the task with
// key, as its latest state says: nil clears it.
func (a *applier) taskFault(key string, f *record.Fault) error {
	if f == nil {
		return a.exec(`DELETE FROM task_faults WHERE key = ?`, key)
	}
	return a.exec(`INSERT INTO task_faults (key, fault, paused, at) VALUES (?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET fault = excluded.fault, paused = excluded.paused, at = excluded.at`,
		key, f.Description(), f.Paused, f.At)
}

// run stores what a watched run's record says of its next attempt: the
// attempt and when it fires while a retry waits, nothing once it fired or
// the run ended.
func (a *applier) run(r *kgo.Record, id string) error {
	var u record.RunState
	if len(r.Value) > 0 {
		if err := decode(r, &u); err != nil {
			return err
		}
	}
	if u.RetryAt == 0 {
		return a.exec(`DELETE FROM pending_retries WHERE run = ?`, id)
	}
	return a.exec(`INSERT INTO pending_retries (run, task, attempt, retry_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (run) DO UPDATE SET task = excluded.task, attempt = excluded.attempt, retry_at = excluded.retry_at`,
		id, u.Key, u.Attempt+1, u.RetryAt)
}
