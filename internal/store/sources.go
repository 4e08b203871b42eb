package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// SourceTask is a task as a sync compares it: its key, its definition as
// JSON and whether it still runs.
type SourceTask struct {
	Key        string
	Definition string
	// Live is true for an active (or paused) task, false for one that
	// completed.
	Live bool
}

// Checkpoints says how far the engine has applied each input partition,
// as its checkpoints on the state topic recorded so far say: the next
// input offset to apply, by partition.
func (s *Store) Checkpoints(ctx context.Context) (map[int32]int64, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT partition, input_offset FROM engine_checkpoints`)
	if err != nil {
		return nil, fmt.Errorf("engine checkpoints: %w", err)
	}
	defer rows.Close()
	out := map[int32]int64{}
	for rows.Next() {
		var p int32
		var n int64
		if err := rows.Scan(&p, &n); err != nil {
			return nil, fmt.Errorf("engine checkpoints: %w", err)
		}
		out[p] = n
	}
	return out, rows.Err()
}

// SourceTasks calls fn with every task, live or completed, whose latest
// command from a file came from folder: from the file named file, or,
// when hosts are given instead, from any file, for tasks of those hosts.
// Deleted tasks are left out: a source holds them no more.
//
// Tasks recorded before states carried their folder (source_folder empty)
// are found by the folder of the batch that last wrote them.
func (s *Store) SourceTasks(ctx context.Context, folder, file string, hosts []string, fn func(SourceTask) error) error {
	match, args := `source_file = ?`, []any{file}
	if file == "" {
		if len(hosts) == 0 {
			return nil
		}
		match, args = `host IN (?`+strings.Repeat(", ?", len(hosts)-1)+`)`, nil
		for _, h := range hosts {
			args = append(args, h)
		}
	}
	q := `SELECT key, definition, status FROM tasks WHERE source_folder = ? AND ` + match + ` AND status <> ?
		UNION ALL
		SELECT key, definition, status FROM tasks WHERE source_folder = '' AND ` + match + ` AND status <> ?
			AND batch_id IN (SELECT id FROM batches WHERE folder = ?)`
	all := append([]any{folder}, args...)
	all = append(all, storetype.TaskDeleted)
	all = append(all, args...)
	all = append(all, storetype.TaskDeleted, folder)
	return s.eachSourceTask(ctx, q, all, fn)
}

// maxKeysPerQuery bounds the keys of one query of TasksByKey.
const maxKeysPerQuery = 500

// TasksByKey calls fn with each of the tasks of keys that is live or
// completed.
func (s *Store) TasksByKey(ctx context.Context, keys []string, fn func(SourceTask) error) error {
	for len(keys) > 0 {
		n := min(len(keys), maxKeysPerQuery)
		q := `SELECT key, definition, status FROM tasks WHERE key IN (?` + strings.Repeat(", ?", n-1) + `) AND status <> ?`
		args := make([]any, 0, n+1)
		for _, k := range keys[:n] {
			args = append(args, k)
		}
		args = append(args, storetype.TaskDeleted)
		if err := s.eachSourceTask(ctx, q, args, fn); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// Followers calls fn once with each live task (active or paused) that
// follows any of the tasks of keys: whose definition's after names one,
// as a task of its own host by name alone or as host/name.
func (s *Store) Followers(ctx context.Context, keys []string, fn func(SourceTask) error) error {
	for len(keys) > 0 {
		n := min(len(keys), maxKeysPerQuery)
		// instr spares the JSON reading of the definitions that follow
		// nothing, nearly all of them.
		q := `SELECT key, definition, status FROM tasks t WHERE status = ? AND instr(definition, '"after"') > 0
			AND EXISTS (SELECT 1 FROM json_each(t.definition, '$.after') a
				WHERE CASE WHEN instr(a.value, '/') > 0 THEN a.value ELSE t.host || '/' || a.value END IN (?` + strings.Repeat(", ?", n-1) + `))`
		args := make([]any, 0, n+1)
		args = append(args, storetype.TaskActive)
		for _, k := range keys[:n] {
			args = append(args, k)
		}
		if err := s.eachSourceTask(ctx, q, args, fn); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

func (s *Store) eachSourceTask(ctx context.Context, q string, args []any, fn func(SourceTask) error) error {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("source tasks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t SourceTask
		var status string
		if err := rows.Scan(&t.Key, &t.Definition, &status); err != nil {
			return fmt.Errorf("source tasks: %w", err)
		}
		t.Live = status == storetype.TaskActive
		if err := fn(t); err != nil {
			return err
		}
	}
	return rows.Err()
}

// HeldBatches returns the files of sync folders held for review, oldest
// first.
func (s *Store) HeldBatches(ctx context.Context) ([]storetype.Batch, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT `+batchColumns+` FROM batches b WHERE b.status = ?
		ORDER BY b.updated_at, b.id LIMIT ?`, storetype.BatchHeld, maxLimit)
	if err != nil {
		return nil, fmt.Errorf("held batches: %w", err)
	}
	return collect(rows, scanBatch, "held batches")
}
