package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

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
