package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/diff"
	"github.com/jobdrop/jobdrop/internal/store"
)

// wholeStore answers the injector's "was this content injected before?"
// and a sync's "which tasks run now?" from the store, waiting while the
// recorder rebuilds a database deleted under it: a file dropped again
// meanwhile is still told a duplicate. With no recorder (jobdrop inject
// reading the database of a node that runs beside it) it reads the store
// as it is, and waits for the engine by looking again every
// pollApplied.
type wholeStore struct {
	st  *store.Store
	rec *store.Recorder
}

// pollApplied is how often a wholeStore without a recorder looks whether
// the engine has applied a sync's barrier.
const pollApplied = 100 * time.Millisecond

// whole runs fn once the store is whole (see store.Recorder.Whole).
func (w wholeStore) whole(ctx context.Context, fn func() error) error {
	if w.rec == nil {
		return fn()
	}
	return w.rec.Whole(ctx, fn)
}

// applied is closed when the store may have changed.
func (w wholeStore) applied() <-chan struct{} {
	if w.rec != nil {
		return w.rec.Applied()
	}
	c := make(chan struct{})
	time.AfterFunc(pollApplied, func() { close(c) })
	return c
}

var (
	_ injector.Batches = wholeStore{}
	_ injector.Sources = wholeStore{}
)

// WaitApplied returns once the engine's checkpoints recorded are past
// offsets on every input partition.
func (w wholeStore) WaitApplied(ctx context.Context, offsets map[int32]int64) error {
	for {
		applied := w.applied()
		done, err := w.st.Checkpoints(ctx)
		if err != nil {
			return err
		}
		behind := ""
		for p, off := range offsets {
			if done[p] <= off {
				behind = fmt.Sprintf("input partition %d applied up to offset %d, not yet past %d", p, done[p], off)
				break
			}
		}
		if behind == "" {
			return nil
		}
		select {
		case <-applied:
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", behind, ctx.Err())
		}
	}
}

// SourceTasks answers the tasks of a sync source.
func (w wholeStore) SourceTasks(ctx context.Context, s injector.Source, fn func(diff.Current) error) error {
	return w.whole(ctx, func() error {
		return w.st.SourceTasks(ctx, s.Folder, s.File, s.Hosts, currentOf(true, fn))
	})
}

// Tasks answers the tasks of keys.
func (w wholeStore) Tasks(ctx context.Context, keys []string, fn func(diff.Current) error) error {
	return w.whole(ctx, func() error { return w.st.TasksByKey(ctx, keys, currentOf(false, fn)) })
}

// Followers answers the live tasks that follow any of keys.
func (w wholeStore) Followers(ctx context.Context, keys []string, fn func(diff.Current) error) error {
	return w.whole(ctx, func() error { return w.st.Followers(ctx, keys, currentOf(false, fn)) })
}

// currentOf reads the store's tasks for a sync: a task whose definition is
// not known (only its end was recorded) is left out, as if it did not run.
func currentOf(inScope bool, fn func(diff.Current) error) func(store.SourceTask) error {
	return func(t store.SourceTask) error {
		c := diff.Current{Key: t.Key, Live: t.Live, InScope: inScope}
		if t.Definition == "" || diff.Decode([]byte(t.Definition), &c.Definition) != nil {
			return nil
		}
		return fn(c)
	}
}

func (w wholeStore) BatchInjected(ctx context.Context, id string) (bool, error) {
	var seen bool
	err := w.whole(ctx, func() (err error) {
		seen, err = w.st.BatchInjected(ctx, id)
		return err
	})
	return seen, err
}
