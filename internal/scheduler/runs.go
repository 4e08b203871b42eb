package scheduler

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"strings"

	segjson "github.com/segmentio/encoding/json"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"

	"github.com/jobdrop/jobdrop/task"
)

// A run is one occurrence of a watched task on its way through its
// attempts: the engine waits for its workers' final status, fires it
// again after a failure when the task has a retry policy, and once it
// ends tells the tasks that follow it. A task is watched while another
// follows it (a link) or while it has a retry policy; the runs of other
// tasks are not kept, and their statuses cost one map lookup.
//
// A run is kept on the state topic as record.RunKeyPrefix says.
type run struct {
	record.RunState

	at int // in runs.timers; -1 when not there
}

// due is when the run's timer goes off: its retry, else its deadline.
func (u *run) due() int64 {
	if u.RetryAt > 0 {
		return u.RetryAt
	}
	return u.Deadline
}

const linkPrefix = "#link\x00"

func runKey(id string) string { return record.RunKeyPrefix + id }

// linkKey is the state key of the link of follower to pred; neither key
// holds a NUL.
func linkKey(pred, follower string) string { return linkPrefix + pred + "\x00" + follower }

// stateLink is the value of a link on the state topic.
type stateLink struct {
	Pred     string `json:"pred"`
	Follower string `json:"follower"`
}

// runs holds a runner's watched runs and their timers.
type runs struct {
	byRun  map[string]*run
	byFire map[string]*run // by the attempt in flight
	byKey  map[string]map[string]*run
	timers runTimers
	// links maps a task to the tasks that follow it.
	links map[string]map[string]bool
}

func newRuns() *runs {
	return &runs{byRun: map[string]*run{}, byFire: map[string]*run{}, byKey: map[string]map[string]*run{},
		links: map[string]map[string]bool{}}
}

// put adds or replaces run u.
func (rs *runs) put(u *run) {
	if old, ok := rs.byRun[u.Run]; ok {
		rs.drop(old)
	}
	u.at = -1
	rs.byRun[u.Run] = u
	if u.RetryAt == 0 {
		rs.byFire[u.Fire] = u
	}
	if rs.byKey[u.Key] == nil {
		rs.byKey[u.Key] = map[string]*run{}
	}
	rs.byKey[u.Key][u.Run] = u
	rs.arm(u)
}

// drop forgets run u.
func (rs *runs) drop(u *run) {
	if rs.byFire[u.Fire] == u {
		delete(rs.byFire, u.Fire)
	}
	delete(rs.byRun, u.Run)
	if m := rs.byKey[u.Key]; m != nil {
		delete(m, u.Run)
		if len(m) == 0 {
			delete(rs.byKey, u.Key)
		}
	}
	rs.disarm(u)
}

// arm puts u's timer in place, or takes it out when it has none.
func (rs *runs) arm(u *run) {
	switch {
	case u.due() == 0:
		rs.disarm(u)
	case u.at >= 0:
		heap.Fix(&rs.timers, u.at)
	default:
		heap.Push(&rs.timers, u)
	}
}

func (rs *runs) disarm(u *run) {
	if u.at >= 0 {
		heap.Remove(&rs.timers, u.at)
	}
}

// next is the run whose timer goes off first, and when.
func (rs *runs) next() (*run, int64, bool) {
	if len(rs.timers) == 0 {
		return nil, 0, false
	}
	u := rs.timers[0]
	return u, u.due(), true
}

// watched reports whether the fires of the task with key and definition
// d are watched: another task follows it, or it retries.
func (rs *runs) watched(key string, d *task.Definition) bool {
	return d.Retry != nil || len(rs.links[key]) > 0
}

// runTimers is a min-heap of runs by due time.
type runTimers []*run

func (h runTimers) Len() int           { return len(h) }
func (h runTimers) Less(a, b int) bool { return h[a].due() < h[b].due() }
func (h runTimers) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].at, h[b].at = a, b
}
func (h *runTimers) Push(x any) {
	u := x.(*run)
	u.at = len(*h)
	*h = append(*h, u)
}
func (h *runTimers) Pop() any {
	old := *h
	u := old[len(old)-1]
	*h = old[:len(old)-1]
	u.at = -1
	return u
}

// restoreRecord takes a run or link record of the state topic into rs;
// it reports whether key was one.
func (rs *runs) restoreRecord(key string, value []byte) (bool, error) {
	switch {
	case strings.HasPrefix(key, record.RunKeyPrefix):
		id := strings.TrimPrefix(key, record.RunKeyPrefix)
		if u, ok := rs.byRun[id]; ok {
			rs.drop(u)
		}
		if value == nil {
			return true, nil
		}
		u := &run{}
		if err := segjson.Unmarshal(value, u); err != nil {
			return true, fmt.Errorf("run %s: %w", id, err)
		}
		rs.put(u)
		return true, nil
	case strings.HasPrefix(key, linkPrefix):
		pred, follower, ok := strings.Cut(strings.TrimPrefix(key, linkPrefix), "\x00")
		if !ok {
			return true, nil
		}
		rs.link(pred, follower, value != nil)
		return true, nil
	}
	return false, nil
}

// link records (add) or forgets that follower follows pred, and reports
// whether that changed anything.
func (rs *runs) link(pred, follower string, add bool) bool {
	m := rs.links[pred]
	if add == m[follower] {
		return false
	}
	if add {
		if m == nil {
			m = map[string]bool{}
			rs.links[pred] = m
		}
		m[follower] = true
		return true
	}
	delete(m, follower)
	if len(m) == 0 {
		delete(rs.links, pred)
	}
	return true
}

// runWrite is a run record to write in the transaction: the run as it
// is now, or its tombstone.
type runWrite struct {
	id  string
	run *run // nil: the run ended
}

// linkWrite is a link record to write: added or removed.
type linkWrite struct {
	pred, follower string
	add            bool
}

// writeRuns produces the run and link records of change c, the runs of
// its watched fires among them.
func (r *runner) writeRuns(c *change, now int64, produce func(*kgo.Record)) {
	for _, f := range c.fires {
		if f.refused != nil || !f.watched {
			continue
		}
		f.runAfter = r.runOf(f, now)
		produce(r.stateRecord(runKey(f.runAfter.Run), encode(f.runAfter)))
	}
	for _, w := range c.runs {
		var v []byte
		if w.run != nil {
			v = encode(w.run)
		}
		produce(r.stateRecord(runKey(w.id), v))
	}
	for _, l := range c.links {
		var v []byte
		if l.add {
			v = encode(stateLink{Pred: l.pred, Follower: l.follower})
		}
		produce(r.stateRecord(linkKey(l.pred, l.follower), v))
	}
}

// runOf is the run watched fire f starts, or continues (a retry), once
// committed at now.
func (r *runner) runOf(f *fire, now int64) *run {
	u := &run{RunState: record.RunState{Key: f.key, Run: f.fireID, Fire: f.fireID, Attempt: 1, Scheduled: f.scheduled, FiredAt: now,
		After: f.after, Triggered: f.triggered}}
	if f.attempt > 1 {
		u.Run, u.Attempt = f.run, f.attempt
	}
	if rt := f.shape.Retry; rt != nil && rt.OnOverdue && f.shape.Timeout > 0 {
		u.Deadline = now + f.shape.Timeout
	}
	return u
}

// maxOpenRuns bounds the runs of one task the engine waits on: a task
// whose workers never report (fire and forget) would otherwise pile them
// up. Past it, the oldest is given up: nothing follows from it.
const maxOpenRuns = 100

// capRuns gives up, for each task c fires watched, its oldest runs past
// maxOpenRuns.
func (r *runner) capRuns(c *change, now int64) {
	firing := map[string]int{}
	for _, f := range c.fires {
		if f.watched && f.attempt <= 1 {
			firing[f.key]++
		}
	}
	for key, n := range firing {
		open := r.runs.byKey[key]
		if len(open)+n <= maxOpenRuns {
			continue
		}
		runs := make([]*run, 0, len(open))
		for _, u := range open {
			runs = append(runs, u)
		}
		slices.SortFunc(runs, func(a, b *run) int { return cmp.Compare(a.FiredAt, b.FiredAt) })
		drop := runs[:min(len(runs), len(open)+n-maxOpenRuns)]
		for _, u := range drop {
			r.runs.drop(u)
			c.runs = append(c.runs, runWrite{id: u.Run})
		}
		c.audits = append(c.audits, r.engineAudit(record.ActionTaskRunFailed, key, drop[0].Fire, record.OutcomeNoChange,
			fmt.Sprintf("%d runs given up: more than %d runs of the task waited for a final status; their outcome releases nothing", len(drop), maxOpenRuns), now))
	}
}

// committedRuns takes into the runner the runs its committed watched
// fires started or continued.
func (r *runner) committedRuns(c *change) {
	for _, f := range c.fires {
		if f.refused == nil && f.runAfter != nil {
			r.runs.put(f.runAfter)
		}
	}
}
