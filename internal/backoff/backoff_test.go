package backoff

import (
	"testing"
	"time"
)

func TestExponentialWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    Exponential
		n    []int
		want []time.Duration
	}{
		{"doubles up to max", Exponential{First: time.Second, Max: 10 * time.Second},
			[]int{1, 2, 3, 4, 5, 100}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}},
		{"n below 1 is the first wait", Exponential{First: 250 * time.Millisecond, Max: time.Second},
			[]int{0, -3}, []time.Duration{250 * time.Millisecond, 250 * time.Millisecond}},
		{"no max keeps the first wait", Exponential{First: time.Second},
			[]int{1, 7}, []time.Duration{time.Second, time.Second}},
		{"huge n does not overflow", Exponential{First: time.Nanosecond, Max: time.Hour},
			[]int{1 << 30}, []time.Duration{time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, n := range tc.n {
				if got := tc.e.Wait(n); got != tc.want[i] {
					t.Errorf("Wait(%d) = %s, want %s", n, got, tc.want[i])
				}
			}
		})
	}
}
