package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"

	segjson "github.com/segmentio/encoding/json"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// A chained task learns how its predecessors' runs ended from outcome
// records on its own input partition, which the predecessors' runners
// write in the transaction that reads each run's final status. Its
// chain (record.Chain) keeps the latest ended run of each predecessor,
// marked fresh until a fire (or an operator's skip) spends it; it fires
// once every predecessor has a fresh run in the outcome it waits for, in
// the transaction that applies the last outcome (or, with a delay or a
// start still ahead, at that time), under a fire id made of those runs.
// A chain is written with the task's state, so a restart or a new owner
// of the partition goes on where it stood.

// applyOutcome applies an outcome record to change c at now: a run of a
// predecessor of the tasks it tells ended (see tell).
func (r *runner) applyOutcome(ctx context.Context, rec *kgo.Record, now int64, c *change) error {
	var o record.Outcome
	if err := segjson.Unmarshal(rec.Value, &o); err != nil || o.Run == "" {
		r.log.Warn("unreadable outcome skipped", "offset", rec.Offset, "key", string(rec.Key))
		return nil
	}
	if len(o.Followers) == 0 {
		return r.applyOutcomeTo(ctx, string(rec.Key), &o, now, c)
	}
	var elsewhere []string
	for _, key := range o.Followers {
		if p, ok := r.inputPartition(key); ok && p != int(r.p) {
			// Placed here by a writer that counted the input
			// partitions otherwise: sent on, to its own.
			elsewhere = append(elsewhere, key)
			continue
		}
		if err := r.applyOutcomeTo(ctx, key, &o, now, c); err != nil {
			return err
		}
	}
	o.Followers = nil
	for _, key := range elsewhere {
		c.forwards = append(c.forwards, r.outcomeRecord(key, o))
	}
	return nil
}

// applyOutcomeTo applies outcome o to the task with key, if it still
// follows o's predecessor.
func (r *runner) applyOutcomeTo(ctx context.Context, key string, o *record.Outcome, now int64, c *change) error {
	t := r.tasks
	i, exists, err := t.find(key)
	if err != nil || !exists {
		return err
	}
	preds := t.shape(i).Predecessors()
	at := slices.Index(preds, o.Pred)
	if at < 0 {
		return nil // it follows that task no more
	}
	ch := t.chain(i)
	if ch == nil {
		ch = &record.Chain{}
	}
	pr := record.PredRun{Key: o.Pred, Run: o.Run, Fire: o.Fire, Status: o.Status, At: o.At, Fresh: true}
	if j := slices.IndexFunc(ch.Preds, func(p record.PredRun) bool { return p.Key == o.Pred }); j >= 0 {
		if ch.Preds[j].Run == o.Run {
			return nil // told twice
		}
		ch.Preds[j] = pr
	} else {
		ch.Preds = append(ch.Preds, pr)
		slices.SortStableFunc(ch.Preds, func(a, b record.PredRun) int {
			return slices.Index(preds, a.Key) - slices.Index(preds, b.Key)
		})
	}
	t.setChain(i, ch)
	c.touch(i, key)
	return r.evaluate(ctx, c, i, key, now, o.Message)
}

// evaluate decides what the chain of slot i, whose task has key, calls
// for at now: held by a predecessor's failure, released (a fire now, or
// one on its way), or nothing yet. message is the worker's word on the
// outcome just applied, if any.
func (r *runner) evaluate(ctx context.Context, c *change, i int32, key string, now int64, message string) error {
	t := r.tasks
	ch := t.chain(i)
	if ch == nil {
		return nil
	}
	d := t.shape(i)
	on := d.Waits()
	held, heldBy := "", ""
	for j := range ch.Preds {
		pr := &ch.Preds[j]
		switch {
		case !pr.Fresh:
		case on.Holds(pr.Status):
			// Said once per failed run: the audit event is written when
			// the chain comes to be held by it.
			heldBy = fmt.Sprintf("%s %s (run %s)", pr.Key, pr.Status, pr.Run)
			held = heldBy
			if message != "" {
				held += ": " + message
			}
		case !on.Accepts(pr.Status):
			pr.Fresh = false // an error handler's predecessor succeeded: nothing to do
		}
	}
	if held != "" {
		if !strings.HasPrefix(ch.Held, heldBy) {
			ch.Held = held
			c.audits = append(c.audits, r.engineAudit(record.ActionChainHeld, key, "", record.OutcomeFailed,
				"held: "+held+"; release it, skip this run, or run the predecessor again", now))
		}
		return nil
	}
	ch.Held = ""
	runs, ready := readyRuns(d, ch)
	if !ready || d.Paused() {
		return nil
	}
	s := t.at(i)
	if d.ChainOnly() {
		if ch.Release != nil {
			return nil // one is on its way: these outcomes wait for the next
		}
		at := now + d.Delay
		if s.hasStart {
			at = max(at, s.anchor)
		}
		id := record.ChainFireID(d.Host, key[len(d.Host)+1:], runs)
		spend(ch)
		if at > now {
			ch.Release = &record.Release{At: at, FireID: id, Runs: runs}
			s.nextFire = at
			t.schedule(i)
			return nil
		}
		return r.chainFire(ctx, c, i, key, now, id, runs)
	}
	if ch.Waiting == 0 {
		return nil // ready: its next occurrence fires
	}
	at := ch.Waiting
	ch.Waiting = 0
	spend(ch)
	return r.chainFire(ctx, c, i, key, at, record.FireID(d.Host, key[len(d.Host)+1:], at), runs)
}

// readyRuns reports whether every predecessor d names has a fresh run in
// ch in the outcome d waits for, and those runs in After's order.
func readyRuns(d *task.Definition, ch *record.Chain) ([]string, bool) {
	preds := d.Predecessors()
	runs := make([]string, 0, len(preds))
	on := d.Waits()
	for _, p := range preds {
		j := slices.IndexFunc(ch.Preds, func(pr record.PredRun) bool { return pr.Key == p })
		if j < 0 || !ch.Preds[j].Fresh || !on.Accepts(ch.Preds[j].Status) {
			return nil, false
		}
		runs = append(runs, ch.Preds[j].Run)
	}
	return runs, true
}

// spend marks every run of ch spent.
func spend(ch *record.Chain) {
	for j := range ch.Preds {
		ch.Preds[j].Fresh = false
	}
}

// currentRuns are the latest runs of ch's predecessors, spent or not, in
// order: what an operator's release fires on.
func currentRuns(ch *record.Chain) []string {
	var runs []string
	if ch != nil {
		for _, pr := range ch.Preds {
			runs = append(runs, pr.Run)
		}
	}
	return runs
}

// chainFire fires the task of slot i, which has key, released by the
// predecessors' runs runs, for the occurrence scheduled at, under fire id
// id.
func (r *runner) chainFire(ctx context.Context, c *change, i int32, key string, at int64, id string, runs []string) error {
	_, data, err := r.tasks.read(i)
	if err != nil {
		return err
	}
	f := r.newFire(ctx, i, key, data, at)
	r.tasks.at(i).fireCount++
	f.fireID, f.after = id, runs
	c.fires = append(c.fires, f)
	c.touch(i, key)
	return nil
}

// fireRelease fires the release on its way of chain-only slot i, whose
// task has key and data, due now.
func (r *runner) fireRelease(ctx context.Context, c *change, i int32, key string, data []byte) {
	t := r.tasks
	ch := t.chain(i)
	s := t.at(i)
	s.nextFire = 0
	t.unschedule(i)
	c.touch(i, key)
	if ch == nil || ch.Release == nil {
		return
	}
	rel := ch.Release
	ch.Release = nil
	f := r.newFire(ctx, i, key, data, rel.At)
	s.fireCount++
	f.fireID, f.after = rel.FireID, rel.Runs
	c.fires = append(c.fires, f)
}

// gate decides whether the occurrence at of slot i, a chained task with
// a schedule of its own, fires now: only once its predecessors released
// it. Otherwise the occurrence waits for them (replacing one that waited
// already). It returns the runs that released it.
func (r *runner) gate(c *change, i int32, key string, at, now int64) ([]string, bool) {
	t := r.tasks
	ch := t.chain(i)
	if ch == nil {
		ch = &record.Chain{}
		t.setChain(i, ch)
	}
	d := t.shape(i)
	if runs, ok := readyRuns(d, ch); ok && ch.Held == "" {
		spend(ch)
		ch.Waiting = 0
		return runs, true
	}
	if ch.Waiting != 0 && ch.Waiting != at {
		c.audits = append(c.audits, r.engineAudit(record.ActionTaskRunSkipped, key, record.FireID(d.Host, key[len(d.Host)+1:], ch.Waiting),
			record.OutcomeNoChange, fmt.Sprintf("occurrence %s not fired: its predecessors had not released it by the next one, %s",
				formatMillis(ch.Waiting), formatMillis(at)), now))
	}
	ch.Waiting = at
	c.touch(i, key)
	return nil, false
}

// releaseCommand applies an operator's RELEASE of the task of slot i,
// which has key, sent by rec: it fires now, on whatever its predecessors
// last did, and what it waited for is spent. It returns the command's
// audit outcome and detail.
func (r *runner) releaseCommand(ctx context.Context, c *change, rec *kgo.Record, i int32, key string, now int64) (string, string, error) {
	t := r.tasks
	d := t.shape(i)
	if !d.Chained() {
		return record.OutcomeRejected, "it follows no task: TRIGGER fires it now", nil
	}
	ch := t.chain(i)
	if ch == nil {
		ch = &record.Chain{}
		t.setChain(i, ch)
	}
	runs := currentRuns(ch)
	detail := "fired now"
	if ch.Held != "" {
		detail += ", past the chain held by " + ch.Held
	}
	at := now
	if ch.Waiting != 0 {
		at = ch.Waiting
	}
	spend(ch)
	ch.Held, ch.Waiting, ch.Release = "", 0, nil
	if d.ChainOnly() {
		t.at(i).nextFire = 0
		t.unschedule(i)
	}
	if err := r.chainFire(ctx, c, i, key, at, record.ReleaseFireID(d.Host, key[len(d.Host)+1:], rec.Partition, rec.Offset), runs); err != nil {
		return "", "", err
	}
	c.fires[len(c.fires)-1].triggered = true
	return record.OutcomeOK, detail, nil
}

// skipCommand applies an operator's SKIP of the task of slot i, which
// has key: what it waited for is spent, and nothing fires.
func (r *runner) skipCommand(c *change, i int32, key string) (string, string) {
	t := r.tasks
	d := t.shape(i)
	ch := t.chain(i)
	if !d.Chained() {
		return record.OutcomeRejected, "it follows no task"
	}
	if ch == nil || (ch.Held == "" && ch.Waiting == 0 && ch.Release == nil && !anyFresh(ch)) {
		return record.OutcomeNoChange, "nothing waits"
	}
	detail := "run skipped"
	if ch.Held != "" {
		detail += ": it was held by " + ch.Held
	}
	spend(ch)
	ch.Held, ch.Waiting, ch.Release = "", 0, nil
	if d.ChainOnly() {
		t.at(i).nextFire = 0
		t.unschedule(i)
	}
	c.touch(i, key)
	return record.OutcomeOK, detail
}

func anyFresh(ch *record.Chain) bool {
	return slices.ContainsFunc(ch.Preds, func(pr record.PredRun) bool { return pr.Fresh })
}

// pruneChain is ch as a task now defined as d keeps it: the runs of the
// predecessors it still names. Nil when d follows no task.
func pruneChain(ch *record.Chain, d *task.Definition) *record.Chain {
	if !d.Chained() {
		return nil
	}
	if ch == nil {
		return &record.Chain{}
	}
	preds := d.Predecessors()
	out := *ch
	out.Preds = slices.DeleteFunc(slices.Clone(ch.Preds), func(pr record.PredRun) bool { return !slices.Contains(preds, pr.Key) })
	if !d.ChainOnly() {
		out.Release = nil
	} else {
		out.Waiting = 0
	}
	return &out
}
