package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// executionColumns ends with what a run released: the fires whose
// execution names it (migration 0012 indexes it by run).
const executionColumns = `e.fire_id, e.host, e.name, e.topic, e.target_partition, e.target_offset, e.scheduled_at, e.fired_at,
	e.batch_id, e.status, e.status_message, e.status_worker, e.status_at, e.timeout, e.collapsed, e.started_at,
	coalesce((SELECT json_extract(nullif(t.definition, ''), '$.timezone') FROM tasks t WHERE t.key = e.host || '/' || e.name), ''),
	e.attempt, e.run, e.released_by,
	(SELECT json_group_array(r.fire_id) FROM execution_releases r WHERE r.run = coalesce(nullif(e.run, ''), e.fire_id))`

func scanExecution(s scanner) (storetype.Execution, error) {
	var e storetype.Execution
	var scheduled, fired, statusAt, started sql.NullInt64
	var timeout int64
	var after, released string
	if err := s.Scan(&e.FireID, &e.Host, &e.Name, &e.Topic, &e.TargetPartition, &e.TargetOffset,
		&scheduled, &fired, &e.Batch, &e.Status, &e.StatusMessage, &e.Worker, &statusAt, &timeout, &e.Collapsed, &started, &e.Timezone,
		&e.Attempt, &e.Run, &after, &released); err != nil {
		return e, err
	}
	e.After = jsonStrings(after)
	e.Released = jsonStrings(released)
	e.StartedAt = timePtr(started)
	e.Timeout = time.Duration(timeout) * time.Millisecond
	e.ScheduledAt = timePtr(scheduled)
	e.FiredAt = timePtr(fired)
	e.StatusAt = timePtr(statusAt)
	return e, nil
}

// execTime is the time an execution is shown at: fired, or reported
// while only a worker's report is known.
const execTime = "coalesce(e.fired_at, e.status_at)"

// executionOrders are the orders of the executions list.
var executionOrders = map[string]order{
	storetype.SortNewest: {name: storetype.SortNewest, keys: []sortKey{{expr: execTime, desc: true}, {expr: "e.fire_id", desc: true}}},
	storetype.SortOldest: {name: storetype.SortOldest, keys: []sortKey{{expr: execTime}, {expr: "e.fire_id"}}},
}

// overdueSQL holds for an execution overdue at the time given as its
// argument; executions_open indexes it.
const overdueSQL = "(e.timeout > 0 AND e.status IN ('FIRED', 'RUNNING') AND e.fired_at + e.timeout < ?)"

// executionWhere is the conditions of an execution filter, with their
// arguments.
func executionWhere(f storetype.ExecutionFilter) ([]string, []any, error) {
	var where []string
	var args []any
	now := f.Now
	if now.IsZero() {
		now = time.Now()
	}
	switch st := f.Status; st {
	case "":
	case storetype.ExecutionOverdue:
		where = append(where, overdueSQL)
		args = append(args, now.UnixMilli())
	case storetype.ExecutionFired, storetype.ExecutionRunning:
		where = append(where, "e.status = ? AND NOT coalesce("+overdueSQL+", 0)")
		args = append(args, st, now.UnixMilli())
	case storetype.ExecutionSuccess, storetype.ExecutionFailed:
		where = append(where, "e.status = ?")
		args = append(args, st)
	default:
		return nil, nil, fmt.Errorf("status %q: %w", st, storetype.ErrBadFilter)
	}
	if len(f.Recorded) > 0 {
		var in []string
		for _, st := range f.Recorded {
			switch st {
			case storetype.ExecutionFired, storetype.ExecutionRunning, storetype.ExecutionSuccess, storetype.ExecutionFailed:
			default:
				return nil, nil, fmt.Errorf("recorded status %q: %w", st, storetype.ErrBadFilter)
			}
			in = append(in, "?")
			args = append(args, st)
		}
		where = append(where, "e.status IN ("+strings.Join(in, ", ")+")")
	}
	if f.Task != "" {
		host, name, _ := task.SplitKey(f.Task)
		where = append(where, "e.host = ? AND e.name = ?")
		args = append(args, host, name)
	}
	if f.Host != "" {
		where = append(where, "e.host = ?")
		args = append(args, f.Host)
	}
	if f.Name != "" {
		where = append(where, "e.name LIKE ? ESCAPE '\\'")
		args = append(args, containing(f.Name))
	}
	if f.Topic != "" {
		where = append(where, "e.topic = ?")
		args = append(args, f.Topic)
	}
	if f.Batch != "" {
		where = append(where, "e.batch_id = ?")
		args = append(args, f.Batch)
	}
	if !f.From.IsZero() {
		where = append(where, execTime+" >= ?")
		args = append(args, f.From.UnixMilli())
	}
	if !f.To.IsZero() {
		where = append(where, execTime+" < ?")
		args = append(args, f.To.UnixMilli())
	}
	return where, args, nil
}

// Executions returns the page of executions the filter selects.
func (s *Store) Executions(ctx context.Context, f storetype.ExecutionFilter) (storetype.Page[storetype.Execution], error) {
	var p storetype.Page[storetype.Execution]
	o, err := orderOf(executionOrders, f.Sort, storetype.SortNewest)
	if err != nil {
		return p, fmt.Errorf("executions: %w", err)
	}
	where, args, err := executionWhere(f)
	if err != nil {
		return p, fmt.Errorf("executions: %w", err)
	}
	db, done := s.reader()
	defer done()
	p, err = page(ctx, db, listQuery{table: "executions", alias: "e", where: where, args: args, order: o, cols: executionColumns},
		f.Cursor, f.Limit, scanExecution)
	if err != nil {
		return p, fmt.Errorf("executions: %w", err)
	}
	return p, nil
}

// EachExecution calls fn with every execution the filter selects, in its
// order and with no limit, reading them a page at a time: an export of
// any size holds one page in memory, and fn, which may wait on a slow
// client, runs while the database is free to be reopened. It stops at
// fn's first error and returns it.
func (s *Store) EachExecution(ctx context.Context, f storetype.ExecutionFilter, fn func(storetype.Execution) error) error {
	f.Cursor, f.Limit = "", exportChunk
	if f.Now.IsZero() {
		f.Now = time.Now() // one moment for every page
	}
	for {
		p, err := s.Executions(ctx, f)
		if err != nil {
			return fmt.Errorf("export %w", err)
		}
		for _, e := range p.Rows {
			if err := fn(e); err != nil {
				return err
			}
		}
		if p.Next == "" {
			return nil
		}
		f.Cursor = p.Next
	}
}

// ExecutionByFireID returns one fire, or an error wrapping
// storetype.ErrNotFound.
func (s *Store) ExecutionByFireID(ctx context.Context, fireID string) (storetype.Execution, error) {
	db, done := s.reader()
	defer done()
	e, err := scanExecution(db.QueryRowContext(ctx, `SELECT `+executionColumns+` FROM executions e WHERE e.fire_id = ?`, fireID))
	if errors.Is(err, sql.ErrNoRows) {
		return e, fmt.Errorf("execution %s: %w", fireID, storetype.ErrNotFound)
	}
	if err != nil {
		return e, fmt.Errorf("execution %s: %w", fireID, err)
	}
	return e, nil
}
