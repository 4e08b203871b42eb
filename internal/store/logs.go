package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// DefaultMaxLogBytes is the log an execution keeps unless the Recorder is
// told otherwise: 1 MiB.
const DefaultMaxLogBytes = 1 << 20

// logLineOverhead is what a line counts against its execution's cap
// besides its message: its time, level and row.
const logLineOverhead = 32

// logs appends lines to the log of the execution fireID, then drops its
// oldest lines while it holds more than the cap. A line with no time
// takes at, the report's. A line of an unknown level makes the whole
// record malformed, before any line is stored.
func (a *applier) logs(fireID, worker string, at int64, lines []record.LogLine) error {
	if len(lines) == 0 {
		return nil
	}
	levels := make([]string, len(lines))
	for i, l := range lines {
		switch levels[i] = strings.ToLower(strings.TrimSpace(l.Level)); levels[i] {
		case "":
			levels[i] = record.LevelInfo
		case record.LevelInfo, record.LevelError:
		default:
			return malformed("log line %d: level %q is not info or error", i+1, l.Level)
		}
	}
	var bytes, last int64
	for i, l := range lines {
		if l.At == 0 {
			l.At = at
		}
		msg := CutLogMessage(l.Message)
		size := int64(len(msg)) + logLineOverhead
		if err := a.exec(`INSERT INTO execution_logs (fire_id, at, level, message, worker, size) VALUES (?, ?, ?, ?, ?, ?)`,
			fireID, l.At, levels[i], msg, worker, size); err != nil {
			return err
		}
		bytes += size
		last = max(last, l.At)
	}
	var total int64
	if err := a.queryRow(`INSERT INTO execution_log_totals (fire_id, bytes, lines, last_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (fire_id) DO UPDATE SET bytes = bytes + excluded.bytes, lines = lines + excluded.lines,
			last_at = max(last_at, excluded.last_at)
		RETURNING bytes`, []any{fireID, bytes, len(lines), last}, &total); err != nil {
		return err
	}
	if total <= a.logCap {
		return nil
	}
	return a.dropOldest(fireID, total-a.logCap)
}

// dropOldest drops the oldest lines of an execution's log until at least
// excess bytes are gone, and counts them.
func (a *applier) dropOldest(fireID string, excess int64) error {
	st, err := a.stmt(`SELECT seq, size FROM execution_logs WHERE fire_id = ? ORDER BY seq`)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(a.ctx, fireID)
	if err != nil {
		return err
	}
	var upTo, freed int64
	var n int
	for rows.Next() && freed < excess {
		var size int64
		if err := rows.Scan(&upTo, &size); err != nil {
			rows.Close()
			return err
		}
		freed += size
		n++
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := a.exec(`DELETE FROM execution_logs WHERE fire_id = ? AND seq <= ?`, fireID, upTo); err != nil {
		return err
	}
	return a.exec(`UPDATE execution_log_totals SET bytes = bytes - ?, lines = lines - ?, dropped = dropped + ? WHERE fire_id = ?`,
		freed, n, n, fireID)
}

func (a *applier) queryRow(query string, args []any, dest ...any) error {
	st, err := a.stmt(query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(a.ctx, args...).Scan(dest...)
}

// CutLogMessage bounds a log line's message to record.MaxLogMessage
// bytes, on a character boundary, saying that it was cut.
func CutLogMessage(msg string) string {
	if len(msg) <= record.MaxLogMessage {
		return msg
	}
	const mark = " … [cut]"
	cut := record.MaxLogMessage - len(mark)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + mark
}

// ExecutionLog returns the log lines of the execution fireID written
// within [from, to) (zero: unbounded), oldest first: the newest limit of
// them (0: all that are kept). It says how many of its oldest lines were
// dropped, and how many are kept.
func (s *Store) ExecutionLog(ctx context.Context, fireID string, from, to time.Time, limit int) (storetype.ExecutionLog, error) {
	var out storetype.ExecutionLog
	db, done := s.reader()
	defer done()
	err := db.QueryRowContext(ctx, `SELECT bytes, lines, dropped FROM execution_log_totals WHERE fire_id = ?`, fireID).
		Scan(&out.Bytes, &out.Kept, &out.Dropped)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("log of execution %s: %w", fireID, err)
	}
	where, args := "fire_id = ?", []any{fireID}
	if !from.IsZero() {
		where += " AND at >= ?"
		args = append(args, from.UnixMilli())
	}
	if !to.IsZero() {
		where += " AND at < ?"
		args = append(args, to.UnixMilli())
	}
	q := `SELECT at, level, message, worker FROM execution_logs WHERE ` + where + ` ORDER BY seq`
	if limit > 0 {
		q = `SELECT at, level, message, worker FROM (SELECT seq, at, level, message, worker FROM execution_logs
			WHERE ` + where + ` ORDER BY seq DESC LIMIT ?) ORDER BY seq`
		args = append(args, limit)
	}
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return out, fmt.Errorf("log of execution %s: %w", fireID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var l storetype.LogLine
		var at int64
		if err := rows.Scan(&at, &l.Level, &l.Message, &l.Worker); err != nil {
			return out, fmt.Errorf("log of execution %s: %w", fireID, err)
		}
		l.At = time.UnixMilli(at).UTC()
		out.Lines = append(out.Lines, l)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("log of execution %s: %w", fireID, err)
	}
	return out, nil
}

// DropLogsBefore deletes the logs of the executions whose last line was
// written before before, and returns how many executions' logs it
// deleted. The Recorder keeps the topics' offsets: a log deleted stays
// deleted until the database is rebuilt, and the next sweep deletes it
// again then.
func (s *Store) DropLogsBefore(ctx context.Context, before time.Time) (int64, error) {
	db, done := s.writer()
	defer done()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("drop old logs: %w", err)
	}
	defer tx.Rollback()
	cut := before.UnixMilli()
	if _, err := tx.ExecContext(ctx, `DELETE FROM execution_logs WHERE fire_id IN
		(SELECT fire_id FROM execution_log_totals WHERE last_at < ?)`, cut); err != nil {
		return 0, fmt.Errorf("drop old logs: %w", err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM execution_log_totals WHERE last_at < ?`, cut)
	if err != nil {
		return 0, fmt.Errorf("drop old logs: %w", err)
	}
	n, _ := res.RowsAffected()
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("drop old logs: %w", err)
	}
	return n, nil
}

// Unfinished returns, oldest deadline first, at most limit executions
// that have no final status and whose timeout ran out before deadline.
func (s *Store) Unfinished(ctx context.Context, deadline time.Time, limit int) ([]storetype.Unfinished, error) {
	db, done := s.reader()
	defer done()
	rows, err := db.QueryContext(ctx, `SELECT e.fire_id, e.host, e.name, e.status, e.fired_at, e.timeout, coalesce(e.status_at, 0)
		FROM executions e INDEXED BY executions_open
		WHERE `+overdueSQL+` ORDER BY e.fired_at + e.timeout LIMIT ?`, deadline.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("unfinished executions: %w", err)
	}
	defer rows.Close()
	var out []storetype.Unfinished
	for rows.Next() {
		var u storetype.Unfinished
		var fired, timeout, statusAt int64
		if err := rows.Scan(&u.FireID, &u.Host, &u.Name, &u.Status, &fired, &timeout, &statusAt); err != nil {
			return nil, fmt.Errorf("unfinished executions: %w", err)
		}
		u.FiredAt = time.UnixMilli(fired).UTC()
		u.Timeout = time.Duration(timeout) * time.Millisecond
		u.StatusAt = time.UnixMilli(statusAt).UTC()
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("unfinished executions: %w", err)
	}
	return out, nil
}
