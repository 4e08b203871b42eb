package main

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/internal/sweep"
)

// ExecutionsConfig says how long executions may stay unfinished and how
// much of their logs is kept.
type ExecutionsConfig struct {
	// ReapGrace is how long past its task's timeout an execution may stay
	// without a final status (overdue) before it is marked FAILED and
	// audited (execution.reaped). Defaults to 5m.
	ReapGrace time.Duration `yaml:"reap_grace"`
	// LogMaxBytes is the log kept of each execution: past it, the oldest
	// lines are dropped and the log says how many. Defaults to 1 MiB.
	LogMaxBytes int64 `yaml:"log_max_bytes"`
	// LogRetention is how long an execution's log is kept after its last
	// line. Defaults to 720h (30 days).
	LogRetention time.Duration `yaml:"log_retention"`
}

// validate checks the keys under executions.
func (c ExecutionsConfig) validate() error {
	var errs []error
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"reap_grace", c.ReapGrace}, {"log_retention", c.LogRetention}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("executions.%s: %s must not be negative; 0 takes the default", d.key, d.d))
		}
	}
	if c.LogMaxBytes < 0 {
		errs = append(errs, fmt.Errorf("executions.log_max_bytes: %d: want a number of bytes, 0 for 1 MiB", c.LogMaxBytes))
	}
	return errors.Join(errs...)
}

// newSweeper reaps the executions of the whole cluster that no worker
// finished, and keeps this node's store of logs within their retention.
// It reaps only once the recorder has caught up with what was committed
// before the node started, and not while it rebuilds the store or cannot
// store records.
func newSweeper(cfg Config, st *store.Store, rec *store.Recorder, w sweep.Writer, ready *readiness, clock clockwork.Clock, log *slog.Logger) (*sweep.Sweeper, error) {
	return sweep.New(sweep.Config{ReapGrace: cfg.Executions.ReapGrace, LogRetention: cfg.Executions.LogRetention,
		Node: cfg.Node, Clock: clock, Ready: func() bool { return ready.caughtUp.Load() && rec.Err() == nil }}, st, w, log)
}
