package scheduler

import (
	"github.com/twmb/franz-go/pkg/kgo"
)

// change collects what one transaction writes besides fired events.
type change struct {
	dirty  map[int32]struct{} // slots whose state changed
	ended  map[string]ending  // keys of the tasks to tombstone → why
	fires  []*fire
	audits []*kgo.Record
	// forwards are commands written again onto the input topic, keyed as
	// the task's other commands are (see rekeyAvro).
	forwards []*kgo.Record
	// status holds the next offset of each status partition read in
	// this transaction.
	status map[int32]int64
	// runs and links are the run and link records to write.
	runs  []runWrite
	links []linkWrite
}

func newChange() *change {
	return &change{dirty: map[int32]struct{}{}, ended: map[string]ending{}, status: map[int32]int64{}}
}

// reset empties c for the next transaction, keeping the room it grew.
func (c *change) reset() {
	if c.dirty == nil {
		*c = *newChange()
		return
	}
	clear(c.dirty)
	clear(c.ended)
	clear(c.status)
	c.fires = c.fires[:0]
	c.audits = clearSlice(c.audits)
	c.forwards = clearSlice(c.forwards)
	c.runs = clearSlice(c.runs)
	c.links = clearSlice(c.links)
}

// clearSlice empties s, letting go of what its values point to.
func clearSlice[S ~[]E, E any](s S) S {
	clear(s)
	return s[:0]
}

// ending is how a task ends: why, and its last state when that is not
// written yet.
type ending struct {
	reason string
	final  []byte
}

// touch marks the state of slot i, whose task has key, to be written.
func (c *change) touch(i int32, key string) {
	c.dirty[i] = struct{}{}
	delete(c.ended, key) // deleted and created again in one transaction
}

// finish removes the task of slot i, which has key, and marks it to be
// tombstoned for reason. When this transaction created or changed it (its
// slot is dirty), its state goes first: a task that ends as it is created
// (a one-shot already past, fired at once) keeps its definition and the
// file it came from for every reader of the state topic.
func (r *runner) finish(c *change, i int32, key, reason string, now int64) error {
	if d := r.tasks.shape(i); d.Chained() {
		r.relink(c, key, d, nil)
	}
	var final []byte
	if _, dirty := c.dirty[i]; dirty {
		_, data, err := r.tasks.read(i)
		if err != nil {
			return err
		}
		final = encodeState(r.tasks.state(i, key, now), data)
	}
	r.tasks.remove(i, key)
	delete(c.dirty, i)
	c.ended[key] = ending{reason: reason, final: final}
	return nil
}
