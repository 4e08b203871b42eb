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
	fillBatch(&b, errs, diff, warnings, lastDup, added, changed, removed, unchanged, first, updated)
	return b, nil
}

// fillBatch sets what a batch holds as columns of other types.
func fillBatch(b *storetype.Batch, errs, diff, warnings string, lastDup, added, changed, removed, unchanged sql.NullInt64, first, updated int64) {
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
	// Only an injected file's valid rows went in: a file rejected whole,
	// held for review or known as a duplicate injected none.
	if b.Status == storetype.BatchInjected {
		b.Accepted = max(b.Rows-b.Rejected, 0)
	}
	b.LastDuplicateAt = timePtr(lastDup)
	b.FirstSeen = timeOf(first)
	b.UpdatedAt = timeOf(updated)
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

// fileTable is every file of the files list: the batches recorded, the
// files on their way in, and the duplicates, each with the batch it
// repeats (of).
const fileTable = `(SELECT 'b' AS kind, id, file, folder, status, duplicates, first_seen_at, updated_at, '' AS node, '' AS detail, '' AS of FROM batches
	UNION ALL SELECT 'a', id, file, folder, status, 0, first_seen_at, updated_at, node, detail, batch_id FROM arrivals)`

// fileColumns reads a file of fileTable, joined with its batch.
const fileColumns = `f.kind, f.id, f.file, f.folder, f.status, f.first_seen_at, f.updated_at, f.node, f.detail,
	coalesce(b.size, 0), coalesce(b.rows, 0), coalesce(b.rejected, 0), coalesce(b.errors, ''), coalesce(b.duplicates, 0),
	b.last_duplicate_at, CASE WHEN f.kind = 'b' THEN (SELECT count(*) FROM tasks t WHERE t.batch_id = f.id) ELSE 0 END,
	b.added, b.changed, b.removed, b.unchanged, coalesce(b.diff, ''), coalesce(b.warnings, ''),
	f.of, coalesce((SELECT o.file FROM batches o WHERE f.of <> '' AND o.id = f.of), '')`

// fileOrders are the orders of the files list.
var fileOrders = map[string]order{
	storetype.SortNewest: {name: storetype.SortNewest, keys: []sortKey{{expr: "f.updated_at", desc: true}, {expr: "f.id", desc: true}}},
	storetype.SortOldest: {name: storetype.SortOldest, keys: []sortKey{{expr: "f.updated_at"}, {expr: "f.id"}}},
}

func scanFile(s scanner) (storetype.File, error) {
	var kind string
	var b storetype.Batch
	var a storetype.Arrival
	var first, updated int64
	var errs, diff, warnings string
	var lastDup, added, changed, removed, unchanged sql.NullInt64
	if err := s.Scan(&kind, &b.ID, &b.File, &b.Folder, &b.Status, &first, &updated, &a.Node, &a.Detail,
		&b.Size, &b.Rows, &b.Rejected, &errs, &b.Duplicates, &lastDup, &b.Tasks,
		&added, &changed, &removed, &unchanged, &diff, &warnings, &a.Batch, &a.Original); err != nil {
		return storetype.File{}, err
	}
	if kind == "a" {
		a.ID, a.File, a.Folder, a.Status = b.ID, b.File, b.Folder, b.Status
		a.FirstSeen, a.UpdatedAt = timeOf(first), timeOf(updated)
		return storetype.File{Arrival: &a}, nil
	}
	fillBatch(&b, errs, diff, warnings, lastDup, added, changed, removed, unchanged, first, updated)
	return storetype.File{Batch: &b}, nil
}

// fileWhere is the conditions of a file filter, with their arguments.
func fileWhere(f storetype.FileFilter) ([]string, []any, error) {
	var where []string
	var args []any
	switch f.Status {
	case "":
	case storetype.BatchDuplicate:
		// A file whose content was injected before: recorded as a
		// duplicate, or counted on the batch it repeats.
		where = append(where, "(f.status = 'duplicate' OR f.duplicates > 0)")
	case storetype.BatchInjected, storetype.BatchRejected, storetype.BatchHeld:
		where = append(where, "f.kind = 'b' AND f.status = ?")
		args = append(args, f.Status)
	case storetype.ArrivalReceived, storetype.ArrivalConverting, storetype.ArrivalFailed:
		where = append(where, "f.kind = 'a' AND f.status = ?")
		args = append(args, f.Status)
	default:
		return nil, nil, fmt.Errorf("status %q: %w", f.Status, storetype.ErrBadFilter)
	}
	if f.Folder != "" {
		where = append(where, "f.folder = ?")
		args = append(args, f.Folder)
	}
	if f.Name != "" {
		where = append(where, "f.file LIKE ? ESCAPE '\\'")
		args = append(args, containing(f.Name))
	}
	if !f.From.IsZero() {
		where = append(where, "f.updated_at >= ?")
		args = append(args, f.From.UnixMilli())
	}
	if !f.To.IsZero() {
		where = append(where, "f.updated_at < ?")
		args = append(args, f.To.UnixMilli())
	}
	return where, args, nil
}

// Files returns the page of files, recorded or on their way in, the
// filter selects.
func (s *Store) Files(ctx context.Context, f storetype.FileFilter) (storetype.Page[storetype.File], error) {
	var p storetype.Page[storetype.File]
	o, err := orderOf(fileOrders, f.Sort, storetype.SortNewest)
	if err != nil {
		return p, fmt.Errorf("files: %w", err)
	}
	where, args, err := fileWhere(f)
	if err != nil {
		return p, fmt.Errorf("files: %w", err)
	}
	db, done := s.reader()
	defer done()
	p, err = page(ctx, db, listQuery{table: fileTable, alias: "f", where: where, args: args, order: o,
		join: ` LEFT JOIN batches b ON f.kind = 'b' AND b.id = f.id`, cols: fileColumns}, f.Cursor, f.Limit, scanFile)
	if err != nil {
		return p, fmt.Errorf("files: %w", err)
	}
	return p, nil
}

// RecentArrivals returns the files on their way in, those that failed
// before their content was recorded and the duplicates, newest first.
func (s *Store) RecentArrivals(ctx context.Context, limit int) ([]storetype.Arrival, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT id, file, folder, status, node, detail, first_seen_at, updated_at, batch_id,
		coalesce((SELECT o.file FROM batches o WHERE a.batch_id <> '' AND o.id = a.batch_id), '')
		FROM arrivals a ORDER BY updated_at DESC, id LIMIT ?`, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("recent arrivals: %w", err)
	}
	return collect(rows, func(s scanner) (storetype.Arrival, error) {
		var a storetype.Arrival
		var first, updated int64
		err := s.Scan(&a.ID, &a.File, &a.Folder, &a.Status, &a.Node, &a.Detail, &first, &updated, &a.Batch, &a.Original)
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
	t.fire_count, t.last_fire, t.batch_id, t.source_file, t.source_row,
	CASE WHEN t.status = 'active' AND t.paused THEN 'paused' ELSE t.status END, t.updated_at,
	(SELECT count(*) FROM executions e WHERE e.host = t.host AND e.name = t.name),
	(SELECT max(e.scheduled_at) FROM executions e WHERE e.host = t.host AND e.name = t.name),
	coalesce((SELECT f.fault FROM task_faults f WHERE f.key = t.key), ''),
	coalesce(json_extract(nullif(t.definition, ''), '$.timezone'), '')`

func scanTask(s scanner) (storetype.Task, error) {
	var t storetype.Task
	var anchor, next, last, lastExec sql.NullInt64
	var updated int64
	if err := s.Scan(&t.Key, &t.Host, &t.Name, &t.Topic, &t.Schedule, &t.Definition, &anchor, &next,
		&t.FireCount, &last, &t.Batch, &t.SourceFile, &t.SourceRow, &t.Status, &updated,
		&t.Executions, &lastExec, &t.Fault, &t.Timezone); err != nil {
		return t, err
	}
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

// orderOf picks the order called name, or the default when name is empty.
func orderOf(orders map[string]order, name, def string) (order, error) {
	if name == "" {
		name = def
	}
	o, ok := orders[name]
	if !ok {
		return o, fmt.Errorf("sort %q: %w", name, storetype.ErrBadFilter)
	}
	return o, nil
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
	return t, nil
}

const executionColumns = `e.fire_id, e.host, e.name, e.topic, e.target_partition, e.target_offset, e.scheduled_at, e.fired_at,
	e.batch_id, e.status, e.status_message, e.status_worker, e.status_at, e.timeout, e.collapsed, e.started_at,
	coalesce((SELECT json_extract(nullif(t.definition, ''), '$.timezone') FROM tasks t WHERE t.key = e.host || '/' || e.name), '')`

func scanExecution(s scanner) (storetype.Execution, error) {
	var e storetype.Execution
	var scheduled, fired, statusAt, started sql.NullInt64
	var timeout int64
	if err := s.Scan(&e.FireID, &e.Host, &e.Name, &e.Topic, &e.TargetPartition, &e.TargetOffset,
		&scheduled, &fired, &e.Batch, &e.Status, &e.StatusMessage, &e.Worker, &statusAt, &timeout, &e.Collapsed, &started, &e.Timezone); err != nil {
		return e, err
	}
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

func scanAudit(s scanner) (storetype.AuditEvent, error) {
	var a storetype.AuditEvent
	var at int64
	err := s.Scan(&a.ID, &at, &a.Actor, &a.Action, &a.Object, &a.Outcome, &a.Detail, &a.Batch)
	a.At = timeOf(at)
	return a, err
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

// Summary counts files, tasks and executions by state, all as of one
// moment; executions overdue at now count as OVERDUE.
func (s *Store) Summary(ctx context.Context, now time.Time) (storetype.Summary, error) {
	db, done := s.reader()
	defer done()
	var sum storetype.Summary
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return sum, fmt.Errorf("summary: %w", err)
	}
	defer tx.Rollback()
	counts := []struct {
		what  string
		query string
		args  []any
		into  map[string]*int
	}{
		{"files", `SELECT status, count(*) FROM batches GROUP BY status`, nil, map[string]*int{
			storetype.BatchInjected:  &sum.FilesInjected,
			storetype.BatchRejected:  &sum.FilesRejected,
			storetype.BatchDuplicate: &sum.FilesDuplicate,
			storetype.BatchHeld:      &sum.FilesHeld,
		}},
		{"arrivals", `SELECT status, count(*) FROM arrivals GROUP BY status`, nil, map[string]*int{
			storetype.ArrivalFailed: &sum.FilesFailed,
		}},
		{"tasks", `SELECT CASE WHEN status = 'active' AND paused THEN 'paused' ELSE status END, count(*) FROM tasks GROUP BY status, paused`, nil, map[string]*int{
			storetype.TaskActive:    &sum.TasksActive,
			storetype.TaskPaused:    &sum.TasksPaused,
			storetype.TaskCompleted: &sum.TasksCompleted,
			storetype.TaskDeleted:   &sum.TasksDeleted,
		}},
		{"executions", `SELECT status, count(*) FROM executions GROUP BY status`, nil, map[string]*int{
			storetype.ExecutionFired:   &sum.ExecutionsFired,
			storetype.ExecutionRunning: &sum.ExecutionsRunning,
			storetype.ExecutionSuccess: &sum.ExecutionsSuccess,
			storetype.ExecutionFailed:  &sum.ExecutionsFailed,
		}},
	}
	for _, c := range counts {
		if err := countInto(ctx, tx, c.query, c.args, c.into); err != nil {
			return sum, fmt.Errorf("summary of %s: %w", c.what, err)
		}
	}
	// The overdue are counted apart from what they were recorded as.
	var overdueFired, overdueRunning int
	// Its own index: without it, a node whose workers never report reads
	// every FIRED execution for the few with a timeout.
	if err := countInto(ctx, tx, `SELECT e.status, count(*) FROM executions e INDEXED BY executions_open WHERE `+overdueSQL+` GROUP BY e.status`,
		[]any{now.UnixMilli()}, map[string]*int{storetype.ExecutionFired: &overdueFired, storetype.ExecutionRunning: &overdueRunning}); err != nil {
		return sum, fmt.Errorf("summary of overdue executions: %w", err)
	}
	sum.ExecutionsFired -= overdueFired
	sum.ExecutionsRunning -= overdueRunning
	sum.ExecutionsOverdue = overdueFired + overdueRunning
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

// countInto runs a query of (key, count) rows and sets the counts of the
// keys into names.
func countInto(ctx context.Context, tx *sql.Tx, query string, args []any, into map[string]*int) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var n int
		if err := rows.Scan(&key, &n); err != nil {
			return err
		}
		if p := into[key]; p != nil {
			*p = n
		}
	}
	return rows.Err()
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
