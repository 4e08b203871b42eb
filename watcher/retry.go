package watcher

import (
	"context"
	"log/slog"
	"time"

	"github.com/jobdrop/jobdrop/internal/retry"
)

// RetryError is what a Handler returns for a file it could not handle for
// a reason outside the file, such as brokers that refuse writes while
// their disk is full: the file stays in .processing/ and is handed over
// again after a wait, before any later file of its folder. Err says why;
// the watcher logs it once, not at every attempt.
type RetryError struct {
	Err error
}

func (e *RetryError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *RetryError) Unwrap() error { return e.Err }

// firstRetry is the first wait before an attempt is made again; the wait
// doubles with every failed attempt, up to the folder's rescan interval.
const firstRetry = time.Second

// retry runs attempt until it returns nil, waiting between attempts, and
// reports whether it did; false means ctx was done first. A failure is
// logged as "cannot " + task at ERROR, once for each different error (at
// DEBUG when it repeats the previous one), and the success that ends a
// series of failures is logged too. The folder's worker waits here, so
// its later files wait behind this one and keep their order.
func (f *folder) retry(ctx context.Context, log *slog.Logger, task string, attempt func() error) bool {
	return retry.Do(ctx, retry.Policy{
		Backoff:      retry.Backoff{First: min(firstRetry, f.rescan), Max: f.rescan},
		Clock:        f.clock,
		Log:          log,
		Level:        slog.LevelError,
		QuietRepeats: true,
		Msg:          "cannot " + task + "; retrying until it works",
		Recovered:    "retry succeeded: " + task,
	}, func() error {
		err := attempt()
		f.status.retrying(err, f.clock.Now())
		return err
	}) == nil
}
