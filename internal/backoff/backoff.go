// Package backoff spaces out the attempts at something that fails for a
// while: the brokers out of reach, a database that refuses writes, a fire
// the brokers refuse. It only says how long to wait; each caller waits on
// its own clock and context, so a loop blocked on a real timer and an
// engine that schedules the next attempt on an injected clock share it.
package backoff

import "time"

// Exponential waits First after the first failure and twice as long after
// each further one in a row, never longer than Max. There is no jitter: the
// waits are the same on every node and in every test.
type Exponential struct {
	// First is the wait after the first failure.
	First time.Duration
	// Max caps every wait; zero or less than First means First.
	Max time.Duration
}

// Wait is how long to wait after the n-th failure in a row, n counting
// from 1 (n below 1 counts as 1).
func (e Exponential) Wait(n int) time.Duration {
	limit := max(e.Max, e.First)
	w := e.First
	for i := 1; i < n && w < limit; i++ {
		w *= 2
	}
	return min(w, limit)
}
