package scheduler

import (
	"context"
	"time"
)

// Writing ahead.
//
// A fire reaches read_committed consumers when its transaction commits,
// not when its records are written. A burst of 10,000 occurrences due at
// the same instant takes a runner most of a second to write on two cores
// shared with the brokers and the consumers: written from their due time
// on, the last of them commit that much late. So a runner whose next
// occurrences are due soon writes their transaction ahead, as it would at
// their due time (firedAt, the records' timestamps and everything the
// fires change are those of the due time), and commits it once they are
// due: nothing of it can be read before, and all of it at once then.
// (A read_uncommitted consumer of a target topic would see the events as
// they are written, as it sees those of aborted transactions: the target
// topics are read read_committed.)
//
// How far ahead is what writing them is expected to take, twice over
// (the cores are shared, and a commit late is a burst late): what the
// runner's recent transactions of a few fires took (their round trips to
// the brokers), and the fires due at that instant (up to
// Config.MaxFiresAhead) at the time per fire its recent transactions of
// many took; plus aheadMargin, within Config.FireAhead. A handful of fires
// is written some milliseconds ahead, a burst up to FireAhead.
//
// The lead is no longer than that because an open transaction holds back
// every read_committed reader of the partitions it writes, from its first
// record on: other runners' and other producers' records on the same
// target partitions, and the engine's own topics for the recorder, wait
// for it to end. A transaction written ahead holds them from when its
// writing begins to its due time. (With a shorter lead, half as much
// again, a burst of 100,000 came 276–800 ms late in docs/benchmarks.md's
// runs rather than 202–394.)
//
// While its transaction waits for its instant the runner does nothing
// else: commands and statuses that come meanwhile are applied after it,
// as they are after fires due now (see loop). So only occurrences no
// status read meanwhile could hold back are written ahead: not those of
// chained tasks, whose gate reads their predecessors' outcomes, nor a
// run's timer (a retry, a deadline), which its statuses may cancel; a
// runner with a run's timer due first writes nothing ahead until it is
// done.

// DefaultFireAhead and DefaultTransactionTimeout are Config.FireAhead and
// Config.TransactionTimeout when they are not set.
const (
	DefaultFireAhead          = 2 * time.Second
	DefaultTransactionTimeout = 30 * time.Second
)

// AheadBound is the longest Config.FireAhead a transaction timeout
// allows: a third of it, so that a transaction written ahead, open from
// its lead to its due time, is never aborted by the brokers meanwhile.
func AheadBound(txnTimeout time.Duration) time.Duration { return txnTimeout / 3 }

// aheadMargin is added to the time a transaction written ahead is
// expected to take: the commit's own round trip, and the rest of a
// scheduler's wake-up.
const aheadMargin = 10 * time.Millisecond

// The cost per fire is learnt from transactions of at least learnFires
// fires, whose time is not mostly the round trips of any transaction,
// which those of fewer teach; until then a runner counts firstCost per
// fire (what a runner of eight took on two cores beside the brokers in
// docs/benchmarks.md).
const (
	learnFires = 100
	firstCost  = 50 * time.Microsecond
)

// lateWarn is how late a transaction written ahead may commit before the
// runner says so in its log.
const lateWarn = 50 * time.Millisecond

// lead is how long before due, the earliest time the runner fires at
// (it is now), the runner begins writing the transaction of what is due
// then, and how long writing it is expected to take, in milliseconds:
// zeros when it is not written ahead.
func (r *runner) lead(due, now int64) (lead, writes int64) {
	cfg := r.e.cfg
	if cfg.FireAhead <= 0 || due <= now || due-now > cfg.FireAhead.Milliseconds() {
		return 0, 0
	}
	if _, at, timed := r.runs.next(); timed && at <= due {
		return 0, 0
	}
	t := r.tasks
	i, at, ok := t.next()
	if !ok || at != due || t.shape(i).Chained() {
		return 0, 0
	}
	cost := r.perFire
	if cost == 0 {
		cost = firstCost
	}
	w := r.fixed + time.Duration(t.dueAt(due, cfg.MaxFiresAhead))*cost
	return min(aheadMargin+2*w, cfg.FireAhead).Milliseconds(), w.Milliseconds()
}

// commitAhead writes the transaction of the occurrences due at at, as it
// would be written then, and commits it at at.
func (r *runner) commitAhead(ctx context.Context, at int64) error {
	r.ahead = at
	r.aheadSince.Store(r.e.cfg.Clock.Now().UnixMilli())
	defer func() {
		r.ahead = 0
		r.aheadSince.Store(0)
	}()
	return r.commit(ctx, nil, at)
}

// ready runs once the transaction of change c, whose building began at
// start, is written, before it commits: it learns from it how long
// writing a fire takes and holds a transaction written ahead until its
// instant. It returns ctx's error when ctx ends first: the transaction is
// then aborted.
func (r *runner) ready(ctx context.Context, c *change, start time.Time) error {
	r.wrote = time.Since(start)
	switch n := len(c.fires); {
	case n >= learnFires:
		r.perFire = learn(r.perFire, time.Since(start)/time.Duration(n))
	case n > 0:
		r.fixed = learn(r.fixed, time.Since(start))
	}
	if r.ahead == 0 {
		return nil
	}
	clock := r.e.cfg.Clock
	left := time.UnixMilli(r.ahead).Sub(clock.Now())
	if left <= 0 {
		if -left > lateWarn && len(c.fires) > 0 {
			r.log.Warn("fires written ahead commit late: writing them took longer than expected",
				"fires", len(c.fires), "late_ms", (-left).Milliseconds(),
				"written_ms", time.Since(start).Milliseconds(), "per_fire_us", r.perFire.Microseconds(), "fixed_ms", r.fixed.Milliseconds())
		}
		return nil
	}
	wait := clock.NewTimer(left)
	defer wait.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wait.Chan():
		return nil
	}
}

// learn is the running figure was after one more sample: the mean of the
// two, so that the last transactions count most; the sample alone at
// first.
func learn(was, sample time.Duration) time.Duration {
	if was == 0 {
		return sample
	}
	return (was + sample) / 2
}
