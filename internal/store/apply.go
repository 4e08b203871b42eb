package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// Skipped is a record that Apply could not decode and left out. Its offset
// still counts as applied: a malformed record never stops the recorder, and
// it is reported once, not on every restart.
type Skipped struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

// Error says which record was skipped and why.
func (s Skipped) Error() string {
	return fmt.Sprintf("%s/%d@%d: %v", s.Topic, s.Partition, s.Offset, s.Err)
}

// malformedError marks a record whose content cannot be applied, as opposed
// to a database failure.
type malformedError struct{ err error }

// Error is the decoding error.
func (e *malformedError) Error() string { return e.err.Error() }

// Unwrap returns the decoding error.
func (e *malformedError) Unwrap() error { return e.err }

func malformed(format string, args ...any) error {
	return &malformedError{fmt.Errorf(format, args...)}
}

type topicPartition struct {
	topic     string
	partition int32
}

// Apply applies records read from the topics named by topics (empty names
// take their defaults) in one transaction, which also stores for each
// partition the offset after the last record applied. Records below a
// partition's stored offset were applied before and are ignored, so
// applying the same records twice changes nothing. Records of other topics
// are ignored. A record that cannot be decoded is left out and returned in
// skipped; only a database failure fails the call, and then nothing at all
// is applied.
//
// The Recorder is the one caller in production; tests and tools may call
// it with records they build themselves.
//
// Each execution keeps DefaultMaxLogBytes of log lines.
func (s *Store) Apply(ctx context.Context, topics record.Topics, recs []*kgo.Record) (skipped []Skipped, err error) {
	return s.apply(ctx, topics, recs, nil, DefaultMaxLogBytes)
}

// apply is Apply, adding to outcomes, when not nil, the final execution
// statuses stored, by outcome (see applier.outcomes), and keeping logCap
// bytes of each execution's log. The counts are meaningless when it
// fails.
func (s *Store) apply(ctx context.Context, topics record.Topics, recs []*kgo.Record, outcomes map[string]int, logCap int64) (skipped []Skipped, err error) {
	db, done := s.writer()
	defer done()
	topics = topics.WithDefaults()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("apply records: begin: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	next, err := loadOffsets(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("apply records: %w", err)
	}
	a := &applier{ctx: ctx, tx: tx, stmts: make(map[string]*sql.Stmt), outcomes: outcomes, logCap: logCap}
	defer a.close()
	advanced := make(map[topicPartition]bool)
	for _, r := range recs {
		tp := topicPartition{r.Topic, r.Partition}
		if n, ok := next[tp]; ok && r.Offset < n {
			continue
		}
		if r.Topic != topics.Audit && r.Topic != topics.State && r.Topic != topics.Executions && r.Topic != topics.Status {
			continue
		}
		var aerr error
		switch {
		case r.Attrs.IsControl():
			// A transaction marker: nothing to apply, but reading past
			// it is progress, so offsets reach the last stable offset.
		case r.Topic == topics.Audit:
			aerr = a.audit(r)
		case r.Topic == topics.State:
			aerr = a.state(r)
		case r.Topic == topics.Executions:
			aerr = a.execution(r)
		case r.Topic == topics.Status:
			aerr = a.status(r)
		}
		if aerr != nil {
			if bad := (*malformedError)(nil); errors.As(aerr, &bad) {
				skipped = append(skipped, Skipped{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: bad.err})
			} else {
				return nil, fmt.Errorf("apply %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, aerr)
			}
		}
		next[tp] = r.Offset + 1
		advanced[tp] = true
	}
	for tp := range advanced {
		if err := a.exec(`INSERT INTO topic_offsets (topic, partition, next_offset) VALUES (?, ?, ?)
			ON CONFLICT (topic, partition) DO UPDATE SET next_offset = max(next_offset, excluded.next_offset)`,
			tp.topic, tp.partition, next[tp]); err != nil {
			return nil, fmt.Errorf("apply records: store offset %s/%d: %w", tp.topic, tp.partition, err)
		}
	}
	a.close()
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("apply records: commit: %w", err)
	}
	return skipped, nil
}

func loadOffsets(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (map[topicPartition]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT topic, partition, next_offset FROM topic_offsets`)
	if err != nil {
		return nil, fmt.Errorf("load offsets: %w", err)
	}
	defer rows.Close()
	out := make(map[topicPartition]int64)
	for rows.Next() {
		var tp topicPartition
		var n int64
		if err := rows.Scan(&tp.topic, &tp.partition, &n); err != nil {
			return nil, fmt.Errorf("load offsets: %w", err)
		}
		out[tp] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load offsets: %w", err)
	}
	return out, nil
}

// Offsets reports, per topic and partition, the offset the Recorder
// resumes reading at: the one after the last record applied.
func (s *Store) Offsets(ctx context.Context) (map[string]map[int32]int64, error) {
	db, done := s.reader()
	defer done()
	flat, err := loadOffsets(ctx, db)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[int32]int64)
	for tp, n := range flat {
		if out[tp.topic] == nil {
			out[tp.topic] = make(map[int32]int64)
		}
		out[tp.topic][tp.partition] = n
	}
	return out, nil
}

// checkpointKey keys the engine's record, on each state partition, of how
// far it applied the input partition of the same number.
const checkpointKey = "#checkpoint"

// applier applies records inside one transaction, preparing each
// statement once per transaction.
type applier struct {
	ctx   context.Context
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
	// outcomes, when not nil, counts the final statuses stored, by what
	// the console shows once they are: SUCCESS, FAILED, or OVERDUE for a
	// success reported past the execution's timeout.
	outcomes map[string]int
	// logCap is the bytes of log lines an execution keeps.
	logCap int64
}

func (a *applier) stmt(query string) (*sql.Stmt, error) {
	if st, ok := a.stmts[query]; ok {
		return st, nil
	}
	st, err := a.tx.PrepareContext(a.ctx, query)
	if err != nil {
		return nil, err
	}
	a.stmts[query] = st
	return st, nil
}

func (a *applier) exec(query string, args ...any) error {
	_, err := a.execResult(query, args...)
	return err
}

func (a *applier) execResult(query string, args ...any) (sql.Result, error) {
	st, err := a.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(a.ctx, args...)
}

func (a *applier) close() {
	for q, st := range a.stmts {
		st.Close()
		delete(a.stmts, q)
	}
}

// decode unmarshals a record value that must be a JSON object.
func decode(r *kgo.Record, v any) error {
	if !bytes.HasPrefix(bytes.TrimSpace(r.Value), []byte("{")) {
		return malformed("value is not a JSON object")
	}
	if err := json.Unmarshal(r.Value, v); err != nil {
		return malformed("decode value: %v", err)
	}
	return nil
}

// millisOr returns ms, or the record's timestamp when ms is unset.
func millisOr(ms int64, r *kgo.Record) int64 {
	if ms != 0 {
		return ms
	}
	return r.Timestamp.UnixMilli()
}

// nullMillis stores an unset epoch time as NULL.
func nullMillis(ms int64) any {
	if ms == 0 {
		return nil
	}
	return ms
}

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
	}
	if ev.Batch == nil || batchID == "" {
		return nil
	}
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
	return a.exec(`INSERT INTO tasks (key, host, name, topic, schedule, definition, anchor, next_fire, fire_count, last_fire,
			batch_id, source_file, source_folder, source_row, status, updated_at, paused)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?)
		ON CONFLICT (key) DO UPDATE SET
			host = excluded.host, name = excluded.name, topic = excluded.topic,
			schedule = excluded.schedule, definition = excluded.definition,
			anchor = excluded.anchor, next_fire = excluded.next_fire,
			fire_count = excluded.fire_count, last_fire = excluded.last_fire,
			batch_id = excluded.batch_id, source_file = excluded.source_file, source_folder = excluded.source_folder,
			source_row = excluded.source_row,
			status = 'active', updated_at = excluded.updated_at, paused = excluded.paused`,
		key, host, name, d.Topic, d.When(), string(def), nullMillis(st.Anchor), nullMillis(st.NextFire),
		st.FireCount, nullMillis(st.LastFire), st.Source.Batch, st.Source.File, st.Source.Folder, st.Source.Row,
		millisOr(st.UpdatedAt, r), d.Paused())
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
	return a.exec(`INSERT INTO tasks (key, host, name, status, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET status = excluded.status, next_fire = NULL, updated_at = excluded.updated_at`,
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

func (a *applier) execution(r *kgo.Record) error {
	var ex record.Execution
	if err := decode(r, &ex); err != nil {
		return err
	}
	if ex.FireID == "" {
		ex.FireID = string(r.Key)
	}
	if ex.FireID == "" {
		return malformed("execution has no fire id")
	}
	firedAt := millisOr(ex.FiredAt, r)
	// A worker's status may have arrived first (another partition of
	// another topic): keep it. But a FAILED the engine itself recorded
	// for an attempt the brokers refused is over once a later attempt
	// fires the occurrence (same fire id, an event written at last).
	const retried = `excluded.target_offset >= 0 AND status = 'FAILED' AND status_worker = '` + engineWorker + `'
		AND coalesce(status_at, 0) <= excluded.fired_at`
	// A catch-up refused, then fired on a later attempt, is recorded again
	// with no count of its own: it keeps the one it had.
	return a.exec(`INSERT INTO executions (fire_id, host, name, topic, target_partition, target_offset,
			scheduled_at, fired_at, batch_id, status, status_at, timeout, collapsed)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'FIRED', ?, ?, ?)
		ON CONFLICT (fire_id) DO UPDATE SET
			host = excluded.host, name = excluded.name, topic = excluded.topic,
			target_partition = excluded.target_partition, target_offset = excluded.target_offset,
			scheduled_at = excluded.scheduled_at, fired_at = excluded.fired_at, batch_id = excluded.batch_id,
			timeout = excluded.timeout, collapsed = max(collapsed, excluded.collapsed),
			status = CASE WHEN `+retried+` THEN 'FIRED' ELSE status END,
			status_message = CASE WHEN `+retried+` THEN '' ELSE status_message END,
			status_worker = CASE WHEN `+retried+` THEN '' ELSE status_worker END,
			status_at = CASE WHEN `+retried+` THEN excluded.status_at ELSE status_at END`,
		ex.FireID, ex.Host, ex.Name, ex.Topic, ex.Partition, ex.Offset,
		nullMillis(ex.ScheduledAt), firedAt, ex.Batch, firedAt, max(ex.Timeout, 0), max(ex.Collapsed, 0))
}

// engineWorker is the worker the engine names in the FAILED status it
// records for an attempt at a fire the brokers refused.
const engineWorker = "scheduler"

func (a *applier) status(r *kgo.Record) error {
	var st record.Status
	if err := decode(r, &st); err != nil {
		return err
	}
	if st.FireID == "" {
		st.FireID = string(r.Key)
	}
	if st.FireID == "" {
		return malformed("status has no fire id")
	}
	status := strings.ToUpper(strings.TrimSpace(st.Status))
	at := millisOr(st.At, r)
	if status == "" && len(st.Logs) > 0 {
		return a.logs(st.FireID, st.Worker, at, st.Logs)
	}
	switch status {
	case record.StatusRunning, record.StatusSuccess, record.StatusFailed:
	default:
		return malformed("status %q is not RUNNING, SUCCESS or FAILED", st.Status)
	}
	if err := a.logs(st.FireID, st.Worker, at, st.Logs); err != nil {
		return err
	}
	if err := a.report(st, status, at); err != nil {
		return err
	}
	if status != record.StatusRunning {
		return nil
	}
	// It started at its first RUNNING, whatever came after.
	return a.exec(`UPDATE executions SET started_at = min(coalesce(started_at, ?), ?) WHERE fire_id = ?`, at, at, st.FireID)
}

// report stores a status report on an execution.
func (a *applier) report(st record.Status, status string, at int64) error {
	// The newest report wins; an older one never replaces a newer, and at
	// the same instant a final status beats RUNNING. The engine's FAILED
	// for a refused attempt never replaces a later attempt's fire. The
	// reaper's FAILED replaces no final status (a worker's report that
	// came in meanwhile, or another node's reap of the same execution),
	// and no RUNNING replaces it; a worker's final status replaces it
	// whatever its time, so that the view ends the same whichever of the
	// two it reads first (a rebuild reads the status topic anew).
	const upsert = `INSERT INTO executions (fire_id, status, status_message, status_worker, status_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (fire_id) DO UPDATE SET
			status = excluded.status, status_message = excluded.status_message,
			status_worker = excluded.status_worker, status_at = excluded.status_at
		WHERE (status = 'FIRED'
			OR excluded.status_at > status_at
			OR (excluded.status_at = status_at AND status = 'RUNNING' AND excluded.status <> 'RUNNING')
			OR (status_worker = '` + record.ReaperWorker + `' AND excluded.status_worker <> '` + record.ReaperWorker + `'
				AND excluded.status IN ('SUCCESS', 'FAILED')))
			AND NOT (excluded.status_worker = '` + engineWorker + `' AND target_offset >= 0
				AND coalesce(fired_at, 0) > excluded.status_at)
			AND NOT (excluded.status_worker = '` + record.ReaperWorker + `' AND status IN ('SUCCESS', 'FAILED'))
			AND NOT (status_worker = '` + record.ReaperWorker + `' AND status = 'FAILED' AND excluded.status = 'RUNNING')`
	if a.outcomes == nil || status == record.StatusRunning {
		return a.exec(upsert, st.FireID, status, st.Message, st.Worker, at)
	}
	// RETURNING answers the execution's fire time and timeout, and no row
	// when an older report changed nothing, so nothing is counted.
	q, err := a.stmt(upsert + ` RETURNING fired_at, timeout`)
	if err != nil {
		return err
	}
	var firedAt sql.NullInt64
	var timeout int64
	err = q.QueryRowContext(a.ctx, st.FireID, status, st.Message, st.Worker, at).Scan(&firedAt, &timeout)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	outcome := status
	if status == record.StatusSuccess && timeout > 0 && firedAt.Valid && at > firedAt.Int64+timeout {
		outcome = record.StatusOverdue
	}
	a.outcomes[outcome]++
	return nil
}
