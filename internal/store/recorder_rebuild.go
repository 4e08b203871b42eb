package store

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/retry"
)

// rebuild is the refilling of a database that was deleted or replaced
// while the Recorder ran.
type rebuild struct {
	why   error
	start time.Time
	ends  map[string]map[int32]int64 // last stable offsets when it began
}

// ErrRebuilding is what Err wraps while the Recorder refills a database
// that was deleted or replaced while it ran: the console shows less than
// there is until it is done.
var ErrRebuilding = errors.New("rebuilding the database from the topics")

// startRebuild opens the file now at the database's path, a new one when
// it is gone, and returns a consumer that fills it from the offsets it
// holds: from the topics' start for a new file. Until the Recorder has
// stored everything committed when it began, Err wraps ErrRebuilding.
func (r *Recorder) startRebuild(ctx context.Context, why error) (*kgo.Client, error) {
	r.log.Error("the database file changed under the recorder; rebuilding it from the topics", "reason", why)
	b := &rebuild{why: why, start: time.Now()}
	r.setRebuild(b)
	r.rebuilds.Add(1)
	if err := retry.Do(ctx, retry.Policy{Backoff: applyBackoff, Log: r.log, Level: slog.LevelError, QuietRepeats: true,
		Msg: "cannot open the database; retrying"}, func() error {
		err := r.st.Reopen()
		r.setFailing(err)
		return err
	}); err != nil {
		return nil, err
	}
	r.notify() // pages show what the new file holds
	if err := retry.Do(ctx, retry.Policy{Backoff: applyBackoff, Log: r.log, Level: slog.LevelWarn,
		Msg: "cannot ask the brokers how far to rebuild; retrying"}, func() error {
		ends, err := r.endOffsets(ctx, r.topics...)
		if err == nil {
			r.mu.Lock()
			b.ends = ends
			r.mu.Unlock()
		}
		return err
	}); err != nil {
		return nil, err
	}
	return r.consumer(ctx)
}

// endRebuild ends the rebuild under way once every partition is stored up
// to where it stood when the rebuild began, and reports whether it did.
func (r *Recorder) endRebuild(ctx context.Context) bool {
	r.mu.Lock()
	b := r.rebuild
	r.mu.Unlock()
	if b == nil {
		return false
	}
	stored, err := r.st.Offsets(ctx)
	if err != nil {
		return false // asked again after the next poll
	}
	for topic, ps := range b.ends {
		for p, end := range ps {
			if stored[topic][p] < end {
				return false
			}
		}
	}
	r.setRebuild(nil)
	r.log.Info("database rebuilt from the topics", "duration_ms", time.Since(b.start).Milliseconds())
	return true
}

func (r *Recorder) setRebuild(b *rebuild) {
	r.mu.Lock()
	r.rebuild = b
	r.mu.Unlock()
}

// Whole runs fn, which reads the store, once the database is whole: after
// the rebuild under way, if any, and again should a rebuild begin while
// fn runs, since what fn read may then come from a file just replaced.
// It returns fn's error, ctx's, or ErrRecorderStopped.
func (r *Recorder) Whole(ctx context.Context, fn func() error) error {
	for {
		if err := r.WaitRebuilt(ctx); err != nil {
			return err
		}
		began := r.rebuilds.Load()
		err := fn()
		if r.rebuilds.Load() == began {
			return err
		}
	}
}

// WaitRebuilt returns at once unless the Recorder is rebuilding its
// database; then it returns once the rebuild is done, with ctx's error
// when ctx is done first, or ErrRecorderStopped when Run returns first.
// What asks the store for what was done before (has this file been
// injected?) waits for it.
func (r *Recorder) WaitRebuilt(ctx context.Context) error {
	for {
		applied := r.appliedChan()
		r.mu.Lock()
		b := r.rebuild
		r.mu.Unlock()
		if b == nil {
			return nil
		}
		select {
		case <-applied:
		case <-r.done:
			return ErrRecorderStopped
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
