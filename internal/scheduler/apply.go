package scheduler

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// apply changes the in-memory tasks for one command. Commands from files are
// audited by the file's own record; others (API, console) one by one.
func (r *runner) apply(ctx context.Context, rec *kgo.Record, now int64, c *change) error {
	for _, h := range rec.Headers {
		switch h.Key {
		case record.HeaderLink:
			r.applyLink(rec, string(h.Value), c)
			return nil
		case record.HeaderOutcome:
			return r.applyOutcome(ctx, rec, now, c)
		}
	}
	if notCommand(rec) {
		// A task whose target is the input topic itself, as in
		// light-scheduler's own example: its events are no commands. A
		// barrier only moves the checkpoint past it.
		return nil
	}
	src := sourceOf(rec)
	cmd, err := r.command(ctx, rec)
	if err != nil {
		return err // the schema registry out of reach: read again after a restore
	}
	d, key := cmd.def, cmd.key
	if err := checkCommand(&d, key, cmd.err); err != nil {
		r.log.Warn("invalid command skipped", "offset", rec.Offset, "key", key, "err", err)
		c.audits = append(c.audits, r.audit(src, record.ActionTaskRejected, key, record.OutcomeRejected, err.Error(), rec.Timestamp))
		return nil
	}
	if fwd := r.rekeyAvro(rec, cmd); fwd != nil {
		c.forwards = append(c.forwards, fwd)
		return nil
	}
	data := splitPayload(&d)
	i, exists, err := r.tasks.find(key)
	if err != nil {
		return err
	}
	action, outcome, detail := record.ActionTaskCreated, record.OutcomeOK, ""
	switch d.Action {
	case task.Delete:
		action = record.ActionTaskDeleted
		if !exists {
			outcome, detail = record.OutcomeNoChange, "no such task"
			break
		}
		if err := r.finish(c, i, key, record.EndDeleted, now); err != nil {
			return err
		}
	case task.Trigger:
		action = record.ActionTaskTriggered
		if !exists {
			outcome, detail = record.OutcomeRejected, "no such task"
			break
		}
		if err := r.trigger(ctx, c, rec, &d, i, key, now); err != nil {
			return err
		}
	case task.Release:
		action = record.ActionTaskReleased
		if !exists {
			outcome, detail = record.OutcomeRejected, "no such task"
			break
		}
		if outcome, detail, err = r.releaseCommand(ctx, c, rec, i, key, now); err != nil {
			return err
		}
	case task.SkipRun:
		action = record.ActionTaskRunSkipped
		if !exists {
			outcome, detail = record.OutcomeRejected, "no such task"
			break
		}
		outcome, detail = r.skipCommand(c, i, key)
	default:
		if action, outcome, detail, err = r.define(ctx, c, rec, cmd.format, src, key, &d, data, i, exists, now); err != nil {
			return err
		}
	}
	if src.Batch == "" {
		c.audits = append(c.audits, r.audit(src, action, key, outcome, detail, rec.Timestamp))
	}
	return nil
}

// checkCommand is why the command d, read with key and err, is invalid,
// or nil.
func checkCommand(d *task.Definition, key string, err error) error {
	if err == nil {
		err = d.Validate()
	}
	if err == nil && key != d.Key() {
		err = fmt.Errorf("record key %q does not match host/name %q", key, d.Key())
	}
	return err
}

// trigger fires the task of slot i, which has key, now, as the TRIGGER
// command d of rec asks, outside its schedule.
func (r *runner) trigger(ctx context.Context, c *change, rec *kgo.Record, d *task.Definition, i int32, key string, now int64) error {
	_, data, err := r.tasks.read(i)
	if err != nil {
		return err
	}
	f := r.newFire(ctx, i, key, data, now)
	r.tasks.at(i).fireCount++
	f.fireID = record.TriggerFireID(d.Host, d.Name, rec.Partition, rec.Offset)
	f.triggered = true
	c.fires = append(c.fires, f)
	c.touch(i, key)
	return nil
}

// define creates or replaces the task with key of definition d and data,
// sent by rec from src in format; slot i holds it already when it exists.
// It returns the action, outcome and detail of the command's audit event.
func (r *runner) define(ctx context.Context, c *change, rec *kgo.Record, format string, src record.Source, key string, d *task.Definition, data []byte, i int32, exists bool, now int64) (action, outcome, detail string, err error) {
	t := r.tasks
	action, outcome = record.ActionTaskCreated, record.OutcomeOK
	var old task.Definition
	sameData := false
	if exists {
		old = t.definition(i, key)
		_, stored, err := t.read(i)
		if err != nil {
			return "", "", "", err
		}
		sameData = bytes.Equal(stored, data)
		format = formatAfter(format, t.format(i), src)
	}
	if sameData && d.Action == task.Insert && old.Equal(d) && format == t.format(i) {
		return action, record.OutcomeNoChange, "identical to the stored definition", nil
	}
	accepted := rec.Timestamp.UnixMilli()
	st := record.State{Definition: *d, Anchor: d.Anchor(accepted), Source: src, Format: format}
	if exists && d.Start == nil && sameCadence(&old, d) {
		// A task with no start of its own keeps the cadence it was
		// given when created: paused and resumed, or dropped again
		// with another change, it fires on the same beat as before.
		st.Anchor = t.at(i).anchor
	}
	// A schedule dropped (or changed, or resumed) today goes on from
	// its next occurrence; a one-shot due in the past still fires.
	after := d.StartAfter(st.Anchor, accepted)
	if exists {
		if src.Batch == "" {
			// A change by hand (pause, resume, API) keeps the file the
			// task came from.
			from := t.source(i)
			st.Source.Batch, st.Source.File, st.Source.Folder, st.Source.Row = from.batch, from.file, from.folder, int(t.at(i).row)
		}
		action = record.ActionTaskUpdated
		if sameData {
			action = changeAction(&old, d)
		}
		st.FireCount, st.LastFire = t.at(i).fireCount, t.at(i).lastFire
		after = max(after, st.LastFire) // never fire an occurrence twice
	}
	n, ok := d.NextFire(st.Anchor, after)
	if ok && !d.Paused() {
		st.NextFire = n
	}
	if d.Chained() {
		if exists {
			st.Chain = pruneChain(t.chain(i), d)
		} else {
			st.Chain = &record.Chain{}
		}
		if rel := st.Chain.Release; rel != nil && !d.Paused() {
			st.NextFire = rel.At
		}
	}
	if d.Chained() || old.Chained() {
		var was *task.Definition
		if exists {
			was = &old
		}
		r.relink(c, key, was, d)
	}
	if i, err = t.set(key, d, &st, data); err != nil {
		return "", "", "", err
	}
	if !d.Paused() {
		r.resumeRuns(key, now)
	}
	switch {
	case d.ChainOnly():
		if st.NextFire > 0 {
			t.schedule(i)
		} else {
			t.unschedule(i)
		}
		c.touch(i, key)
	case !ok && d.Retry != nil && len(r.runs.byKey[key]) > 0:
		// Its last occurrence may still be fired again: paused, resumed
		// or changed, it ends with its run (endWithLastRun), as it does
		// unchanged (fireSlot).
		t.unschedule(i)
		c.touch(i, key)
	case !ok:
		c.touch(i, key) // set just now: its state is not written yet
		if err := r.finish(c, i, key, record.EndCompleted, now); err != nil {
			return "", "", "", err
		}
		detail = "no occurrence left to fire"
	case d.Paused():
		t.unschedule(i) // kept, but due never
		c.touch(i, key)
	default:
		t.schedule(i)
		c.touch(i, key)
	}
	if d.Chained() {
		if err := r.evaluate(ctx, c, i, key, now, ""); err != nil {
			return "", "", "", err
		}
	}
	return action, outcome, detail, nil
}

// sameCadence reports whether two definitions repeat alike: same
// frequency, same cron expression read in the same dialect and time zone,
// same rrule.
func sameCadence(a, b *task.Definition) bool {
	if (a.Frequency == nil) != (b.Frequency == nil) || a.Frequency != nil && *a.Frequency != *b.Frequency {
		return false
	}
	return a.Cron == b.Cron && a.Rrule == b.Rrule && a.Timezone == b.Timezone && (a.Cron == "" || a.Dialect() == b.Dialect())
}

// changeAction names a change of definition for the audit trail: pausing
// and resuming are told apart from other updates.
func changeAction(old, d *task.Definition) string {
	if old.Paused() != d.Paused() {
		a, b := *old, *d
		a.Active, b.Active, a.Action, b.Action = nil, nil, "", ""
		if a.Equal(&b) {
			if d.Paused() {
				return record.ActionTaskPaused
			}
			return record.ActionTaskResumed
		}
	}
	return record.ActionTaskUpdated
}

// notCommand reports whether rec is no command: an event a task fired
// (they carry the fire id header, commands never do) or a sync's barrier.
func notCommand(rec *kgo.Record) bool {
	for _, h := range rec.Headers {
		if h.Key == record.HeaderFireID || h.Key == record.HeaderBarrier {
			return true
		}
	}
	return false
}

func sourceOf(rec *kgo.Record) record.Source {
	var s record.Source
	for _, h := range rec.Headers {
		switch h.Key {
		case record.HeaderBatch:
			s.Batch = string(h.Value)
		case record.HeaderFile:
			s.File = string(h.Value)
		case record.HeaderFolder:
			s.Folder = string(h.Value)
		case record.HeaderRow:
			s.Row, _ = strconv.Atoi(string(h.Value))
		case record.HeaderActor:
			s.Actor = string(h.Value)
		}
	}
	return s
}
