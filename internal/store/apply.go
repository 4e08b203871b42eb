package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
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
	return s.apply(ctx, topics, recs, nil, DefaultMaxLogBytes, nil)
}

// apply is Apply, adding to outcomes, when not nil, the final execution
// statuses stored, by outcome (see applier.outcomes), and keeping logCap
// bytes of each execution's log. The counts are meaningless when it
// fails. pause, when not nil, is called before each record: the
// Recorder waits there while the scheduler fires late, inside the
// transaction, so that giving way costs no commit.
func (s *Store) apply(ctx context.Context, topics record.Topics, recs []*kgo.Record, outcomes map[string]int, logCap int64, pause func()) (skipped []Skipped, err error) {
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
		if pause != nil {
			pause()
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
