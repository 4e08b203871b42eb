package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	segjson "github.com/segmentio/encoding/json"
	"github.com/twmb/franz-go/pkg/kgo"

	cmdrecord "github.com/jobdrop/jobdrop/internal/command"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// Every runner reads every partition of the status topic (read
// committed, from the offsets it checkpointed with its state), since a
// status is keyed by fire id and lands wherever that hashes: the
// runner acts on the statuses of the runs it watches and passes over the
// others after a map lookup. A run's first final status decides it
// (SUCCESS, or FAILED, which a retry policy answers with the next
// attempt); later reports of the same attempt change nothing, here or
// in the console.

// applyStatus applies the status record rec, of the status topic's
// partition rec.Partition, to change c at now.
func (r *runner) applyStatus(rec *kgo.Record, now int64, c *change) error {
	if rec.Offset < r.statusNext[rec.Partition] {
		return nil // applied before a restore
	}
	c.status[rec.Partition] = rec.Offset + 1
	u, ok := r.runs.byFire[string(rec.Key)]
	if !ok {
		return nil
	}
	var st record.Status
	if err := segjson.Unmarshal(rec.Value, &st); err != nil {
		r.log.Warn("unreadable status skipped", "partition", rec.Partition, "offset", rec.Offset, "err", err)
		return nil
	}
	status := strings.ToUpper(strings.TrimSpace(st.Status))
	if status != record.StatusSuccess && status != record.StatusFailed {
		return nil // RUNNING, or log lines: the run goes on
	}
	return r.endAttempt(c, u, status, st.Message, now)
}

// endAttempt ends the attempt in flight of run u in status (SUCCESS or
// FAILED, with the worker's message) at now: a failure with attempts
// left schedules the next one; anything else ends the run and tells the
// tasks that follow it.
func (r *runner) endAttempt(c *change, u *run, status, message string, now int64) error {
	t := r.tasks
	i, exists, err := t.find(u.Key)
	if err != nil {
		return err
	}
	var rt *task.Retry
	paused := false
	if exists {
		rt = t.shape(i).Retry
		paused = t.shape(i).Paused()
	}
	delete(r.runs.byFire, u.Fire)
	if status == record.StatusFailed && rt != nil && u.Attempt < rt.Attempts && !paused {
		u.RetryAt = now + rt.Wait(u.Attempt).Milliseconds()
		u.Deadline = 0
		r.runs.arm(u)
		c.runs = append(c.runs, runWrite{id: u.Run, run: u})
		c.audits = append(c.audits, r.engineAudit(record.ActionTaskRetryScheduled, u.Key, u.Fire, record.OutcomeOK,
			fmt.Sprintf("attempt %d of %d failed%s; attempt %d at %s", u.Attempt, rt.Attempts, reason(message),
				u.Attempt+1, formatMillis(u.RetryAt)), now))
		return nil
	}
	if err := r.endRun(c, u, status, message, now); err != nil {
		return err
	}
	if status == record.StatusFailed && rt != nil {
		detail := fmt.Sprintf("attempt %d of %d failed%s", u.Attempt, rt.Attempts, reason(message))
		if paused {
			detail += "; not tried again: the task is paused"
		}
		c.audits = append(c.audits, r.engineAudit(record.ActionTaskRunFailed, u.Key, u.Fire, record.OutcomeFailed, detail, now))
	}
	return nil
}

// endRun ends run u in status and sends its outcome to every task that
// follows its task. A task with a retry policy whose last occurrence
// this was ends with it.
func (r *runner) endRun(c *change, u *run, status, message string, now int64) error {
	r.runs.drop(u)
	c.runs = append(c.runs, runWrite{id: u.Run})
	if err := r.endWithLastRun(c, u.Key, now); err != nil {
		return err
	}
	r.tell(c, record.Outcome{Pred: u.Key, Run: u.Run, Fire: u.Fire, Status: status, Message: message, At: now},
		slices.Collect(maps.Keys(r.runs.links[u.Key])))
	return nil
}

// outcomeFollowers bounds the followers one outcome record tells: a
// predecessor of a million keeps its records far below the brokers'
// size limit.
const outcomeFollowers = 1000

// tell writes outcome o to followers, through the input topic: one
// record for the followers of each input partition, keyed by one of them
// (up to outcomeFollowers each), so a predecessor of ten thousand costs a
// record per partition, not ten thousand.
func (r *runner) tell(c *change, o record.Outcome, followers []string) {
	byPartition := map[int][]string{}
	for _, f := range followers {
		p, ok := r.inputPartition(f)
		if !ok {
			p = -1 // partitions unknown: a record each, placed by its key
		}
		byPartition[p] = append(byPartition[p], f)
	}
	for p, group := range byPartition {
		slices.Sort(group)
		size := outcomeFollowers
		if p < 0 {
			size = 1
		}
		for chunk := range slices.Chunk(group, size) {
			o.Followers = nil
			if len(chunk) > 1 {
				o.Followers = chunk
			}
			c.forwards = append(c.forwards, r.outcomeRecord(chunk[0], o))
		}
	}
}

// outcomeRecord is the record of outcome o for the input partition of
// key.
func (r *runner) outcomeRecord(key string, o record.Outcome) *kgo.Record {
	return &kgo.Record{Topic: r.e.cfg.Topics.Input, Key: []byte(key), Value: encode(o),
		Headers: []kgo.RecordHeader{{Key: record.HeaderOutcome, Value: []byte(o.Status)}}}
}

// endWithLastRun ends the task with key when it has no occurrence left
// and no run of it is on its way any more: a task with a retry policy
// outlives its last fire until then (see fireSlot).
func (r *runner) endWithLastRun(c *change, key string, now int64) error {
	t := r.tasks
	i, exists, err := t.find(key)
	if err != nil || !exists || len(r.runs.byKey[key]) > 0 {
		return err
	}
	d := t.shape(i)
	if t.at(i).nextFire != 0 || d.ChainOnly() || d.Paused() || d.Retry == nil {
		return nil
	}
	if _, more := d.NextFire(t.at(i).anchor, max(t.at(i).lastFire, t.at(i).anchor)); more {
		return nil
	}
	return r.finish(c, i, key, record.EndCompleted, now)
}

func reason(message string) string {
	if message == "" {
		return ""
	}
	return ": " + message
}

// fireRunsDue adds to c what the run timers due at now call for: the
// next attempt of a run whose retry is due, or the failure of an attempt
// past its deadline.
func (r *runner) fireRunsDue(ctx context.Context, c *change, now int64) error {
	for len(c.fires) < r.e.cfg.MaxFiresPerTxn {
		u, due, ok := r.runs.next()
		if !ok || due > now {
			return nil
		}
		if u.RetryAt == 0 {
			u.Deadline = 0
			r.runs.arm(u)
			if err := r.endAttempt(c, u, record.StatusFailed, "overdue: no final status "+
				time.Duration(now-u.FiredAt).Round(time.Second).String()+" after the fire", now); err != nil {
				return err
			}
			continue
		}
		if err := r.retry(ctx, c, u, now); err != nil {
			return err
		}
	}
	return nil
}

// retry fires the next attempt of run u, whose retry is due at now.
func (r *runner) retry(ctx context.Context, c *change, u *run, now int64) error {
	t := r.tasks
	i, exists, err := t.find(u.Key)
	if err != nil {
		return err
	}
	if !exists {
		u.RetryAt = 0
		return r.endRun(c, u, record.StatusFailed, "not tried again: the task was deleted", now)
	}
	if t.shape(i).Paused() {
		// Waits for the task to be resumed (see resumeRuns).
		r.runs.disarm(u)
		return nil
	}
	k, data, err := t.read(i)
	if err != nil {
		return err
	}
	f := r.newFire(ctx, i, string(k), data, u.Scheduled)
	f.attempt, f.run, f.after, f.triggered = u.Attempt+1, u.Run, u.After, u.Triggered
	f.fireID = record.AttemptFireID(u.Run, f.attempt)
	f.retryOf = u
	f.watched = true
	// The attempt goes out at most once: until the transaction commits
	// (and committedRuns replaces the run) the timer is off.
	r.runs.disarm(u)
	c.fires = append(c.fires, f)
	return nil
}

// resumeRuns sets the timers of the retries of the task with key that
// waited for it to be resumed.
func (r *runner) resumeRuns(key string, now int64) {
	for _, u := range r.runs.byKey[key] {
		if u.RetryAt > 0 && u.at < 0 {
			u.RetryAt = max(u.RetryAt, now)
			r.runs.arm(u)
		}
	}
}

// applyLink applies a link record of the input topic: the task rec is
// keyed by is followed, or no longer, by the task its value names.
func (r *runner) applyLink(rec *kgo.Record, op string, c *change) {
	var l record.Link
	if err := segjson.Unmarshal(rec.Value, &l); err != nil || !strings.Contains(l.Follower, "/") {
		r.log.Warn("unreadable link skipped", "offset", rec.Offset, "key", string(rec.Key))
		return
	}
	pred, add := string(rec.Key), op == record.LinkAdd
	if r.runs.link(pred, l.Follower, add) {
		c.links = append(c.links, linkWrite{pred: pred, follower: l.Follower, add: add})
	}
}

// relink writes the links that a chained task of key, now defined as d
// (nil: gone), needs after old (nil: new): one for each predecessor it
// names, which its partition keeps if it has it already, and the removal
// of those it no longer names.
func (r *runner) relink(c *change, key string, old, d *task.Definition) {
	var was []string
	if old != nil {
		was = old.Predecessors()
	}
	var now []string
	if d != nil {
		now = d.Predecessors()
	}
	input := r.e.cfg.Topics.Input
	for _, p := range now {
		c.forwards = append(c.forwards, cmdrecord.LinkRecord(input, p, key, true))
	}
	for _, p := range was {
		if !slices.Contains(now, p) {
			c.forwards = append(c.forwards, cmdrecord.LinkRecord(input, p, key, false))
		}
	}
}
