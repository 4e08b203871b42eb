package store

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// audit applies an audit event: its row, and what it says about a
// file's arrival and batch.
func (a *applier) audit(r *kgo.Record) error {
	var ev record.Audit
	if err := decode(r, &ev); err != nil {
		return err
	}
	if ev.ID == "" {
		// Deterministic, so a replay from Kafka finds the same row.
		ev.ID = fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)
	}
	at := millisOr(ev.At, r)
	batchID := ""
	if ev.Batch != nil {
		batchID = ev.Batch.ID
	}
	res, err := a.execResult(`INSERT INTO audit (id, at, actor, action, object, outcome, detail, batch_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		ev.ID, at, ev.Actor, ev.Action, ev.Object, ev.Outcome, ev.Detail, batchID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		// The same event again (a producer's retry in another
		// transaction): its effects are already here.
		return nil
	}
	if ev.Arrival != nil {
		return a.arrival(&ev, at)
	}
	if ev.Batch != nil && ev.Batch.Arrival != "" {
		if batchID == "" {
			// Rejected before it was read (too large): the arrival is
			// where it shows.
			return a.exec(`UPDATE arrivals SET status = 'failed', detail = ?, node = ?, updated_at = ?
				WHERE id = ?`, ev.Detail, ev.Actor, at, ev.Batch.Arrival)
		}
		if err := a.batchArrival(&ev, batchID, at); err != nil {
			return err
		}
	}
	if ev.Batch == nil || batchID == "" {
		return nil
	}
	return a.batch(&ev, at)
}

// batchArrival settles the arrival row of a file read into batch batchID:
// a duplicate keeps a row of its own, any other file's row goes, the
// batch now showing it.
func (a *applier) batchArrival(ev *record.Audit, batchID string, at int64) error {
	if ev.Action == record.ActionFileDuplicate {
		// The file keeps a row of its own, a duplicate of the batch it
		// repeats: counted only on that batch, it would vanish, and the
		// batch's row would read as if this file had injected its rows.
		if err := a.exec(`INSERT INTO arrivals (id, file, folder, status, node, detail, first_seen_at, updated_at, batch_id)
			VALUES (?, ?, ?, 'duplicate', ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET status = 'duplicate', node = excluded.node, detail = excluded.detail,
				updated_at = excluded.updated_at, batch_id = excluded.batch_id`,
			ev.Batch.Arrival, ev.Batch.File, ev.Batch.Folder, ev.Actor, ev.Detail, at, at, batchID); err != nil {
			return err
		}
	} else if err := a.exec(`DELETE FROM arrivals WHERE id = ?`, ev.Batch.Arrival); err != nil {
		return err
	}
	return nil
}

// batch applies what an audit event says about its batch: injected,
// rejected or held, or dropped again (a duplicate).
func (a *applier) batch(ev *record.Audit, at int64) error {
	b := ev.Batch
	switch ev.Action {
	case record.ActionFileInjected, record.ActionFileRejected, record.ActionFileHeld:
		status := storetype.BatchInjected
		switch ev.Action {
		case record.ActionFileRejected:
			status = storetype.BatchRejected
		case record.ActionFileHeld:
			status = storetype.BatchHeld
		}
		var added, changed, removed, unchanged any
		lines := ""
		if d := b.Diff; d != nil {
			added, changed, removed, unchanged = d.Added, d.Changed, d.Removed, d.Unchanged
			lines = strings.Join(d.Lines, "\n")
		}
		// A file once injected stays injected: a later rejection of the
		// same content (after a mapping change, say) does not undo it.
		return a.exec(`INSERT INTO batches (id, file, folder, size, rows, rejected, status, errors, first_seen_at, updated_at,
				added, changed, removed, unchanged, diff, warnings)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET
				file = excluded.file, folder = excluded.folder, size = excluded.size,
				rows = excluded.rows, rejected = excluded.rejected,
				status = excluded.status, errors = excluded.errors, warnings = excluded.warnings,
				added = coalesce(excluded.added, added), changed = coalesce(excluded.changed, changed),
				removed = coalesce(excluded.removed, removed), unchanged = coalesce(excluded.unchanged, unchanged),
				diff = CASE WHEN excluded.added IS NULL THEN diff ELSE excluded.diff END,
				first_seen_at = min(first_seen_at, excluded.first_seen_at),
				updated_at = max(updated_at, excluded.updated_at)
			WHERE excluded.status = 'injected' OR status <> 'injected'`,
			b.ID, b.File, b.Folder, b.Size, b.Rows, b.Rejected, status, strings.Join(b.Errors, "\n"), at, at,
			added, changed, removed, unchanged, lines, strings.Join(b.Warnings, "\n"))
	case record.ActionFileDuplicate:
		// The original's status and counts stay; the batch only counts
		// the sighting. The full story (which file, when) is the audit row.
		// A file that came through a watched folder shows as a row of its
		// own (above), so the original does not move up the list as if it
		// had just come in again.
		bump := "max(updated_at, excluded.updated_at)"
		if b.Arrival != "" {
			bump = "updated_at"
		}
		return a.exec(`INSERT INTO batches (id, file, folder, size, rows, rejected, status, errors, duplicates, last_duplicate_at, first_seen_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, 'duplicate', ?, 1, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET
				duplicates = duplicates + 1,
				last_duplicate_at = max(coalesce(last_duplicate_at, 0), excluded.last_duplicate_at),
				updated_at = `+bump,
			b.ID, b.File, b.Folder, b.Size, b.Rows, b.Rejected, strings.Join(b.Errors, "\n"), at, at, at)
	}
	return nil
}

// arrival applies an event of a file's arrival. Its events are read in
// order (they share a key), except that two watchers of one shared folder
// may both report a file received: a late "received" never turns a file
// being converted back.
func (a *applier) arrival(ev *record.Audit, at int64) error {
	ar := ev.Arrival
	switch ev.Action {
	case record.ActionFileReceived:
		return a.exec(`INSERT INTO arrivals (id, file, folder, status, node, detail, first_seen_at, updated_at)
			VALUES (?, ?, ?, 'received', ?, '', ?, ?)
			ON CONFLICT (id) DO UPDATE SET status = 'received', node = excluded.node, detail = '', batch_id = '',
				first_seen_at = excluded.first_seen_at, updated_at = excluded.updated_at
			WHERE status <> 'converting'`,
			ar.ID, ar.File, ar.Folder, ev.Actor, at, at)
	case record.ActionFileConverting, record.ActionFileFailed:
		status := "converting"
		if ev.Action == record.ActionFileFailed {
			status = "failed"
		}
		return a.exec(`INSERT INTO arrivals (id, file, folder, status, node, detail, first_seen_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET status = excluded.status, node = excluded.node,
				detail = excluded.detail, batch_id = '', updated_at = excluded.updated_at`,
			ar.ID, ar.File, ar.Folder, status, ev.Actor, ev.Detail, at, at)
	case record.ActionFileWithdrawn:
		return a.exec(`DELETE FROM arrivals WHERE id = ? AND status = 'received'`, ar.ID)
	}
	return nil
}
