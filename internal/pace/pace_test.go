package pace

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// waitOn runs Wait on a fake clock moved Poll at a time while Wait waits
// on it, and returns what Wait returned.
func waitOn(ctx context.Context, late func() time.Duration, over, limit time.Duration) time.Duration {
	clock := clockwork.NewFakeClock()
	got := make(chan time.Duration, 1)
	go func() { got <- Wait(ctx, clock, late, over, limit) }()
	for {
		select {
		case d := <-got:
			return d
		default:
		}
		blocked, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		if clock.BlockUntilContext(blocked, 1) == nil {
			clock.Advance(Poll)
		}
		cancel()
	}
}

func TestWait(t *testing.T) {
	var looks atomic.Int64
	lateUntil := func(n int64) func() time.Duration {
		looks.Store(0)
		return func() time.Duration {
			if looks.Add(1) <= n {
				return time.Second
			}
			return 0
		}
	}
	for _, tc := range []struct {
		name        string
		late        func() time.Duration
		over, limit time.Duration
		want        time.Duration
	}{
		{name: "no scheduler", over: time.Millisecond, limit: time.Hour, want: 0},
		{name: "pacing off", late: func() time.Duration { return time.Hour }, limit: time.Hour, want: 0},
		{name: "on time", late: func() time.Duration { return time.Millisecond }, over: 20 * time.Millisecond, limit: time.Hour, want: 0},
		{name: "late for 3 more looks", late: lateUntil(4), over: 20 * time.Millisecond, limit: time.Hour, want: 3 * Poll},
		{name: "late all along: bounded", late: func() time.Duration { return time.Hour }, over: 20 * time.Millisecond,
			limit: 5 * Poll, want: 5 * Poll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := waitOn(context.Background(), tc.late, tc.over, tc.limit); got != tc.want {
				t.Errorf("waited %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("context ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if got := waitOn(ctx, func() time.Duration { return time.Hour }, time.Millisecond, time.Hour); got != 0 {
			t.Errorf("waited %s after the context ended, want 0", got)
		}
	})
}

func TestBackgroundWaitsWithinItsBudget(t *testing.T) {
	if got := (Background{MaxWait: time.Hour}).Wait(context.Background()); got != 0 {
		t.Errorf("the zero Background waited %s", got)
	}
	late := Pacing{RecorderLateness: 20 * time.Millisecond, MaxWait: 30 * time.Millisecond}.Background(func() time.Duration { return time.Hour })
	pauses := late.Within(context.Background())
	start := time.Now()
	for range 5 {
		pauses.Pause()
	}
	// Late all along: the calls wait 30 ms in all, then none waits.
	if took := time.Since(start); took < 30*time.Millisecond || took > 30*time.Millisecond+time.Second {
		t.Errorf("five pauses late all along took %s, want 30ms in all", took)
	}
	if w := pauses.Waited(); w < 30*time.Millisecond || w > 30*time.Millisecond+time.Second {
		t.Errorf("five pauses late all along say they waited %s, want 30ms", w)
	}
	// A scheduler that writes bursts ahead presses that much longer for
	// each: the budget holds it too.
	ahead := Pacing{RecorderLateness: 20 * time.Millisecond, MaxWait: 30 * time.Millisecond, Ahead: 40 * time.Millisecond}.Background(func() time.Duration { return time.Hour })
	pauses = ahead.Within(context.Background())
	for range 5 {
		pauses.Pause()
	}
	if w := pauses.Waited(); w < 70*time.Millisecond || w > 70*time.Millisecond+time.Second {
		t.Errorf("five pauses late all along, with bursts written 40ms ahead, say they waited %s, want 70ms", w)
	}
	var looks atomic.Int64
	onTimeAfter := Background{Late: func() time.Duration {
		if looks.Add(1) <= 2 {
			return time.Hour
		}
		return 0
	}, Over: 20 * time.Millisecond, MaxWait: time.Hour}
	// Late for two looks, then on time: it goes on at once (the
	// scheduler's Pressure says how long its consumers still need).
	if waited := onTimeAfter.Wait(context.Background()); waited < Poll || waited >= Settle {
		t.Errorf("waited %s for a scheduler late for two looks, want about %s", waited, 2*Poll)
	}
}
