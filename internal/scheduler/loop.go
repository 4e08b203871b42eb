package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// idleWait is how long a runner with nothing scheduled waits before looking
// again; input wakes it sooner.
const idleWait = time.Minute

// maxCommandsWait bounds how long commands wait for a fire due soon (see
// runner.loop).
const maxCommandsWait = time.Second

// loop applies commands and fires due tasks, one transaction at a time.
//
// Fires come first. Occurrences due commit in a transaction of their own,
// ahead of the commands waiting to be applied: with commands in it, the
// transaction would take longer (a flood of files brings thousands). And
// a transaction of commands does not start when an occurrence falls due
// before it would likely end, as long as the last one did: the commands
// wait for the fire, then go. They never wait twice in a row, so they
// always make headway, however often tasks fire. Occurrences due soon
// have their transaction written ahead and committed once they are due
// (ahead.go): the commands waiting, and those that come meanwhile, wait
// for it too, once. A command takes effect once applied: an occurrence
// due before is fired, as it would have been had the command come later.
func (r *runner) loop(ctx context.Context) error {
	in := make(chan []*kgo.Record, 1)
	pollErr := make(chan error, 1)
	pollCtx, stopPoll := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			fs := r.cons.PollRecords(pollCtx, pollRecords)
			if pollCtx.Err() != nil {
				return
			}
			if err := fs.Err(); err != nil {
				pollErr <- err
				return
			}
			if recs := fs.Records(); len(recs) > 0 {
				select {
				case in <- recs:
				case <-pollCtx.Done():
					return
				}
			}
		}
	}()
	defer func() {
		stopPoll()
		wg.Wait()
	}()

	clock := r.e.cfg.Clock
	var cmds []*kgo.Record
	// cmdsTook is how long the last transaction of commands took, by the
	// engine's clock; deferred is set while the commands waiting have
	// waited for a fire once, served once a transaction written ahead
	// went before them.
	var cmdsTook time.Duration
	var deferred, served bool
	for {
		// Take whatever input is already there without waiting.
	drain:
		for len(cmds) < txnCommands {
			select {
			case recs := <-in:
				cmds = append(cmds, recs...)
			default:
				break drain
			}
		}
		if cmds = r.passOverStatuses(cmds); len(cmds) == 0 {
			deferred, served = false, false
		}
		m := moment{now: clock.Now().UnixMilli(), waiting: len(cmds), cmdsTook: cmdsTook, deferred: deferred, served: served}
		m.due, m.scheduled = r.nextDue()
		if m.scheduled {
			r.due.Store(m.due)
			m.lead, m.writes = r.lead(m.due, m.now)
		} else {
			r.due.Store(noneDue)
		}
		switch nextStep(m) {
		case fireDue:
			if err := r.commit(ctx, nil, m.now); err != nil {
				return err
			}
			continue
		case fireAhead:
			served = len(cmds) > 0
			if err := r.commitAhead(ctx, m.due); err != nil {
				return err
			}
			continue
		case applyCommands:
			start := clock.Now()
			if err := r.commit(ctx, cmds, m.now); err != nil {
				return err
			}
			cmdsTook = min(clock.Since(start), maxCommandsWait)
			cmds, deferred, served = nil, false, false
			continue
		case holdCommands:
			deferred = true
		}
		wait := idleWait
		if m.scheduled {
			wait = time.Duration(m.wait(r.e.cfg.FireAhead)) * time.Millisecond
		}
		// More input is taken while waiting, but not past a
		// transaction's worth, nor while the commands wait for a fire.
		input := in
		if len(cmds) >= txnCommands || deferred {
			input = nil
		}
		timer := clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case err := <-pollErr:
			timer.Stop()
			return fmt.Errorf("consume input: %w", err)
		case recs := <-input:
			cmds = append(cmds, recs...)
		case <-timer.Chan():
		}
		timer.Stop()
	}
}

// passOverStatuses takes cmds out of the way when it holds only statuses
// of runs the runner does not watch, which most statuses are: their
// offsets are checkpointed with the next transaction, rather than each
// batch of them costing one. Read again after a restart, they are passed
// over again.
func (r *runner) passOverStatuses(cmds []*kgo.Record) []*kgo.Record {
	status := r.e.cfg.Topics.Status
	for _, rec := range cmds {
		if rec.Topic != status {
			return cmds
		}
		if _, watched := r.runs.byFire[string(rec.Key)]; watched {
			return cmds
		}
	}
	for _, rec := range cmds {
		r.statusNext[rec.Partition] = max(r.statusNext[rec.Partition], rec.Offset+1)
	}
	return cmds[:0]
}

// nextDue is when the runner next has something to fire: a task's
// occurrence, or a run's retry or deadline.
func (r *runner) nextDue() (int64, bool) {
	_, due, ok := r.tasks.next()
	if _, at, timed := r.runs.next(); timed && (!ok || at < due) {
		return at, true
	}
	return due, ok
}

// step is what the loop does next.
type step int

const (
	// waitForInput: nothing to do before the next due time or input.
	waitForInput step = iota
	// fireDue commits the occurrences due, alone.
	fireDue
	// fireAhead writes the transaction of the occurrences due soon and
	// commits it once they are due (see ahead.go).
	fireAhead
	// applyCommands commits the commands waiting, and whatever falls due
	// meanwhile.
	applyCommands
	// holdCommands waits for the occurrence due soon before applying
	// the commands waiting.
	holdCommands
)

// moment is what the loop decides its next step from.
type moment struct {
	// scheduled says whether the runner holds an occurrence or a timer,
	// the earliest due at due; it is now.
	scheduled bool
	due, now  int64
	// lead is how long before due the transaction of what is due then
	// is written, writes how long writing it is expected to take (see
	// runner.lead); zero: from due on.
	lead, writes int64
	// waiting commands; the last transaction of commands took cmdsTook.
	waiting  int
	cmdsTook time.Duration
	// deferred: the commands waiting have waited for a fire once;
	// served: a transaction written ahead went before them.
	deferred, served bool
}

// nextStep decides what the loop does next (see runner.loop). Fires due
// go first. Commands waiting go before a transaction written ahead when
// they would be done in time for it to be written, else they wait for it
// once, however often tasks fire.
func nextStep(m moment) step {
	// soon: the commands would end after the fire due had to begin.
	soon := m.scheduled && time.Duration(m.due-m.now-m.writes)*time.Millisecond < m.cmdsTook
	switch {
	case m.scheduled && m.due <= m.now:
		return fireDue
	case m.waiting > 0 && m.served:
		return applyCommands
	case m.lead > 0 && m.due-m.now <= m.lead && (m.waiting == 0 || soon || m.deferred):
		return fireAhead
	case m.waiting > 0 && (!soon || m.deferred):
		return applyCommands
	case m.waiting > 0:
		return holdCommands
	}
	return waitForInput
}

// wait is how long, in milliseconds, the loop waits for input before it
// looks again at what is due: until the transaction of the occurrence
// due is to be written, or, while it is too far off to reckon that, until
// Config.FireAhead before it.
func (m moment) wait(fireAhead time.Duration) int64 {
	left := m.due - m.now
	switch ahead := fireAhead.Milliseconds(); {
	case m.lead > 0:
		left -= m.lead
	case ahead > 0 && left > ahead:
		left -= ahead
	}
	return max(left, 0)
}
