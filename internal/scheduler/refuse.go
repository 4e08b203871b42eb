package scheduler

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// refusal is what becomes of a fire refused for its task's own reason.
type refusal struct {
	reason string // the brokers' answer
	code   string // its error code, for the metrics
	// fault is the task's fault after the refusal: the occurrence fired
	// again later, or the pause; nil for a trigger, which is not retried.
	fault *record.Fault
	// dropped marks a later fire of a task refused earlier in this
	// transaction: it is written nowhere, and comes again once the
	// refused occurrence goes through.
	dropped bool
}

// errRefused ends an attempt at a transaction in which the brokers refused
// fired events for their tasks' own reasons: it is aborted, and written
// again without them.
var errRefused = errors.New("fired events refused")

// refusedOr is errRefused when err, the answer to a fired event, is its
// task's own fault, and err itself when it is the cluster's.
func refusedOr(err error) error {
	if errors.Is(err, errTarget) || kafka.RecordFault(err) {
		return errRefused
	}
	return err
}

// holdRefused settles the fires of c refused in the last attempt for
// their tasks' own reasons. A refusal is known to be a fire's own when it
// was written alone (a suspect), when it is about its target topic, or
// when it is the only refusal of its target partition; otherwise the
// brokers refused its whole batch, and every fire of it becomes a suspect,
// written alone in the next attempt until one is refused; the others are
// then written together again. A fire found at fault is held out of the
// transaction: see refuse. Every attempt that is refused again finds a
// fire at fault or makes suspects, so the attempts end.
func (r *runner) holdRefused(c *change, now int64) error {
	type partition struct {
		topic string
		p     int32
	}
	batch := map[partition]int{}
	for _, f := range c.fires {
		if f.refused == nil && f.err != nil && !f.suspect {
			batch[partition{f.shape.Topic, f.partition}]++
		}
	}
	found := false
	for _, f := range c.fires {
		if f.refused != nil || f.err == nil {
			continue
		}
		if !f.suspect && !errors.Is(f.err, errTarget) && !kafka.TopicFault(f.err) && batch[partition{f.shape.Topic, f.partition}] > 1 {
			f.suspect = true
			continue
		}
		found = found || f.suspect
		if kafka.TopicFault(f.err) || errors.Is(f.err, errTarget) {
			// Asked again before the next attempt: the topic may have
			// been created, or the ACL granted, meanwhile.
			r.e.cfg.Targets.Forget(f.shape.Topic)
		}
		if err := r.refuse(c, f, now); err != nil {
			return err
		}
	}
	if found {
		// One suspect was at fault: most likely the only one.
		for _, f := range c.fires {
			f.suspect = false
		}
	}
	return nil
}

// refuse holds fire f, refused for its task's own reason, out of the
// transaction: the occurrence is recorded FAILED with the brokers' answer
// and audited. A trigger ends there. A scheduled fire's task is put back
// as it was before the fire, less the fires after it in this transaction,
// and follows Config.Refused: the occurrence is fired again after a wait,
// or, its attempts spent, the task is paused (its definition says active:
// false, its state says why).
func (r *runner) refuse(c *change, f *fire, now int64) error {
	t := r.tasks
	pol := r.e.cfg.Refused
	ref := &refusal{reason: f.err.Error(), code: errorCode(f.err)}
	f.refused = ref
	i, exists, err := t.find(f.key)
	if err != nil {
		return err
	}
	if u := f.retryOf; u != nil {
		// A worker's retry the brokers refused: the run's next attempt
		// waits as a refused fire does, with the attempt unspent.
		u.RetryAt = now + pol.wait(1).Milliseconds()
		r.runs.arm(u)
		c.runs = append(c.runs, runWrite{id: u.Run, run: u})
		c.audits = append(c.audits, r.engineAudit(record.ActionTaskFireRefused, f.key, f.fireID, record.OutcomeFailed,
			fmt.Sprintf("attempt %d %s; tried again at %s", f.attempt, ref.message(0), formatMillis(u.RetryAt)), now))
		return nil
	}
	if f.triggered || f.before == nil {
		// Asked for by hand, outside the schedule, or released by a
		// chain: not retried; the operator sees it FAILED and may
		// trigger (or release) again.
		if exists {
			t.at(i).fireCount--
			c.touch(i, f.key)
		}
		for _, g := range c.fires {
			if g.key == f.key && g.before != nil {
				g.before.slot.fireCount--
			}
		}
		c.audits = append(c.audits, r.engineAudit(record.ActionTaskFireRefused, f.key, f.fireID, record.OutcomeFailed,
			"triggered fire "+ref.message(0), now))
		return nil
	}
	// The task's later fires of this transaction go with it.
	later := false
	for _, g := range c.fires {
		if g == f {
			later = true
		} else if later && g.key == f.key && !g.triggered && g.refused == nil {
			g.refused = &refusal{dropped: true}
		}
	}
	b := f.before
	if exists {
		s := t.at(i)
		s.nextFire, s.lastFire, s.fireCount = b.slot.nextFire, b.slot.lastFire, b.slot.fireCount
	} else {
		// The fire ended the task: it comes back.
		d := *f.shape
		d.Name = f.name()
		if b.slot.hasStart {
			d.Start = task.Ptr(b.slot.anchor)
		}
		st := record.State{Definition: d, Anchor: b.slot.anchor, NextFire: b.slot.nextFire,
			LastFire: b.slot.lastFire, FireCount: b.slot.fireCount,
			Source: record.Source{Batch: f.src.batch, File: f.src.file, Folder: f.src.folder, Actor: f.src.actor,
				Row: int(b.slot.row)}}
		if b.slot.avro {
			st.Format = record.FormatAvro
		}
		if i, err = t.set(f.key, &d, &st, f.data); err != nil {
			return err
		}
		delete(c.ended, f.key)
	}
	fault := record.Fault{Occurrence: f.scheduled, Attempts: 1, Reason: ref.reason, At: now}
	if b.fault != nil && b.fault.Occurrence == f.scheduled {
		fault.Attempts = b.fault.Attempts + 1
	}
	if fault.Attempts < pol.Attempts {
		fault.RetryAt = now + pol.wait(fault.Attempts).Milliseconds()
		t.at(i).nextFire = fault.RetryAt
		t.schedule(i)
	} else {
		fault.Paused = true
		d := t.definition(i, f.key)
		d.Active = task.Ptr(false)
		st := t.state(i, f.key, now)
		st.NextFire = 0
		if i, err = t.set(f.key, &d, &st, f.data); err != nil {
			return err
		}
		t.unschedule(i)
	}
	t.setFault(i, &fault)
	c.touch(i, f.key)
	ref.fault = &fault
	c.audits = append(c.audits, r.engineAudit(record.ActionTaskFireRefused, f.key, f.fireID, record.OutcomeFailed,
		"occurrence "+formatMillis(f.scheduled)+" "+ref.message(pol.Attempts), now))
	if fault.Paused {
		c.audits = append(c.audits, r.engineAudit(record.ActionTaskPaused, f.key, f.fireID, record.OutcomeOK,
			fault.Description(), now))
	}
	return nil
}

// message says what became of a refused fire, for its FAILED status and
// its audit event: the brokers' answer, then the attempt and what comes
// next, out of attempts.
func (ref *refusal) message(attempts int) string {
	msg := "refused by the brokers: " + ref.reason
	switch f := ref.fault; {
	case f == nil:
	case f.Paused:
		msg += fmt.Sprintf(" (attempt %d of %d: task %s)", f.Attempts, attempts, record.PausedByFaultPolicy)
	default:
		msg += fmt.Sprintf(" (attempt %d of %d; next attempt at %s)", f.Attempts, attempts, formatMillis(f.RetryAt))
	}
	return msg
}

// errorCode names the brokers' error in err, as the metrics count it:
// TARGET_UNAVAILABLE when the target topic was found unusable before
// anything was written.
func errorCode(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return "TARGET_UNAVAILABLE"
}

func formatMillis(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

var errTarget = errors.New("target topic unavailable")
