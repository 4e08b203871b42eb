package retry

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jonboulle/clockwork"
)

// Backoff spaces the attempts: First after the first failure, twice as
// long after each further one in a row, never longer than Max.
type Backoff struct {
	// First is the wait after the first failure. Defaults to 100ms.
	First time.Duration
	// Max caps every wait; zero or less than First means First, a
	// constant wait.
	Max time.Duration
	// Jitter, from 0 to 1, is the fraction of each wait that is left to
	// chance: a wait w becomes one drawn evenly from [w×(1−Jitter), w],
	// so that nodes failing together do not retry together. Zero: the
	// waits are the same on every node and in every test.
	Jitter float64
}

// Wait is how long to wait after the n-th failure in a row, n counting
// from 1 (n below 1 counts as 1), without jitter.
func (b Backoff) Wait(n int) time.Duration {
	first := b.First
	if first <= 0 {
		first = 100 * time.Millisecond
	}
	limit := max(b.Max, first)
	w := first
	for i := 1; i < n && w < limit; i++ {
		w *= 2
	}
	return min(w, limit)
}

// jittered is Wait(n) with the share r (in [0, 1)) of its jitter taken
// off.
func (b Backoff) jittered(n int, r float64) time.Duration {
	w := b.Wait(n)
	j := min(max(b.Jitter, 0), 1)
	if j == 0 {
		return w
	}
	return w - time.Duration(float64(w)*j*r)
}

// Policy says how Do retries: how long it waits, when it gives up, on
// which clock it waits and how it logs.
type Policy struct {
	Backoff
	// Attempts bounds the attempts, the first included: after the
	// Attempts-th failure Do returns it. Zero: no bound.
	Attempts int
	// Elapsed bounds the time since the first attempt began: Do returns
	// the last failure rather than wait past it. Zero: no bound. With
	// neither bound Do retries until ctx is done.
	Elapsed time.Duration
	// Clock is what the waits and Elapsed are measured on. Defaults to
	// the real clock.
	Clock clockwork.Clock
	// Log gets a line for every failure that is followed by a wait:
	// Msg with the keys err, attempt (counting from 1) and delay_ms.
	// Nil: nothing is logged.
	Log *slog.Logger
	// Msg says what failed and that it is retried ("cannot reach the
	// brokers; retrying").
	Msg string
	// Level is the level of those lines. Defaults to Info.
	Level slog.Level
	// QuietRepeats logs a failure at Debug when its cause, the innermost
	// error it wraps, reads as the previous failure's, so that a long
	// outage is logged once at Level, and again whenever its cause
	// changes. The cause, not the whole error: a path or a name that
	// differs at each attempt ("write /data/.ready-81723: no space left
	// on device") does not make a failure new.
	QuietRepeats bool
	// Recovered, when set, is logged at Info with the key attempt when an
	// attempt succeeds after failures.
	Recovered string
}

// permanentError marks an error that no further attempt can mend.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as one that retrying cannot mend: Do returns it
// (unmarked) at once. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// Do calls op until it returns nil, then returns nil. It returns op's
// error at once when op marks it Permanent (without the mark), the last
// error when p's Attempts or Elapsed are spent, and ctx's error when ctx
// is done before an attempt, during a wait, or by the time an attempt
// fails (a failure that ending ctx may have caused is not logged). op is
// called at least once unless ctx is done already.
func Do(ctx context.Context, p Policy, op func() error) error {
	clock := p.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	start := clock.Now()
	last := ""
	for n := 1; ; n++ {
		err := op()
		if err == nil {
			if n > 1 && p.Recovered != "" && p.Log != nil {
				p.Log.LogAttrs(ctx, slog.LevelInfo, p.Recovered, slog.Int("attempt", n))
			}
			return nil
		}
		if perm, ok := errors.AsType[*permanentError](err); ok {
			return perm.err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p.Attempts > 0 && n >= p.Attempts {
			return err
		}
		wait := p.jittered(n, rand.Float64())
		if p.Elapsed > 0 && clock.Since(start)+wait > p.Elapsed {
			return err
		}
		if p.Log != nil {
			level, msg := p.Level, cause(err).Error()
			if p.QuietRepeats && msg == last {
				level = slog.LevelDebug
			}
			last = msg
			p.Log.LogAttrs(ctx, level, p.Msg, slog.Any("err", err), slog.Int("attempt", n),
				slog.Int64("delay_ms", wait.Milliseconds()))
		}
		t := clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.Chan():
		}
	}
}

// cause is the innermost error err wraps through Unwrap() error.
func cause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
