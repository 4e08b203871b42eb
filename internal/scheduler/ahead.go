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
// How far ahead is what writing them is expected to take: twice the fires
// due at that instant (up to Config.MaxFiresAhead) at the time per fire
// the runner's recent transactions of many fires took, plus aheadMargin,
// within Config.FireAhead. A handful of fires is written a few
// milliseconds ahead, a burst up to FireAhead.
//
// While its transaction waits for its instant the runner does nothing
// else: commands and statuses that come meanwhile are applied after it,
// as they are after fires due now (see loop). So only occurrences no
// status read meanwhile could hold back are written ahead: not those of
// chained tasks, whose gate reads their predecessors' outcomes, nor a
// run's timer (a retry, a deadline), which its statuses may cancel; a
// runner with a run's timer due first writes nothing ahead until it is
// done.

// maxFireAhead bounds Config.FireAhead well within the transaction
// timeout of a runner's producer (30s).
const maxFireAhead = 10 * time.Second

// aheadMargin is added to the time a transaction written ahead is
// expected to take: the commit's own round trip, and the rest of a
// scheduler's wake-up.
const aheadMargin = 10 * time.Millisecond

// Writing costs are learnt from transactions of at least learnFires
// fires, whose cost per fire is not the fixed cost of a transaction;
// until then a runner counts firstCost per fire (what a runner of eight
// took on two cores beside the brokers in docs/benchmarks.md).
const (
	learnFires = 100
	firstCost  = 50 * time.Microsecond
)

// lead is how long before due, the earliest time the runner fires at
// (it is now), the runner begins writing the transaction of what is due
// then, in milliseconds: zero when it is not written ahead.
func (r *runner) lead(due, now int64) int64 {
	cfg := r.e.cfg
	if cfg.FireAhead <= 0 || due <= now || due-now > cfg.FireAhead.Milliseconds() {
		return 0
	}
	if _, at, timed := r.runs.next(); timed && at <= due {
		return 0
	}
	t := r.tasks
	i, at, ok := t.next()
	if !ok || at != due || t.shape(i).Chained() {
		return 0
	}
	cost := r.perFire
	if cost == 0 {
		cost = firstCost
	}
	n := t.dueAt(due, cfg.MaxFiresAhead)
	return min(aheadMargin+2*time.Duration(n)*cost, cfg.FireAhead).Milliseconds()
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

// ready runs once the transaction of change c, whose writing began at
// start, is written, before it commits: it learns from it how long
// writing a fire takes and holds a transaction written ahead until its
// instant. It returns ctx's error when ctx ends first: the transaction is
// then aborted.
func (r *runner) ready(ctx context.Context, c *change, start time.Time) error {
	if n := len(c.fires); n >= learnFires {
		took := time.Since(start) / time.Duration(n)
		if r.perFire == 0 {
			r.perFire = took
		} else {
			r.perFire = (r.perFire + took) / 2
		}
	}
	if r.ahead == 0 {
		return nil
	}
	clock := r.e.cfg.Clock
	left := time.UnixMilli(r.ahead).Sub(clock.Now())
	if left <= 0 {
		if -left > aheadMargin && len(c.fires) > 0 {
			r.log.Warn("fires written ahead commit late: writing them took longer than expected",
				"fires", len(c.fires), "late_ms", (-left).Milliseconds(),
				"written_ms", time.Since(start).Milliseconds(), "per_fire_us", r.perFire.Microseconds())
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
