package diff

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	segjson "github.com/segmentio/encoding/json"

	"github.com/jobdrop/jobdrop/task"
)

// Kind says what a new version does to one task.
type Kind string

// The kinds of change.
const (
	Added     Kind = "added"
	Changed   Kind = "changed"
	Removed   Kind = "removed"
	Unchanged Kind = "unchanged"
)

// Current is a task as it runs now, for a Plan.
type Current struct {
	Key        string
	Definition task.Definition
	// Live is false for a task that ended (completed or deleted): its
	// definition is kept, so a row identical to it is unchanged and not
	// made to run again.
	Live bool
	// InScope marks a task of the source: one the new version no longer
	// holds is removed. Tasks outside it are compared, never removed.
	InScope bool
}

// Sum is the digest of a definition as a sync compares them: its action
// and whether it is paused aside, since neither is part of what the task
// is (a task paused by an operator and dropped again unchanged stays
// paused).
//
// segmentio's encoder writes the same bytes as encoding/json in less than
// half the time: a sync of a large source sums every task twice.
func Sum(d *task.Definition) [32]byte {
	c := *d
	c.Action, c.Active = "", nil
	b, _ := segjson.Marshal(&c)
	return sha256.Sum256(b)
}

// Decode reads a definition stored as JSON, as fast as Sum writes one.
func Decode(b []byte, d *task.Definition) error { return segjson.Unmarshal(b, d) }

// known is what a Plan keeps of a current task.
type known struct {
	sum     [32]byte
	when    string   // its schedule in words
	after   []string // the keys of its predecessors, when it runs
	live    bool
	inScope bool
	paused  bool
	seen    bool
	// redefined: a row of the new version defines it, whose
	// predecessors are its own from now on.
	redefined bool
}

// Counts is the size of a diff.
type Counts struct {
	Added     int `json:"added"`
	Changed   int `json:"changed"`
	Removed   int `json:"removed"`
	Unchanged int `json:"unchanged"`
	// Scope counts the live tasks of the source before the new version.
	Scope int `json:"scope"`
}

// Changes is Added + Changed + Removed.
func (c Counts) Changes() int { return c.Added + c.Changed + c.Removed }

// Entry is what a Plan needs of one row of the new version.
type Entry struct {
	Key    string
	Sum    [32]byte // Sum of its definition
	Action task.Action
	When   string // its schedule in words
	Row    int    // where it is in the file, for the report
	// After are the keys of the tasks it follows.
	After []string
}

// EntryOf is the Entry of a row's definition.
func EntryOf(d *task.Definition) Entry {
	e := Entry{Key: d.Key(), Sum: Sum(d), Action: d.Action, When: d.When()}
	if d.Chained() && !d.Action.KeyOnly() {
		e.After = d.Predecessors()
	}
	return e
}

// Plan decides what a new version of a source does. Build it with
// NewPlan, Add the tasks that run now (every task of the scope, and any
// other task a row names), Count every row of the new version, then take
// the Removals; Command then gives each row's command, the same way
// however often it is asked. A Plan is not safe for concurrent use.
type Plan struct {
	tasks map[string]*known
	// follows holds the predecessors of each row of the new version
	// that follows tasks, by key.
	follows map[string][]string
	// dropped are the live tasks the DELETE rows of the new version
	// remove.
	dropped []string
	Counts
}

// NewPlan starts an empty plan.
func NewPlan() *Plan { return &Plan{tasks: map[string]*known{}, follows: map[string][]string{}} }

// Knows reports whether the plan has the task of key.
func (p *Plan) Knows(key string) bool { _, ok := p.tasks[key]; return ok }

// Add adds one current task to the plan, before any row is counted.
func (p *Plan) Add(c Current) {
	k := &known{sum: Sum(&c.Definition), when: c.Definition.When(), live: c.Live, inScope: c.InScope, paused: c.Definition.Paused()}
	if c.Live && c.Definition.Chained() {
		k.after = c.Definition.Predecessors()
	}
	if old, ok := p.tasks[c.Key]; ok {
		if old.inScope && old.live {
			p.Scope--
		}
		k.inScope = k.inScope || old.inScope
	}
	p.tasks[c.Key] = k
	if k.inScope && k.live {
		p.Scope++
	}
}

// kind says what a row does to the task it names, k (nil when none runs
// or ran): a DELETE row removes a live task; a TRIGGER, RELEASE or SKIP
// row changes nothing; a row identical to the task, running or ended, changes
// nothing (an ended one-shot is not made to fire again); a row different
// from an ended task, or naming none, adds one.
func kind(k *known, e Entry) Kind {
	switch {
	case e.Action.OneOff():
		return Unchanged
	case e.Action == task.Delete:
		if k == nil || !k.live {
			return Unchanged
		}
		return Removed
	case k == nil:
		return Added
	case e.Sum == k.sum:
		return Unchanged
	case !k.live:
		return Added
	}
	return Changed
}

// Count counts one row of the new version and returns what it does, with
// a line saying so for a change ("" when unchanged).
func (p *Plan) Count(e Entry) (Kind, string) {
	k := p.tasks[e.Key]
	if k != nil {
		k.seen = true
		k.redefined = k.redefined || !e.Action.KeyOnly()
	}
	if len(e.After) > 0 {
		p.follows[e.Key] = e.After
	}
	kd := kind(k, e)
	var line string
	switch kd {
	case Added:
		p.Added++
		line = fmt.Sprintf("+ %s: %s", e.Key, e.When)
	case Changed:
		p.Changed++
		if k.when == e.When {
			line = fmt.Sprintf("~ %s: %s (its data or settings)", e.Key, e.When)
		} else {
			line = fmt.Sprintf("~ %s: %s → %s", e.Key, k.when, e.When)
		}
	case Removed:
		p.Counts.Removed++
		p.dropped = append(p.dropped, e.Key)
		line = fmt.Sprintf("- %s: %s", e.Key, k.when)
	default:
		p.Unchanged++
	}
	return kd, line
}

// Removals lists, sorted, the live tasks of the scope that no row of the
// new version named, each with its line: the tasks it deletes. Call it
// once, after every row is counted.
func (p *Plan) Removals() (keys, lines []string) {
	for key, k := range p.tasks {
		if k.inScope && k.live && !k.seen {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		lines = append(lines, fmt.Sprintf("- %s: %s", key, p.tasks[key].when))
	}
	p.Counts.Removed += len(keys)
	return keys, lines
}

// Command is the command to send for a row of the new version; nil when
// the row changes nothing. A changed task keeps its pause unless the row
// says otherwise.
func (p *Plan) Command(d task.Definition) *task.Definition {
	k := p.tasks[d.Key()]
	switch kind(k, EntryOf(&d)) {
	case Unchanged:
		if d.Action.OneOff() {
			return &d
		}
		return nil
	case Changed:
		if d.Active == nil && k.paused {
			d.Active = task.Ptr(false)
		}
	}
	return &d
}

// Delete is the command that removes the task of key.
func Delete(key string) task.Definition {
	host, name, _ := task.SplitKey(key)
	return task.Definition{Host: host, Name: name, Action: task.Delete}
}

// Deleted lists, sorted, every live task the new version deletes: those
// Removals lists and those its DELETE rows remove. Call it after
// Removals.
func (p *Plan) Deleted() []string {
	keys := slices.Clone(p.dropped)
	for key, k := range p.tasks {
		if k.inScope && k.live && !k.seen {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Orphan is a task a new version deletes that tasks it keeps still
// follow: they would wait for it for ever.
type Orphan struct {
	Key string
	// Followers are the tasks that follow it, sorted.
	Followers []string
}

// maxFollowersNamed bounds the followers an Orphan's message names.
const maxFollowersNamed = 10

// String says it: "removes acme/extract, which acme/load and
// acme/transform still follow".
func (o Orphan) String() string {
	names := o.Followers[:min(len(o.Followers), maxFollowersNamed)]
	list := names[0]
	switch {
	case len(o.Followers) > len(names):
		list = strings.Join(names, ", ") + fmt.Sprintf(" and %d more", len(o.Followers)-len(names))
	case len(names) > 1:
		list = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	verb := "follows"
	if len(o.Followers) > 1 {
		verb = "follow"
	}
	return fmt.Sprintf("removes %s, which %s still %s", o.Key, list, verb)
}

// Orphans lists, by key, the tasks the new version deletes (Deleted) that
// a task it keeps still follows: a row of the new version, a live task
// of the plan it leaves alone, or one of others, the live tasks outside
// the plan that follow a deleted task (a task the plan knows is judged by
// the plan: a row redefines it, or the version deletes it). Call it after
// Removals.
func (p *Plan) Orphans(others []Current) []Orphan {
	deleted := map[string][]string{}
	for _, key := range p.Deleted() {
		deleted[key] = nil
	}
	if len(deleted) == 0 {
		return nil
	}
	follows := func(follower string, preds []string) {
		for _, pred := range preds {
			if fs, ok := deleted[pred]; ok && !slices.Contains(fs, follower) {
				deleted[pred] = append(fs, follower)
			}
		}
	}
	for key, preds := range p.follows {
		follows(key, preds)
	}
	for key, k := range p.tasks {
		if _, gone := deleted[key]; !gone && k.live && !k.redefined && len(k.after) > 0 {
			follows(key, k.after)
		}
	}
	for _, c := range others {
		if !p.Knows(c.Key) && c.Live {
			follows(c.Key, c.Definition.Predecessors())
		}
	}
	var out []Orphan
	for key, fs := range deleted {
		if len(fs) > 0 {
			slices.Sort(fs)
			out = append(out, Orphan{Key: key, Followers: fs})
		}
	}
	slices.SortFunc(out, func(a, b Orphan) int { return strings.Compare(a.Key, b.Key) })
	return out
}
