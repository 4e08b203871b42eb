package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// Defaults of Config.
const (
	DefaultReapGrace    = 5 * time.Minute
	DefaultLogRetention = 30 * 24 * time.Hour
)

// Config tunes a Sweeper.
type Config struct {
	// ReapGrace is how long past its task's timeout an execution may stay
	// without a final status before it is reaped: marked FAILED. Defaults
	// to DefaultReapGrace.
	ReapGrace time.Duration
	// LogRetention is how long an execution's log is kept after its last
	// line. Defaults to DefaultLogRetention.
	LogRetention time.Duration
	// Interval is how often the Sweeper looks. Defaults to a tenth of
	// ReapGrace, between 100 ms and 30 s.
	Interval time.Duration
	// Node names the node in the audit events of its reaps. Required.
	Node string
	// Clock is the clock deadlines are counted by. Defaults to the real
	// clock.
	Clock clockwork.Clock
	// Ready says whether the store holds everything committed up to
	// about now: no reap is written while it says false (a node catching
	// up at its start, or rebuilding its store, would take executions
	// whose final status it has not read yet for unfinished). Nil:
	// always ready.
	Ready func() bool
}

// Store is what the Sweeper reads and prunes; the store implements it.
type Store interface {
	Unfinished(ctx context.Context, deadline time.Time, limit int) ([]storetype.Unfinished, error)
	DropLogsBefore(ctx context.Context, before time.Time) (int64, error)
}

// Writer commits a reap: the execution's FAILED status and its audit
// event, in one transaction. command.Writer implements it.
type Writer interface {
	Reap(ctx context.Context, s record.Status, a record.Audit) error
}

// Sweeper reaps unfinished executions and drops old logs; see the package
// comment.
type Sweeper struct {
	cfg Config
	st  Store
	w   Writer
	log *slog.Logger
	// sent are the reaps written and not yet seen recorded, so that a
	// round does not write them again while the recorder catches up.
	sent map[string]bool
}

// batch bounds the reaps of one round.
const batch = 500

// New validates cfg, applies its defaults and returns a Sweeper that does
// nothing until Run.
func New(cfg Config, st Store, w Writer, log *slog.Logger) (*Sweeper, error) {
	if st == nil || w == nil {
		return nil, errors.New("new sweeper: nil store or writer")
	}
	if cfg.Node == "" {
		return nil, errors.New("new sweeper: no node name")
	}
	if cfg.ReapGrace < 0 || cfg.LogRetention < 0 || cfg.Interval < 0 {
		return nil, fmt.Errorf("new sweeper: negative reap grace %s, log retention %s or interval %s", cfg.ReapGrace, cfg.LogRetention, cfg.Interval)
	}
	if cfg.ReapGrace == 0 {
		cfg.ReapGrace = DefaultReapGrace
	}
	if cfg.LogRetention == 0 {
		cfg.LogRetention = DefaultLogRetention
	}
	if cfg.Interval == 0 {
		cfg.Interval = min(max(cfg.ReapGrace/10, 100*time.Millisecond), 30*time.Second)
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Ready == nil {
		cfg.Ready = func() bool { return true }
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sweeper{cfg: cfg, st: st, w: w, log: log.With("component", "sweeper"), sent: map[string]bool{}}, nil
}

// Run sweeps every Interval until ctx is done, then returns nil. A round
// that fails is logged and tried again at the next.
//
// The rounds are paced by a real ticker, while deadlines are read from
// Config.Clock: a test's fake clock decides what is due, and the Sweeper
// never counts among the waiters on it that the engine's tests wait for.
func (s *Sweeper) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("sweep failed; trying again", "err", err, "delay_ms", s.cfg.Interval.Milliseconds())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sweep runs one round: reaps what is due, when the store is ready, then
// drops the logs past their retention.
func (s *Sweeper) Sweep(ctx context.Context) error {
	now := s.cfg.Clock.Now()
	var reapErr error
	if s.cfg.Ready() {
		reapErr = s.reap(ctx, now)
	}
	n, err := s.st.DropLogsBefore(ctx, now.Add(-s.cfg.LogRetention))
	if n > 0 {
		s.log.Info("dropped execution logs past their retention", "executions", n, "retention", s.cfg.LogRetention)
	}
	return errors.Join(reapErr, err)
}

// reap marks FAILED every execution whose timeout ran out a grace ago.
//
// Every node runs a Sweeper over its own copy of the same data, so every
// node finds the same executions due. Rather than elect one to reap them
// (the engine's partition owners change at each rebalance, and a reap
// written by an owner that lost its partition would need fencing), every
// node writes the same reap, and the view takes it once: the status's time
// is derived from the execution (its deadline plus the grace, or just
// after its last report), not from the node's clock; the store applies the
// reaper's FAILED to no execution that has a final status already, so a
// second reap, or one that crossed a worker's final report, changes
// nothing; and the audit event's id is derived from the fire id, so the
// store records it once. A second node's records are duplicates on the
// topics, nothing more.
func (s *Sweeper) reap(ctx context.Context, now time.Time) error {
	due, err := s.st.Unfinished(ctx, now.Add(-s.cfg.ReapGrace), batch+len(s.sent))
	if err != nil {
		return err
	}
	still := make(map[string]bool, len(due))
	var errs []error
	for _, u := range due {
		still[u.FireID] = true
		if s.sent[u.FireID] {
			continue
		}
		st, ev := s.reaped(u)
		if err := s.w.Reap(ctx, st, ev); err != nil {
			errs = append(errs, fmt.Errorf("reap execution %s: %w", u.FireID, err))
			break // the brokers are likely down: the next round tries again
		}
		s.sent[u.FireID] = true
		s.log.Info("execution reaped", "fire_id", u.FireID, "task", u.Host+"/"+u.Name, "status", u.Status)
	}
	for id := range s.sent {
		if !still[id] {
			delete(s.sent, id) // recorded
		}
	}
	return errors.Join(errs...)
}

// reaped is the FAILED status and the audit event of reaping u.
func (s *Sweeper) reaped(u storetype.Unfinished) (record.Status, record.Audit) {
	at := u.FiredAt.Add(u.Timeout + s.cfg.ReapGrace).UnixMilli()
	if last := u.StatusAt.UnixMilli(); at <= last {
		at = last + 1 // after its last report, which it must replace
	}
	msg := fmt.Sprintf("no final status within timeout (%s) + grace (%s); reaped", u.Timeout, s.cfg.ReapGrace)
	st := record.Status{FireID: u.FireID, Status: record.StatusFailed, Message: msg, Worker: record.ReaperWorker, At: at}
	// Keyed by the execution: every node's sweeper reaps what its own view
	// shows, and a round retries a reap whose answer it did not get, so one
	// reaping may be written more than once; it is stored once.
	ev := record.NewAudit(time.UnixMilli(at), s.cfg.Node, record.ActionExecutionReaped, u.FireID, record.OutcomeOK).
		Keyed(u.FireID)
	ev.Detail = fmt.Sprintf("%s/%s: %s, %s", u.Host, u.Name, u.Status, msg)
	return st, ev
}
