package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// Limits of the list queries.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

func clampLimit(n int) int {
	switch {
	case n <= 0:
		return defaultLimit
	case n > maxLimit:
		return maxLimit
	}
	return n
}

// timeOf converts epoch milliseconds to UTC time.
func timeOf(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// timePtr converts a nullable epoch column.
func timePtr(ms sql.NullInt64) *time.Time {
	if !ms.Valid {
		return nil
	}
	t := timeOf(ms.Int64)
	return &t
}

type scanner interface{ Scan(...any) error }

const batchColumns = `b.id, b.file, b.folder, b.size, b.rows, b.rejected, b.status, b.errors,
	b.duplicates, b.last_duplicate_at, b.first_seen_at, b.updated_at,
	(SELECT count(*) FROM tasks t WHERE t.batch_id = b.id),
	b.added, b.changed, b.removed, b.unchanged, b.diff, b.warnings`

func scanBatch(s scanner) (storetype.Batch, error) {
	var b storetype.Batch
	var errs, diff, warnings string
	var lastDup, added, changed, removed, unchanged sql.NullInt64
	var first, updated int64
	if err := s.Scan(&b.ID, &b.File, &b.Folder, &b.Size, &b.Rows, &b.Rejected, &b.Status, &errs,
		&b.Duplicates, &lastDup, &first, &updated, &b.Tasks,
		&added, &changed, &removed, &unchanged, &diff, &warnings); err != nil {
		return b, err
	}
	if warnings != "" {
		b.Warnings = strings.Split(warnings, "\n")
	}
	if added.Valid {
		b.Diff = &storetype.Diff{Added: int(added.Int64), Changed: int(changed.Int64), Removed: int(removed.Int64),
			Unchanged: int(unchanged.Int64)}
		if diff != "" {
			b.Diff.Lines = strings.Split(diff, "\n")
		}
	}
	if errs != "" {
		b.Errors = strings.Split(errs, "\n")
	}
	b.Accepted = max(b.Rows-b.Rejected, 0)
	if b.Status == storetype.BatchRejected {
		b.Accepted = 0 // rejected whole: its valid rows were not injected either
	}
	b.LastDuplicateAt = timePtr(lastDup)
	b.FirstSeen = timeOf(first)
	b.UpdatedAt = timeOf(updated)
	return b, nil
}

// BatchByID returns the file whose content has the SHA-256 id, with the
// paths its files were moved to (Kept) from the audit trail, or an error
// wrapping storetype.ErrNotFound.
func (s *Store) BatchByID(ctx context.Context, id string) (storetype.Batch, error) {
	db, done := s.reader()
	defer done()
	b, err := scanBatch(db.QueryRowContext(ctx, `SELECT `+batchColumns+` FROM batches b WHERE b.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return b, fmt.Errorf("batch %s: %w", id, storetype.ErrNotFound)
	}
	if err != nil {
		return b, fmt.Errorf("batch %s: %w", id, err)
	}
	rows, err := db.QueryContext(ctx, `SELECT object FROM audit WHERE batch_id = ? AND action = ?
		ORDER BY at DESC, seq DESC LIMIT ?`, id, record.ActionFileMoved, maxKept)
	if err != nil {
		return b, fmt.Errorf("batch %s: moves: %w", id, err)
	}
	b.Kept, err = collect(rows, func(s scanner) (string, error) {
		var path string
		return path, s.Scan(&path)
	}, "batch "+id+": moves")
	return b, err
}

// maxKept bounds the paths BatchByID lists for a file dropped over and
// over.
const maxKept = 100

// RecentBatches returns the files most recently recorded or dropped again,
// newest first.
func (s *Store) RecentBatches(ctx context.Context, limit int) ([]storetype.Batch, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT `+batchColumns+` FROM batches b
		ORDER BY b.updated_at DESC, b.id LIMIT ?`, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("recent batches: %w", err)
	}
	return collect(rows, scanBatch, "recent batches")
}

// RecentArrivals returns the files on their way in and those that failed
// before their content was recorded, newest first.
func (s *Store) RecentArrivals(ctx context.Context, limit int) ([]storetype.Arrival, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT id, file, folder, status, node, detail, first_seen_at, updated_at
		FROM arrivals ORDER BY updated_at DESC, id LIMIT ?`, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("recent arrivals: %w", err)
	}
	return collect(rows, func(s scanner) (storetype.Arrival, error) {
		var a storetype.Arrival
		var first, updated int64
		err := s.Scan(&a.ID, &a.File, &a.Folder, &a.Status, &a.Node, &a.Detail, &first, &updated)
		a.FirstSeen, a.UpdatedAt = timeOf(first), timeOf(updated)
		return a, err
	}, "recent arrivals")
}

// BatchInjected reports whether a file with this batch id has been
// injected, for the injector's dedupe.
func (s *Store) BatchInjected(ctx context.Context, id string) (bool, error) {
	db, done := s.reader()
	defer done()
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM batches WHERE id = ? AND status = 'injected'`, id).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("batch %s injected: %w", id, err)
	}
	return n > 0, nil
}

const taskColumns = `t.key, t.host, t.name, t.topic, t.schedule, t.definition, t.anchor, t.next_fire,
	t.fire_count, t.last_fire, t.batch_id, t.source_file, t.source_row, t.status, t.updated_at,
	(SELECT count(*) FROM executions e WHERE e.host = t.host AND e.name = t.name),
	(SELECT max(e.scheduled_at) FROM executions e WHERE e.host = t.host AND e.name = t.name),
	coalesce(json_extract(nullif(t.definition, ''), '$.active') = 0, 0),
	coalesce((SELECT f.fault FROM task_faults f WHERE f.key = t.key), '')`

func scanTask(s scanner) (storetype.Task, error) {
	var t storetype.Task
	var anchor, next, last, lastExec sql.NullInt64
	var updated int64
	if err := s.Scan(&t.Key, &t.Host, &t.Name, &t.Topic, &t.Schedule, &t.Definition, &anchor, &next,
		&t.FireCount, &last, &t.Batch, &t.SourceFile, &t.SourceRow, &t.Status, &updated,
		&t.Executions, &lastExec, &t.Paused, &t.Fault); err != nil {
		return t, err
	}
	t.Anchor = timePtr(anchor)
	t.NextFire = timePtr(next)
	t.LastFire = timePtr(last)
	t.LastExecutedAt = timePtr(lastExec)
	t.UpdatedAt = timeOf(updated)
	return t, nil
}

// Tasks returns the tasks the filter selects: those due soonest first,
// then ended tasks, most recently ended first.
func (s *Store) Tasks(ctx context.Context, f storetype.TaskFilter) ([]storetype.Task, error) {
	db, done := s.reader()
	defer done()
	where, args := taskWhere(f)
	q := `SELECT ` + taskColumns + ` FROM tasks t` + where +
		` ORDER BY t.next_fire IS NULL, t.next_fire, t.updated_at DESC, t.key LIMIT ?`
	rows, err := db.QueryContext(ctx, q, append(args, clampLimit(f.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	return collect(rows, scanTask, "tasks")
}

// EachTask calls fn with every task the filter selects, however many, in
// key order, one row at a time; f.Limit is ignored. It stops at fn's
// first error and returns it.
func (s *Store) EachTask(ctx context.Context, f storetype.TaskFilter, fn func(storetype.Task) error) error {
	db, done := s.reader()
	defer done()
	where, args := taskWhere(f)
	rows, err := db.QueryContext(ctx, `SELECT `+taskColumns+` FROM tasks t`+where+` ORDER BY t.key`, args...)
	if err != nil {
		return fmt.Errorf("tasks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return fmt.Errorf("tasks: %w", err)
		}
		if err := fn(t); err != nil {
			return err
		}
	}
	return rows.Err()
}

// taskWhere is the WHERE clause of a task filter, with its arguments.
func taskWhere(f storetype.TaskFilter) (string, []any) {
	var where []string
	var args []any
	if f.Status != "" {
		where = append(where, "t.status = ?")
		args = append(args, f.Status)
	}
	if f.Batch != "" {
		where = append(where, "t.batch_id = ?")
		args = append(args, f.Batch)
	}
	if f.Host != "" {
		where = append(where, "t.host = ?")
		args = append(args, f.Host)
	}
	if f.Name != "" {
		where = append(where, "instr(lower(t.name), lower(?)) > 0")
		args = append(args, f.Name)
	}
	if f.Topic != "" {
		where = append(where, "t.topic = ?")
		args = append(args, f.Topic)
	}
	if f.Paused {
		where = append(where, "t.status = 'active' AND json_extract(nullif(t.definition, ''), '$.active') = 0")
	}
	if len(where) == 0 {
		return "", nil
	}
	return ` WHERE ` + strings.Join(where, " AND "), args
}

// TasksByBatch returns up to limit tasks whose latest command came from
// the file with this batch id.
func (s *Store) TasksByBatch(ctx context.Context, batchID string, limit int) ([]storetype.Task, error) {
	return s.Tasks(ctx, storetype.TaskFilter{Batch: batchID, Limit: limit})
}

// TaskByKey returns the task with key host/name, or an error wrapping
// storetype.ErrNotFound.
func (s *Store) TaskByKey(ctx context.Context, key string) (storetype.Task, error) {
	db, done := s.reader()
	defer done()
	t, err := scanTask(db.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks t WHERE t.key = ?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("task %s: %w", key, storetype.ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("task %s: %w", key, err)
	}
	return t, nil
}

const executionColumns = `fire_id, host, name, topic, target_partition, target_offset, scheduled_at, fired_at,
	batch_id, status, status_message, status_worker, status_at, timeout`

func scanExecution(s scanner) (storetype.Execution, error) {
	var e storetype.Execution
	var scheduled, fired, statusAt sql.NullInt64
	var timeout int64
	if err := s.Scan(&e.FireID, &e.Host, &e.Name, &e.Topic, &e.TargetPartition, &e.TargetOffset,
		&scheduled, &fired, &e.Batch, &e.Status, &e.StatusMessage, &e.Worker, &statusAt, &timeout); err != nil {
		return e, err
	}
	e.Timeout = time.Duration(timeout) * time.Millisecond
	e.ScheduledAt = timePtr(scheduled)
	e.FiredAt = timePtr(fired)
	e.StatusAt = timePtr(statusAt)
	return e, nil
}

// RecentExecutions returns the latest fires, newest first (by fire time,
// or report time while only a worker's report is known).
func (s *Store) RecentExecutions(ctx context.Context, limit int) ([]storetype.Execution, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT `+executionColumns+` FROM executions
		ORDER BY coalesce(fired_at, status_at) DESC, scheduled_at DESC, fire_id LIMIT ?`, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("recent executions: %w", err)
	}
	return collect(rows, scanExecution, "recent executions")
}

// ExecutionsByTask returns the latest fires of the task with key
// host/name, latest scheduled first.
func (s *Store) ExecutionsByTask(ctx context.Context, key string, limit int) ([]storetype.Execution, error) {
	db, done := s.reader()
	defer done()
	host, name, _ := task.SplitKey(key)
	rows, err := db.QueryContext(ctx, `SELECT `+executionColumns+` FROM executions
		WHERE host = ? AND name = ? ORDER BY scheduled_at DESC, fire_id LIMIT ?`, host, name, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("executions of task %s: %w", key, err)
	}
	return collect(rows, scanExecution, "executions of task "+key)
}

// ExecutionsByBatch returns the latest fires of the tasks a file created,
// newest first.
func (s *Store) ExecutionsByBatch(ctx context.Context, batchID string, limit int) ([]storetype.Execution, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT `+executionColumns+` FROM executions
		WHERE batch_id = ? ORDER BY coalesce(fired_at, status_at) DESC, scheduled_at DESC, fire_id LIMIT ?`, batchID, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("executions of file %s: %w", batchID, err)
	}
	return collect(rows, scanExecution, "executions of file "+batchID)
}

// ExecutionByFireID returns one fire, or an error wrapping
// storetype.ErrNotFound.
func (s *Store) ExecutionByFireID(ctx context.Context, fireID string) (storetype.Execution, error) {
	db, done := s.reader()
	defer done()
	e, err := scanExecution(db.QueryRowContext(ctx, `SELECT `+executionColumns+` FROM executions WHERE fire_id = ?`, fireID))
	if errors.Is(err, sql.ErrNoRows) {
		return e, fmt.Errorf("execution %s: %w", fireID, storetype.ErrNotFound)
	}
	if err != nil {
		return e, fmt.Errorf("execution %s: %w", fireID, err)
	}
	return e, nil
}

func scanAudit(s scanner) (storetype.AuditEvent, error) {
	var a storetype.AuditEvent
	var at int64
	err := s.Scan(&a.ID, &at, &a.Actor, &a.Action, &a.Object, &a.Outcome, &a.Detail, &a.Batch)
	a.At = timeOf(at)
	return a, err
}

// RecentAudit returns the latest audit events, newest first.
func (s *Store) RecentAudit(ctx context.Context, limit int) ([]storetype.AuditEvent, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT id, at, actor, action, object, outcome, detail, batch_id
		FROM audit ORDER BY at DESC, seq DESC LIMIT ?`, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("recent audit: %w", err)
	}
	return collect(rows, scanAudit, "recent audit")
}

// AuditByBatch returns the audit events about one file, oldest first.
func (s *Store) AuditByBatch(ctx context.Context, batchID string, limit int) ([]storetype.AuditEvent, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT id, at, actor, action, object, outcome, detail, batch_id
		FROM audit WHERE batch_id = ? ORDER BY at, seq LIMIT ?`, batchID, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("audit of batch %s: %w", batchID, err)
	}
	return collect(rows, scanAudit, "audit of batch "+batchID)
}

// AuditRecorded reports whether the audit event with this id is stored.
func (s *Store) AuditRecorded(ctx context.Context, id string) (bool, error) {
	db, done := s.reader()
	defer done()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM audit WHERE id = ?`, id).Scan(&n); err != nil {
		return false, fmt.Errorf("audit %s recorded: %w", id, err)
	}
	return n > 0, nil
}

// Summary counts files, tasks and executions by status, all as of one
// moment.
func (s *Store) Summary(ctx context.Context) (storetype.Summary, error) {
	db, done := s.reader()
	defer done()
	var sum storetype.Summary
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return sum, fmt.Errorf("summary: %w", err)
	}
	defer tx.Rollback()
	counts := []struct {
		table string
		into  map[string]*int
	}{
		{"batches", map[string]*int{
			storetype.BatchInjected:  &sum.FilesInjected,
			storetype.BatchRejected:  &sum.FilesRejected,
			storetype.BatchDuplicate: &sum.FilesDuplicate,
		}},
		{"tasks", map[string]*int{
			storetype.TaskActive:    &sum.TasksActive,
			storetype.TaskCompleted: &sum.TasksCompleted,
			storetype.TaskDeleted:   &sum.TasksDeleted,
		}},
		{"executions", map[string]*int{
			"FIRED":   &sum.ExecutionsFired,
			"RUNNING": &sum.ExecutionsRunning,
			"SUCCESS": &sum.ExecutionsSuccess,
			"FAILED":  &sum.ExecutionsFailed,
		}},
	}
	for _, c := range counts {
		// The table names are our own constants.
		rows, err := tx.QueryContext(ctx, `SELECT status, count(*) FROM `+c.table+` GROUP BY status`)
		if err != nil {
			return sum, fmt.Errorf("summary of %s: %w", c.table, err)
		}
		for rows.Next() {
			var status string
			var n int
			if err := rows.Scan(&status, &n); err != nil {
				rows.Close()
				return sum, fmt.Errorf("summary of %s: %w", c.table, err)
			}
			if p := c.into[status]; p != nil {
				*p = n
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return sum, fmt.Errorf("summary of %s: %w", c.table, err)
		}
	}
	// A file dropped again is counted on the batch it repeats.
	var again int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(duplicates), 0) FROM batches`).Scan(&again); err != nil {
		return sum, fmt.Errorf("summary of duplicates: %w", err)
	}
	sum.FilesDuplicate += again
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM task_faults WHERE paused`).Scan(&sum.TasksPausedByFaultPolicy); err != nil {
		return sum, fmt.Errorf("summary of task faults: %w", err)
	}
	return sum, nil
}

func collect[T any](rows *sql.Rows, scan func(scanner) (T, error), what string) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
