package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// auditWhere turns a filter into a WHERE clause and its arguments.
func auditWhere(f storetype.AuditFilter) (string, []any) {
	var where []string
	var args []any
	if !f.From.IsZero() {
		where = append(where, "at >= ?")
		args = append(args, f.From.UnixMilli())
	}
	if !f.To.IsZero() {
		where = append(where, "at < ?")
		args = append(args, f.To.UnixMilli())
	}
	if f.Actor != "" {
		where = append(where, "actor = ?")
		args = append(args, f.Actor)
	}
	if f.Action != "" {
		where = append(where, "action = ?")
		args = append(args, f.Action)
	}
	if f.Object != "" {
		where = append(where, "object LIKE ? ESCAPE '\\'")
		args = append(args, containing(f.Object))
	}
	if f.Outcome != "" {
		where = append(where, "outcome = ?")
		args = append(args, f.Outcome)
	}
	if len(where) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(where, " AND "), args
}

// auditOrders are the orders of the audit list.
var auditOrders = map[string]order{
	storetype.SortNewest: {name: storetype.SortNewest, keys: []sortKey{{expr: "a.at", desc: true}, {expr: "a.seq", desc: true}}},
	storetype.SortOldest: {name: storetype.SortOldest, keys: []sortKey{{expr: "a.at"}, {expr: "a.seq"}}},
}

// Audit returns the page of audit events the filter selects.
func (s *Store) Audit(ctx context.Context, f storetype.AuditFilter) (storetype.Page[storetype.AuditEvent], error) {
	var p storetype.Page[storetype.AuditEvent]
	o, err := orderOf(auditOrders, f.Sort, storetype.SortNewest)
	if err != nil {
		return p, fmt.Errorf("audit: %w", err)
	}
	where, args := auditWhere(f)
	var conds []string
	if where != "" {
		conds = []string{strings.TrimPrefix(where, " WHERE ")}
	}
	db, done := s.reader()
	defer done()
	p, err = page(ctx, db, listQuery{table: "audit", alias: "a", where: conds, args: args, order: o,
		cols: `a.id, a.at, a.actor, a.action, a.object, a.outcome, a.detail, a.batch_id`}, f.Cursor, f.Limit, scanAudit)
	if err != nil {
		return p, fmt.Errorf("audit: %w", err)
	}
	return p, nil
}

// exportChunk is how many audit events EachAudit reads at a time.
const exportChunk = 1000

// EachAudit calls fn with every audit event the filter selects, oldest
// first and with no limit, reading them a chunk at a time: an export of
// any size holds one chunk in memory, and fn, which may wait on a slow
// client, runs while the database is free to be reopened. It stops at
// fn's first error and returns it.
func (s *Store) EachAudit(ctx context.Context, f storetype.AuditFilter, fn func(storetype.AuditEvent) error) error {
	where, args := auditWhere(f)
	next := " WHERE "
	if where != "" {
		next = " AND "
	}
	var lastAt, lastSeq int64
	for first := true; ; first = false {
		q, qargs := `SELECT seq, id, at, actor, action, object, outcome, detail, batch_id FROM audit`+where, slices.Clone(args)
		if !first {
			q += next + `(at > ? OR (at = ? AND seq > ?))`
			qargs = append(qargs, lastAt, lastAt, lastSeq)
		}
		chunk, err := s.auditChunk(ctx, q+` ORDER BY at, seq LIMIT ?`, append(qargs, exportChunk)...)
		if err != nil {
			return fmt.Errorf("export audit: %w", err)
		}
		for _, e := range chunk {
			if err := fn(e.AuditEvent); err != nil {
				return err
			}
		}
		if len(chunk) < exportChunk {
			return nil
		}
		last := chunk[len(chunk)-1]
		lastAt, lastSeq = last.At.UnixMilli(), last.seq
	}
}

// seqAudit is an audit event with its place in the table.
type seqAudit struct {
	storetype.AuditEvent
	seq int64
}

// auditChunk runs q, which selects seq and then the columns scanAudit reads.
func (s *Store) auditChunk(ctx context.Context, q string, args ...any) ([]seqAudit, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(sc scanner) (seqAudit, error) {
		var e seqAudit
		var at int64
		err := sc.Scan(&e.seq, &e.ID, &at, &e.Actor, &e.Action, &e.Object, &e.Outcome, &e.Detail, &e.Batch)
		e.At = timeOf(at)
		return e, err
	}, "audit")
}

// AuditActions lists the distinct audit actions recorded, for filters.
func (s *Store) AuditActions(ctx context.Context) ([]string, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT action FROM audit ORDER BY action`)
	if err != nil {
		return nil, fmt.Errorf("audit actions: %w", err)
	}
	return collect(rows, func(sc scanner) (string, error) {
		var a string
		err := sc.Scan(&a)
		return a, err
	}, "audit actions")
}

// ActivitySince counts the files, the files rejected, the executions and
// the failed executions since a moment, as the lists filtered from that
// moment on count them (a file by when it last changed, an execution by
// when it is shown: fired, or reported while only a worker's report is
// known).
func (s *Store) ActivitySince(ctx context.Context, since time.Time) (storetype.Activity, error) {
	db, done := s.reader()
	defer done()
	a := storetype.Activity{Since: since.UTC()}
	ms := since.UnixMilli()
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM batches WHERE updated_at >= ?) + (SELECT count(*) FROM arrivals WHERE updated_at >= ?),
		(SELECT count(*) FROM batches WHERE status = 'rejected' AND updated_at >= ?),
		(SELECT count(*) FROM executions e WHERE `+execTime+` >= ?),
		(SELECT count(*) FROM executions e WHERE e.status = 'FAILED' AND `+execTime+` >= ?)`, ms, ms, ms, ms, ms).
		Scan(&a.Files, &a.Rejected, &a.Fires, &a.Failures)
	if err != nil {
		return a, fmt.Errorf("activity: %w", err)
	}
	return a, nil
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
