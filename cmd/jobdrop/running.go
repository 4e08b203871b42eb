package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
)

// runningFile, in the data dir, is there while a run is on: written as it
// starts, removed as it returns. Found at a start, it says that the run
// before did not stop cleanly: it was killed, it crashed, or its machine
// went down.
const runningFile = "running.json"

// runMark is what runningFile holds.
type runMark struct {
	// Started is when this run started, epoch milliseconds.
	Started int64 `json:"started"`
	// Unclean lists when the runs started that did not stop cleanly and
	// are not in the audit trail yet: a run killed before it could say so
	// passes them on.
	Unclean []int64 `json:"unclean,omitempty"`
}

// markRunning writes this run's mark in dir and returns the starts of the
// runs before it that did not stop cleanly, to audit.
func markRunning(dir string, now time.Time) ([]int64, error) {
	path := filepath.Join(dir, runningFile)
	var before runMark
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(b, &before); err != nil {
			// Damaged (cut off as its run died): that run did not stop
			// cleanly either, though when it started is lost.
			before = runMark{}
		}
		before.Unclean = append(before.Unclean, before.Started)
	}
	return before.Unclean, writeMark(path, runMark{Started: now.UnixMilli(), Unclean: before.Unclean})
}

// writeMark replaces the mark at path whole, so that a run killed while
// writing it leaves the one before.
func writeMark(path string, m runMark) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// auditUnclean writes a node.unclean_stop event for each run before this
// one that did not stop cleanly, then keeps only this run's start in its
// mark: each is said once.
func auditUnclean(ctx context.Context, a auditor, dir, node string, unclean []int64, now time.Time) error {
	if len(unclean) == 0 {
		return nil
	}
	for _, started := range unclean {
		detail := "the run before this start did not stop cleanly (killed, crashed, or its machine went down)"
		if started > 0 {
			detail = "the run started at " + time.UnixMilli(started).UTC().Format(time.RFC3339) +
				" did not stop cleanly (killed, crashed, or its machine went down)"
		}
		ev := nodeEvent(node, record.ActionNodeUncleanStop, detail, now)
		ev.Outcome = record.OutcomeFailed
		if err := a.Audit(ctx, ev); err != nil {
			return fmt.Errorf("audit an unclean stop: %w", err)
		}
	}
	path := filepath.Join(dir, runningFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m runMark
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	m.Unclean = nil
	return writeMark(path, m)
}

// markStopped removes the run's mark: it stopped cleanly.
func markStopped(dir string) error {
	err := os.Remove(filepath.Join(dir, runningFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
