package auth

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"
)

// throttlePolicy says how failed password checks of one key (a user name,
// a client address) slow down the next ones. x/time/rate's token buckets
// give a steady rate; this is a wait that grows with every failure, then a
// lock, which is what a guessed password calls for.
type throttlePolicy struct {
	// free is how many failures pass with no wait.
	free int
	// firstWait is the wait after the free failures, doubled with each
	// failure after them.
	firstWait time.Duration
	// lockAfter failures lock the key for lockFor.
	lockAfter int
	// lockFor is how long a lock lasts, and how long failures are
	// remembered after the last one.
	lockFor time.Duration
}

// The policies of user names and client addresses. An address tries more
// names than a user mistypes passwords: it gets more failures, and an
// office behind one address is not locked out by one user's typos.
var (
	namePolicy = throttlePolicy{free: 5, firstWait: time.Second, lockAfter: 10, lockFor: 15 * time.Minute}
	addrPolicy = throttlePolicy{free: 10, firstWait: time.Second, lockAfter: 30, lockFor: 15 * time.Minute}
)

// throttle keeps the failures of each key. One check of a key runs at a
// time: parallel attempts wait their turn and then meet the failures of
// those before them, so that a flood of parallel guesses cannot all slip
// through before the first failure is counted.
type throttle struct {
	policy throttlePolicy
	mu     sync.Mutex
	keys   map[[32]byte]*strikes
	// sweepAt is the number of keys at which forgotten ones are swept
	// out: twice what a sweep left, so sweeping costs O(1) a key.
	sweepAt int
}

// strikes are one key's failures.
type strikes struct {
	failures int
	last     time.Time
	until    time.Time // locked until
	// turn is held by the one check of the key that runs.
	turn chan struct{}
	// holders counts the attempts holding or awaiting the turn: the
	// entry is kept while any does.
	holders int
}

// throttleEvent is what a failure made of its key, for the audit trail.
type throttleEvent int

const (
	throttleNone throttleEvent = iota
	// throttleSlowed: the free failures are spent; each next attempt
	// waits.
	throttleSlowed
	// throttleLocked: the key is locked for the policy's lockFor.
	throttleLocked
)

func newThrottle(p throttlePolicy) *throttle {
	return &throttle{policy: p, keys: map[[32]byte]*strikes{}, sweepAt: minSweep}
}

// minSweep is the fewest keys worth a sweep.
const minSweep = 1024

// enter waits for key's turn and returns its entry; leave gives the turn
// back. A key of any length costs the same: it is kept by its hash.
func (t *throttle) enter(ctx context.Context, key string, now time.Time) (*strikes, error) {
	k := sha256.Sum256([]byte(key))
	t.mu.Lock()
	if len(t.keys) >= t.sweepAt {
		t.sweep(now)
	}
	e, ok := t.keys[k]
	if !ok {
		e = &strikes{turn: make(chan struct{}, 1)}
		t.keys[k] = e
	}
	e.holders++
	t.mu.Unlock()
	select {
	case e.turn <- struct{}{}:
		return e, nil
	case <-ctx.Done():
		t.leave(key, e, false)
		return nil, ctx.Err()
	}
}

// leave gives e's turn back (when held) and forgets a key that holds
// nothing worth keeping.
func (t *throttle) leave(key string, e *strikes, held bool) {
	if held {
		<-e.turn
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.holders--; e.holders == 0 && e.failures == 0 {
		delete(t.keys, sha256.Sum256([]byte(key)))
	}
}

// sweep drops the keys whose failures are forgotten at now. The caller
// holds t.mu.
func (t *throttle) sweep(now time.Time) {
	for k, e := range t.keys {
		if e.holders == 0 && now.Sub(e.last) >= t.policy.lockFor && !now.Before(e.until) {
			delete(t.keys, k)
		}
	}
	t.sweepAt = max(minSweep, 2*len(t.keys))
}

// wait says how long an attempt on e must wait before its check may run
// at now: zero when it may run now. The caller holds e's turn.
func (t *throttle) wait(e *strikes, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Before(e.until) {
		return e.until.Sub(now)
	}
	if e.failures > 0 && now.Sub(e.last) >= t.policy.lockFor {
		e.failures, e.until = 0, time.Time{} // forgotten, lock included
	}
	if e.failures >= t.policy.lockAfter {
		e.failures = 0 // the lock is over: a fresh start
	}
	if e.failures < t.policy.free {
		return 0
	}
	wait := min(t.policy.firstWait<<(e.failures-t.policy.free), t.policy.lockFor)
	if next := e.last.Add(wait); now.Before(next) {
		return next.Sub(now)
	}
	return 0
}

// fail counts a failed check of e at now and says what it made of the
// key: each event comes once in a run of failures.
func (t *throttle) fail(e *strikes, now time.Time) throttleEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.failures++
	e.last = now
	switch e.failures {
	case t.policy.lockAfter:
		e.until = now.Add(t.policy.lockFor)
		return throttleLocked
	case t.policy.free:
		return throttleSlowed
	}
	return throttleNone
}

// succeed forgets e's failures.
func (t *throttle) succeed(e *strikes) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.failures, e.until = 0, time.Time{}
}
