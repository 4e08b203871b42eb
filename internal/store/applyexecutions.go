package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
)

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
	releasedBy := ""
	if len(ex.After) > 0 {
		b, err := json.Marshal(ex.After)
		if err != nil {
			return malformed("encode after: %v", err)
		}
		releasedBy = string(b)
	}
	run := ex.Run
	if run == ex.FireID {
		run = "" // a first attempt's run is its own fire id
	}
	// A catch-up refused, then fired on a later attempt, is recorded again
	// with no count of its own: it keeps the one it had.
	if err := a.exec(`INSERT INTO executions (fire_id, host, name, topic, target_partition, target_offset,
			scheduled_at, fired_at, batch_id, status, status_at, timeout, collapsed, attempt, run, released_by)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'FIRED', ?, ?, ?, ?, ?, ?)
		ON CONFLICT (fire_id) DO UPDATE SET
			host = excluded.host, name = excluded.name, topic = excluded.topic,
			target_partition = excluded.target_partition, target_offset = excluded.target_offset,
			scheduled_at = excluded.scheduled_at, fired_at = excluded.fired_at, batch_id = excluded.batch_id,
			timeout = excluded.timeout, collapsed = max(collapsed, excluded.collapsed),
			attempt = excluded.attempt, run = excluded.run, released_by = excluded.released_by,
			status = CASE WHEN `+retried+` THEN 'FIRED' ELSE status END,
			status_message = CASE WHEN `+retried+` THEN '' ELSE status_message END,
			status_worker = CASE WHEN `+retried+` THEN '' ELSE status_worker END,
			status_at = CASE WHEN `+retried+` THEN excluded.status_at ELSE status_at END`,
		ex.FireID, ex.Host, ex.Name, ex.Topic, ex.Partition, ex.Offset,
		nullMillis(ex.ScheduledAt), firedAt, ex.Batch, firedAt, max(ex.Timeout, 0), max(ex.Collapsed, 0),
		max(ex.Attempt, 1), run, releasedBy); err != nil {
		return err
	}
	// What each predecessor's run released, to be read from the run.
	for _, pred := range ex.After {
		if err := a.exec(`INSERT INTO execution_releases (run, fire_id) VALUES (?, ?) ON CONFLICT DO NOTHING`, pred, ex.FireID); err != nil {
			return err
		}
	}
	return nil
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

// outcomeWatched holds, in an update of executions, for an execution
// whose final status the engine acts on: a retry, or a fire of a task
// with a retry policy or followers. The engine decides such an attempt
// by its first final status. A task known only by its end has no
// definition: nothing to read.
const outcomeWatched = `(executions.attempt > 1
	OR EXISTS (SELECT 1 FROM task_edges e WHERE e.pred = executions.host || '/' || executions.name)
	OR EXISTS (SELECT 1 FROM tasks t WHERE t.key = executions.host || '/' || executions.name
		AND json_extract(nullif(t.definition, ''), '$.retry') IS NOT NULL))`

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
	// An attempt whose outcome the engine acts on (its task has a retry
	// policy or tasks that follow it, or it is a retry) keeps its worker's
	// first final status, as the engine does: a second report shows
	// nothing the chain did not do.
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
			AND NOT (status_worker = '` + record.ReaperWorker + `' AND status = 'FAILED' AND excluded.status = 'RUNNING')
			AND NOT (status IN ('SUCCESS', 'FAILED') AND status_worker NOT IN ('` + record.ReaperWorker + `', '` + engineWorker + `')
				AND ` + outcomeWatched + `)`
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
