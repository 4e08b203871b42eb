package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

const taskColumns = `t.key, t.host, t.name, t.topic, t.schedule, t.definition, t.anchor, t.next_fire,
	t.fire_count, t.last_fire, t.batch_id, t.source_file, t.source_row,
	CASE WHEN t.status = 'active' AND t.paused THEN 'paused' ELSE t.status END, t.updated_at,
	(SELECT count(*) FROM executions e WHERE e.host = t.host AND e.name = t.name),
	(SELECT max(e.scheduled_at) FROM executions e WHERE e.host = t.host AND e.name = t.name),
	coalesce((SELECT f.fault FROM task_faults f WHERE f.key = t.key), ''),
	coalesce(json_extract(nullif(t.definition, ''), '$.timezone'), ''), t.chain`

func scanTask(s scanner) (storetype.Task, error) {
	var t storetype.Task
	var anchor, next, last, lastExec sql.NullInt64
	var updated int64
	var chain string
	if err := s.Scan(&t.Key, &t.Host, &t.Name, &t.Topic, &t.Schedule, &t.Definition, &anchor, &next,
		&t.FireCount, &last, &t.Batch, &t.SourceFile, &t.SourceRow, &t.Status, &updated,
		&t.Executions, &lastExec, &t.Fault, &t.Timezone, &chain); err != nil {
		return t, err
	}
	t.Chain = chainOf(chain)
	t.Paused = t.Status == storetype.TaskPaused
	t.Anchor = timePtr(anchor)
	t.NextFire = timePtr(next)
	t.LastFire = timePtr(last)
	t.LastExecutedAt = timePtr(lastExec)
	t.UpdatedAt = timeOf(updated)
	return t, nil
}

// taskNextKey orders the tasks due soonest first, then the ended ones
// (no next fire), most recently ended first; migration 0008 indexes it.
const taskNextKey = "coalesce(t.next_fire, 9000000000000000 - t.updated_at)"

// taskOrders are the orders of the task list.
var taskOrders = map[string]order{
	storetype.TaskSortNext: {name: storetype.TaskSortNext, keys: []sortKey{{expr: taskNextKey}, {expr: "t.key"}}},
	storetype.TaskSortKey:  {name: storetype.TaskSortKey, keys: []sortKey{{expr: "t.key"}}},
}

// Tasks returns the page of tasks the filter selects.
func (s *Store) Tasks(ctx context.Context, f storetype.TaskFilter) (storetype.Page[storetype.Task], error) {
	var p storetype.Page[storetype.Task]
	o, err := orderOf(taskOrders, f.Sort, storetype.TaskSortNext)
	if err != nil {
		return p, fmt.Errorf("tasks: %w", err)
	}
	where, args, err := taskWhere(f)
	if err != nil {
		return p, fmt.Errorf("tasks: %w", err)
	}
	db, done := s.reader()
	defer done()
	// Part of a name is matched against every task: sorting the few that
	// match beats reading every task in order for them.
	p, err = page(ctx, db, listQuery{table: "tasks", alias: "t", where: where, args: args, order: o, cols: taskColumns, scan: f.Name != ""},
		f.Cursor, f.Limit, scanTask)
	if err != nil {
		return p, fmt.Errorf("tasks: %w", err)
	}
	return p, nil
}

// EachTask calls fn with every task the filter selects, however many, in
// key order, one row at a time; f.Sort, f.Cursor and f.Limit are
// ignored. It stops at fn's first error and returns it.
func (s *Store) EachTask(ctx context.Context, f storetype.TaskFilter, fn func(storetype.Task) error) error {
	where, args, err := taskWhere(f)
	if err != nil {
		return fmt.Errorf("tasks: %w", err)
	}
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT `+taskColumns+` FROM tasks t`+whereClause(where...)+` ORDER BY t.key`, args...)
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

// taskWhere is the conditions of a task filter, with their arguments.
func taskWhere(f storetype.TaskFilter) ([]string, []any, error) {
	var where []string
	var args []any
	switch f.Status {
	case "":
	case storetype.TaskActive:
		where = append(where, "t.status = 'active' AND t.paused = 0")
	case storetype.TaskPaused:
		where = append(where, "t.status = 'active' AND t.paused = 1")
	case storetype.TaskLive:
		where = append(where, "t.status = 'active'")
	case storetype.TaskCompleted, storetype.TaskDeleted:
		where = append(where, "t.status = ?")
		args = append(args, f.Status)
	default:
		return nil, nil, fmt.Errorf("status %q: %w", f.Status, storetype.ErrBadFilter)
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
		where = append(where, "t.name LIKE ? ESCAPE '\\'")
		args = append(args, containing(f.Name))
	}
	if f.Topic != "" {
		where = append(where, "t.topic = ?")
		args = append(args, f.Topic)
	}
	switch f.Fault {
	case "":
	case storetype.TaskFaultAny:
		where = append(where, "t.key IN (SELECT key FROM task_faults)")
	case storetype.TaskFaultPaused:
		where = append(where, "t.key IN (SELECT key FROM task_faults WHERE paused)")
	default:
		return nil, nil, fmt.Errorf("fault %q: %w", f.Fault, storetype.ErrBadFilter)
	}
	if !f.From.IsZero() {
		where = append(where, "t.next_fire >= ?")
		args = append(args, f.From.UnixMilli())
	}
	if !f.To.IsZero() {
		where = append(where, "t.next_fire < ?")
		args = append(args, f.To.UnixMilli())
	}
	return where, args, nil
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
	if t.NextAttempt, err = nextAttempt(ctx, db, `task = ? ORDER BY retry_at, run`, key); err != nil {
		return t, fmt.Errorf("task %s: %w", key, err)
	}
	return t, nil
}

// querier is a database or a transaction, to read one row.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// nextAttempt is the first pending retry where says, or nil.
func nextAttempt(ctx context.Context, q querier, where string, args ...any) (*storetype.NextAttempt, error) {
	var n storetype.NextAttempt
	var at int64
	err := q.QueryRowContext(ctx, `SELECT run, attempt, retry_at FROM pending_retries WHERE `+where+` LIMIT 1`, args...).Scan(&n.Run, &n.Attempt, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pending retry: %w", err)
	}
	n.At = time.UnixMilli(at).UTC()
	return &n, nil
}
