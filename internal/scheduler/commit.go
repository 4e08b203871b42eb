package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/record"
)

// commit applies cmds and fires the tasks due at now in one transaction.
// A fired event the brokers refuse for its task's own reason costs an
// aborted attempt: the transaction is written again without it, with the
// occurrence recorded FAILED and its task following Config.Refused, so the
// other tasks of the partition fire on time. On any other failure the
// in-memory state may be ahead of Kafka; the caller restores.
func (r *runner) commit(ctx context.Context, cmds []*kgo.Record, now int64) error {
	start := time.Now()
	t := r.tasks
	t.remember()
	defer t.forget()
	// The change and the fires of the last transaction are done with.
	c := &r.change
	c.reset()
	r.fires.reset()
	next, err := r.applyAll(ctx, cmds, now, c)
	if err != nil {
		return err
	}
	if err := r.fireDue(ctx, c, now); err != nil {
		return err
	}
	r.capRuns(c, now)
	if err := r.transactChange(ctx, c, now, next, start); err != nil {
		return err
	}
	if len(c.fires) > 0 {
		r.settle()
	}
	r.next = next
	for p, o := range c.status {
		r.statusNext[p] = o
	}
	r.checkpointed = true
	r.active.Store(int64(t.n))
	r.paused.Store(int64(t.paused))
	t.forget()
	if err := t.compact(); err != nil {
		return err
	}
	r.committedRuns(c)
	r.committed(c)
	return nil
}

// applyAll applies the commands of cmds not applied yet to c and returns
// the input offset that follows them.
func (r *runner) applyAll(ctx context.Context, cmds []*kgo.Record, now int64, c *change) (next int64, err error) {
	next = r.next
	for _, rec := range cmds {
		if rec.Topic == r.e.cfg.Topics.Status {
			if err := r.applyStatus(rec, now, c); err != nil {
				return 0, err
			}
			continue
		}
		if rec.Offset < next {
			continue // already applied before a restore
		}
		next = rec.Offset + 1
		if err := r.apply(ctx, rec, now, c); err != nil {
			return 0, err
		}
	}
	return next, nil
}

// fireDue adds to c the fires of the tasks due at now, as many as one
// transaction takes, and what the runs' timers due call for. A
// transaction written ahead (see ahead.go) takes up to MaxFiresAhead
// fires, and neither a run's timer nor a chained task.
func (r *runner) fireDue(ctx context.Context, c *change, now int64) error {
	limit := r.e.cfg.MaxFiresAhead
	if r.ahead == 0 {
		limit = r.e.cfg.MaxFiresPerTxn
		if err := r.fireRunsDue(ctx, c, now); err != nil {
			return err
		}
	}
	t := r.tasks
	for len(c.fires) < limit {
		i, due, ok := t.next()
		if !ok || due > now || r.ahead != 0 && t.shape(i).Chained() {
			break
		}
		if err := r.fireSlot(ctx, c, i, now); err != nil {
			return err
		}
	}
	return nil
}

// fireSlot fires the occurrence due of slot i, if its plan says so, and
// schedules the task's next occurrence or ends it.
func (r *runner) fireSlot(ctx context.Context, c *change, i int32, now int64) error {
	t := r.tasks
	k, data, err := t.read(i)
	if err != nil {
		return err
	}
	key := string(k)
	s := t.at(i)
	if t.shape(i).ChainOnly() {
		r.fireRelease(ctx, c, i, key, data)
		return nil
	}
	b := before{slot: *s}
	var at, following int64
	var fire, more bool
	stands := 1
	if fault, ok := t.fault(i); ok && !fault.Paused {
		// The refused occurrence again, with its own fire id: the
		// task's later occurrences wait behind it. (A copy of its
		// own, so that a slot without a fault costs no allocation.)
		f := fault
		b.fault = &f
		at, fire = f.Occurrence, true
		following, more = t.shape(i).NextFire(s.anchor, at)
		t.setFault(i, nil)
	} else {
		at, fire, following, more = t.shape(i).Plan(s.anchor, s.nextFire, now)
		if fire && at > s.nextFire {
			// A catch-up in place of the occurrences missed since the
			// one due: its event and execution say how many.
			stands = t.shape(i).Occurrences(s.anchor, s.nextFire, at)
		}
	}
	var after []string
	if fire && t.shape(i).Chained() && b.fault == nil {
		after, fire = r.gate(c, i, key, at, now)
	}
	if fire {
		f := r.newFire(ctx, i, key, data, at)
		s.fireCount++
		f.prior = b
		f.before, f.retried, f.after = &f.prior, b.fault, after
		if stands > 1 {
			f.collapsed = stands
		}
		c.fires = append(c.fires, f)
		s.lastFire = at
	}
	if more {
		s.nextFire = following
		t.schedule(i)
		c.touch(i, key)
		return nil
	}
	if fire && t.shape(i).Retry != nil {
		// Its last occurrence may still be fired again: the task ends
		// with its run (see endRun).
		s.nextFire = 0
		t.unschedule(i)
		c.touch(i, key)
		return nil
	}
	return r.finish(c, i, key, record.EndCompleted, now)
}

// transactChange commits change c, built from start on, with the input
// checkpoint next, in as many attempts as it takes to hold out the fires
// refused for their tasks' own reasons.
func (r *runner) transactChange(ctx context.Context, c *change, now, next int64, start time.Time) error {
	// Targets found unusable before anything is written are refused
	// at once.
	if err := r.holdRefused(c, now); err != nil {
		return err
	}
	for {
		err := r.transact(ctx, func(produce func(*kgo.Record)) error {
			return r.write(ctx, c, now, next, produce)
		}, func() error { return r.ready(ctx, c, start) })
		if !errors.Is(err, errRefused) {
			return err
		}
		if err := r.holdRefused(c, now); err != nil {
			return err
		}
	}
}

// committed tells the log and Config's hooks of the fires of c, now
// committed: those that went out and those refused.
func (r *runner) committed(c *change) {
	var scheduled []int64
	for _, f := range c.fires {
		switch {
		case f.refused == nil:
			scheduled = append(scheduled, f.scheduled)
		case !f.refused.dropped:
			r.log.Warn("fired event refused", "task", f.key, "fire_id", f.fireID, "err", f.refused.reason,
				"outcome", f.refused.message(r.e.cfg.Refused.Attempts))
			if hook := r.e.cfg.OnRefused; hook != nil {
				hook(f.refused.code)
			}
		}
	}
	if hook := r.e.cfg.OnCommit; hook != nil && len(scheduled) > 0 {
		hook(scheduled, time.Now())
	}
}

// write produces one attempt at the transaction of change c: the fired
// events, then the execution records (which carry the events' offsets),
// the state, the audit events and the input checkpoint next. It returns
// errRefused when the brokers refused fired events for their tasks' own
// reasons, and the error of any other refusal (the cluster's fault).
func (r *runner) write(ctx context.Context, c *change, now, next int64, produce func(*kgo.Record)) error {
	if err := r.writeEvents(ctx, c, now); err != nil {
		return err
	}
	r.writeExecutions(c, now, produce)
	if err := r.writeState(c, now, produce); err != nil {
		return err
	}
	r.writeRuns(c, now, produce)
	for _, a := range c.audits {
		produce(a)
	}
	for _, f := range c.forwards {
		produce(f)
	}
	if next != r.next || len(c.status) > 0 || !r.checkpointed {
		produce(r.stateRecord(keyCheckpoint, encode(r.checkpoint(next, c))))
	}
	chainWork := len(c.forwards) > 0 || len(c.runs) > 0
	if hook := testHookBeforeCommit; hook != nil && (len(c.fires) > 0 || chainWork) && hook(r.p, len(c.fires)) {
		r.crashed = true
	}
	return nil
}

// writeEvents produces the fired events of c and waits for the brokers'
// answers, which each fire keeps with the event's partition and offset.
// It returns errRefused when any was refused for its task's own reason.
func (r *runner) writeEvents(ctx context.Context, c *change, now int64) error {
	for _, f := range c.fires {
		if f.refused == nil {
			f.err = nil
		}
	}
	// Suspects first, one at a time: each is alone in its batch, so a
	// refusal is its own. The largest go first: a batch refused as too
	// large most likely holds one record too large.
	var suspects []*fire
	for _, f := range c.fires {
		if f.refused == nil && f.suspect {
			suspects = append(suspects, f)
		}
	}
	slices.SortStableFunc(suspects, func(a, b *fire) int { return cmp.Compare(len(b.data), len(a.data)) })
	for _, f := range suspects {
		rec := r.stamp(r.event(f, now))
		f.err = r.prod.ProduceSync(ctx, rec).FirstErr()
		f.partition, f.offset = rec.Partition, rec.Offset
		if f.err != nil {
			return refusedOr(f.err)
		}
	}
	written := 0
	for _, f := range c.fires {
		if f.refused != nil || f.suspect {
			continue
		}
		written++
		r.prod.Produce(ctx, r.stamp(r.event(f, now)), func(rec *kgo.Record, err error) {
			f.partition, f.offset, f.err = rec.Partition, rec.Offset, err
		})
	}
	if written > 0 {
		if err := r.prod.Flush(ctx); err != nil {
			return err
		}
	}
	refused := false
	for _, f := range c.fires {
		if f.refused == nil && f.err != nil {
			if err := refusedOr(f.err); !errors.Is(err, errRefused) {
				return err // the cluster's fault: abort, restore, fire again
			}
			refused = true
		}
	}
	if refused {
		return errRefused
	}
	return nil
}

// writeExecutions produces the execution record of every fire of c, with
// what follows from it: a refused fire's FAILED status, a retried one's
// audit event, a message task's tombstone.
func (r *runner) writeExecutions(c *change, now int64, produce func(*kgo.Record)) {
	for _, f := range c.fires {
		if f.refused != nil && f.refused.dropped {
			continue
		}
		d := f.shape
		x := record.Execution{FireID: f.fireID, Host: d.Host, Name: f.name(), Topic: d.Topic,
			Partition: f.partition, Offset: f.offset, ScheduledAt: f.scheduled, FiredAt: now, Batch: f.src.batch,
			Timeout: d.Timeout, Collapsed: f.collapsed, Attempt: f.attempt, Run: f.run, After: f.after}
		if f.refused != nil {
			x.Partition, x.Offset = -1, -1
		}
		a := &r.arena
		rec := a.record()
		rec.Topic, rec.Key, rec.Value = r.e.cfg.Topics.Executions, a.copy(f.fireID), encodeExecution(a.bytes.take(executionSize(&x)), &x)
		produce(rec)
		if f.msg != nil && f.refused == nil {
			r.messageAfter(f, produce)
		}
		switch {
		case f.refused != nil:
			s := encode(record.Status{FireID: f.fireID, Status: record.StatusFailed, Message: f.refused.message(r.e.cfg.Refused.Attempts),
				Worker: "scheduler", At: now})
			produce(&kgo.Record{Topic: r.e.cfg.Topics.Status, Key: []byte(f.fireID), Value: s})
		case f.retried != nil && f.retried.Occurrence == f.scheduled:
			produce(r.engineAudit(record.ActionTaskFireRetried, f.key, f.fireID, record.OutcomeOK,
				fmt.Sprintf("occurrence %s fired on attempt %d", formatMillis(f.scheduled), f.retried.Attempts+1), now))
		}
	}
}

// writeState produces the state of every task c changed and the
// tombstone of every task it ended.
func (r *runner) writeState(c *change, now int64, produce func(*kgo.Record)) error {
	t := r.tasks
	for i := range c.dirty {
		k, data, err := t.read(i)
		if err != nil {
			return err
		}
		key := string(k)
		produce(r.stateRecord(key, appendState(r.arena.bytes.take(stateSize(data)), &r.stateWire, t.state(i, key, now), data)))
	}
	for key, e := range c.ended {
		if e.final != nil {
			produce(r.stateRecord(key, e.final))
		}
		rec := r.stateRecord(key, nil)
		rec.Headers = append(r.arena.headers.take(1), kgo.RecordHeader{Key: record.HeaderEnd, Value: r.arena.copy(e.reason)})
		produce(rec)
	}
	return nil
}

// event is the record of fire f fired at now, for its target topic.
func (r *runner) event(f *fire, now int64) *kgo.Record {
	if f.msg != nil {
		return r.messageEvent(f)
	}
	a, d, name := &r.arena, f.shape, f.name()
	ev := record.Fired{Host: d.Host, Name: name, ScheduledAt: f.scheduled,
		FiredAt: now, FireID: f.fireID, Triggered: f.triggered, Attempt: f.attempt, Run: f.run, After: f.after}
	rec := a.record()
	rec.Topic, rec.Key, rec.Value = d.Topic, a.copy(f.key), encodeFired(a.bytes.take(firedSize(&ev, f.data)), &ev, f.data)
	rec.Headers = append(a.headers.take(6),
		kgo.RecordHeader{Key: record.HeaderFireHost, Value: a.copy(d.Host)},
		kgo.RecordHeader{Key: record.HeaderFireName, Value: a.copy(name)},
		kgo.RecordHeader{Key: record.HeaderFireID, Value: a.copy(f.fireID)},
		kgo.RecordHeader{Key: record.HeaderFireScheduled, Value: strconv.AppendInt(a.bytes.take(20), f.scheduled, 10)},
	)
	if f.collapsed > 0 {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: record.HeaderFireCollapsed, Value: strconv.AppendInt(a.bytes.take(20), int64(f.collapsed), 10)})
	}
	if f.attempt > 1 {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: record.HeaderFireAttempt, Value: strconv.AppendInt(a.bytes.take(20), int64(f.attempt), 10)})
	}
	if f.avro != nil {
		rec.Key, rec.Value = f.avro.key, f.avro.value
	}
	return rec
}

func (r *runner) stateRecord(key string, value []byte) *kgo.Record {
	rec := r.arena.record()
	rec.Topic, rec.Partition, rec.Key, rec.Value = r.e.cfg.Topics.State, r.p, r.arena.copy(key), value
	return rec
}

// transact runs fill in one transaction of the partition's producer and
// commits it once ready, if not nil, returns nil.
func (r *runner) transact(ctx context.Context, fill func(produce func(*kgo.Record)) error, ready func() error) error {
	// The client is done with the records of the last transaction.
	r.arena.reset()
	if r.ahead != 0 {
		r.arena.now = time.UnixMilli(r.ahead)
	}
	stamped := func(produce func(*kgo.Record)) error {
		return fill(func(rec *kgo.Record) { produce(r.stamp(rec)) })
	}
	err := kafka.Transact(ctx, r.prod, stamped, func() error {
		if r.crashed {
			return kafka.ErrLeaveOpen
		}
		if ready != nil {
			return ready()
		}
		return nil
	})
	if errors.Is(err, kafka.ErrLeaveOpen) {
		return errCrashed
	}
	// ErrEndedWithAbort ends the session: the next one has new clients.
	return fenced(err)
}

// stamp gives rec, if it has no timestamp, the transaction's: what the
// arena's records have (see arena.now), and, in a transaction written
// ahead, the due time of its fires, never the earlier time it is written
// at.
func (r *runner) stamp(rec *kgo.Record) *kgo.Record {
	if rec.Timestamp.IsZero() {
		rec.Timestamp = r.arena.now
	}
	return rec
}

func fenced(err error) error {
	if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		return fmt.Errorf("%w: %w", errFenced, err)
	}
	return err
}
