package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestBackoffWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Backoff
		n    []int
		want []time.Duration
	}{
		{"doubles up to max", Backoff{First: time.Second, Max: 10 * time.Second},
			[]int{1, 2, 3, 4, 5, 100}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}},
		{"n below 1 is the first wait", Backoff{First: 250 * time.Millisecond, Max: time.Second},
			[]int{0, -3}, []time.Duration{250 * time.Millisecond, 250 * time.Millisecond}},
		{"no max keeps the first wait", Backoff{First: time.Second},
			[]int{1, 7}, []time.Duration{time.Second, time.Second}},
		{"zero first is 100ms", Backoff{Max: time.Second},
			[]int{1, 2, 5}, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, time.Second}},
		{"huge n does not overflow", Backoff{First: time.Nanosecond, Max: time.Hour},
			[]int{1 << 30}, []time.Duration{time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, n := range tc.n {
				if got := tc.b.Wait(n); got != tc.want[i] {
					t.Errorf("Wait(%d) = %s, want %s", n, got, tc.want[i])
				}
			}
		})
	}
}

func TestBackoffJitter(t *testing.T) {
	b := Backoff{First: time.Second, Max: 8 * time.Second, Jitter: 0.5}
	for _, tc := range []struct {
		name string
		n    int
		r    float64
		want time.Duration
	}{
		{"no share taken keeps the wait", 2, 0, 2 * time.Second},
		{"half the share", 2, 0.5, 1500 * time.Millisecond},
		{"the whole share at the cap", 10, 1, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := b.jittered(tc.n, tc.r); got != tc.want {
				t.Errorf("jittered(%d, %v) = %s, want %s", tc.n, tc.r, got, tc.want)
			}
		})
	}
	if got := (Backoff{First: time.Second, Jitter: 3}).jittered(1, 0.5); got != 500*time.Millisecond {
		t.Errorf("jitter above 1 counts as 1: got %s, want 500ms", got)
	}
	if got := (Backoff{First: time.Second}).jittered(1, 0.9); got != time.Second {
		t.Errorf("no jitter: got %s, want 1s", got)
	}
}

// logged collects what Do logs.
type logged struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logged) Enabled(context.Context, slog.Level) bool { return true }
func (l *logged) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
	return nil
}
func (l *logged) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logged) WithGroup(string) slog.Handler      { return l }

// lines renders each record as "LEVEL msg key=value …".
func (l *logged) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		s := r.Level.String() + " " + r.Message
		r.Attrs(func(a slog.Attr) bool {
			s += " " + a.String()
			return true
		})
		out = append(out, s)
	}
	return out
}

// run starts Do on a fake clock in a goroutine; done yields its result.
func run(ctx context.Context, p Policy, op func() error) (done chan error) {
	done = make(chan error, 1)
	go func() { done <- Do(ctx, p, op) }()
	return done
}

func TestDoWaitsGrowAndCapOnTheClock(t *testing.T) {
	clock := clockwork.NewFakeClock()
	l := &logged{}
	var mu sync.Mutex
	calls := 0
	op := func() error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 5 {
			return nil
		}
		return fmt.Errorf("refused %d", calls)
	}
	called := func() int { mu.Lock(); defer mu.Unlock(); return calls }
	p := Policy{Backoff: Backoff{First: time.Second, Max: 4 * time.Second}, Clock: clock,
		Log: slog.New(l), Msg: "cannot do it; retrying", Level: slog.LevelWarn, Recovered: "done again"}
	done := run(t.Context(), p, op)
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		if err := clock.BlockUntilContext(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		// Short of the wait, no attempt is made.
		clock.Advance(wait - time.Nanosecond)
		if err := clock.BlockUntilContext(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		if got := called(); got != i+1 {
			t.Fatalf("wait %d: %d attempts before the wait ended, want %d", i+1, got, i+1)
		}
		clock.Advance(time.Nanosecond)
	}
	if err := <-done; err != nil {
		t.Fatalf("Do = %v, want nil", err)
	}
	want := []string{
		"WARN cannot do it; retrying err=refused 1 attempt=1 delay_ms=1000",
		"WARN cannot do it; retrying err=refused 2 attempt=2 delay_ms=2000",
		"WARN cannot do it; retrying err=refused 3 attempt=3 delay_ms=4000",
		"WARN cannot do it; retrying err=refused 4 attempt=4 delay_ms=4000",
		"INFO done again attempt=5",
	}
	if got := l.lines(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("logged\n%q\nwant\n%q", got, want)
	}
}

func TestDoQuietRepeats(t *testing.T) {
	l := &logged{}
	full := errors.New("disk full")
	errs := []error{fmt.Errorf("write a: %w", full), fmt.Errorf("write b: %w", full), errors.New("read-only"), full, nil}
	n := 0
	err := Do(t.Context(), Policy{Backoff: Backoff{First: time.Nanosecond}, Log: slog.New(l), Msg: "cannot write",
		Level: slog.LevelError, QuietRepeats: true}, func() error { n++; return errs[n-1] })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ERROR cannot write err=write a: disk full attempt=1 delay_ms=0",
		"DEBUG cannot write err=write b: disk full attempt=2 delay_ms=0",
		"ERROR cannot write err=read-only attempt=3 delay_ms=0",
		"ERROR cannot write err=disk full attempt=4 delay_ms=0",
	}
	if got := l.lines(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("logged\n%q\nwant\n%q", got, want)
	}
}

func TestDoStops(t *testing.T) {
	refused := errors.New("refused")
	for _, tc := range []struct {
		name     string
		policy   Policy
		fail     func(n int) error // the n-th attempt's error; nil succeeds
		want     error
		attempts int
	}{
		{"permanent stops at once", Policy{},
			func(int) error { return Permanent(refused) }, refused, 1},
		{"permanent after transient", Policy{},
			func(n int) error {
				if n == 3 {
					return fmt.Errorf("topic t: %w", Permanent(refused))
				}
				return errors.New("transient")
			}, refused, 3},
		{"attempts spent returns the last error", Policy{Attempts: 4},
			func(n int) error { return fmt.Errorf("try %d: %w", n, refused) }, refused, 4},
		{"one attempt never waits", Policy{Attempts: 1, Backoff: Backoff{First: time.Hour}},
			func(int) error { return refused }, refused, 1},
		{"success ends", Policy{Attempts: 10},
			func(n int) error {
				if n < 3 {
					return refused
				}
				return nil
			}, nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.policy.First = cmpOr(tc.policy.First, time.Nanosecond)
			n := 0
			err := Do(t.Context(), tc.policy, func() error { n++; return tc.fail(n) })
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Do = %v, want %v", err, tc.want)
			}
			var perm *permanentError
			if errors.As(err, &perm) {
				t.Errorf("Do returned the permanent mark: %v", err)
			}
			if n != tc.attempts {
				t.Errorf("%d attempts, want %d", n, tc.attempts)
			}
		})
	}
}

func cmpOr(d, or time.Duration) time.Duration {
	if d == 0 {
		return or
	}
	return d
}

func TestDoGivesUpBeforeWaitingPastElapsed(t *testing.T) {
	clock := clockwork.NewFakeClock()
	refused := errors.New("refused")
	var mu sync.Mutex
	n := 0
	// Waits of 1s, 2s, 4s: after the third failure (3s in) the next wait
	// would end at 7s, past 6s.
	done := run(t.Context(), Policy{Backoff: Backoff{First: time.Second, Max: time.Minute}, Elapsed: 6 * time.Second, Clock: clock},
		func() error { mu.Lock(); defer mu.Unlock(); n++; return refused })
	for _, wait := range []time.Duration{time.Second, 2 * time.Second} {
		if err := clock.BlockUntilContext(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(wait)
	}
	if err := <-done; !errors.Is(err, refused) {
		t.Fatalf("Do = %v, want %v", err, refused)
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

func TestDoStopsWhenContextEnds(t *testing.T) {
	t.Run("during a wait", func(t *testing.T) {
		clock := clockwork.NewFakeClock()
		ctx, cancel := context.WithCancel(t.Context())
		n := 0
		done := run(ctx, Policy{Backoff: Backoff{First: time.Hour}, Clock: clock}, func() error { n++; return errors.New("down") })
		if err := clock.BlockUntilContext(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Do = %v, want context.Canceled", err)
		}
		if n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})
	t.Run("during an attempt", func(t *testing.T) {
		l := &logged{}
		ctx, cancel := context.WithCancel(t.Context())
		err := Do(ctx, Policy{Log: slog.New(l), Msg: "m"}, func() error { cancel(); return errors.New("cut short") })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Do = %v, want context.Canceled", err)
		}
		if got := l.lines(); len(got) != 0 {
			t.Errorf("a failure of a cancelled attempt was logged: %q", got)
		}
	})
	t.Run("before the first attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		called := false
		if err := Do(ctx, Policy{}, func() error { called = true; return nil }); !errors.Is(err, context.Canceled) {
			t.Errorf("Do = %v, want context.Canceled", err)
		}
		if called {
			t.Error("op called with ctx done")
		}
	})
}

func TestPermanentNil(t *testing.T) {
	if err := Permanent(nil); err != nil {
		t.Errorf("Permanent(nil) = %v, want nil", err)
	}
}
