package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

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
