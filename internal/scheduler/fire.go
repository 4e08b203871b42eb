package scheduler

import (
	"context"
	"fmt"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// fire is one occurrence being fired in the current transaction. It holds
// what the event needs, so that its task may change or go before the
// transaction is written.
type fire struct {
	key       string
	data      []byte
	shape     *task.Definition
	src       source
	scheduled int64
	fireID    string
	partition int32
	offset    int64
	triggered bool
	err       error // what writing the event answered in the last attempt
	// msg is the message a message task fires (see message.go); nil for
	// a task of jobdrop's own.
	msg *task.Message
	// avro is the event of a task that came as Avro (avro.go); nil for
	// JSON.
	avro *avroEvent

	// before is the task as it was before this fire, for a scheduled
	// fire: what a refusal puts back; it points to prior.
	before *before
	prior  before
	// retried is the refused occurrence this fire attempts again.
	retried *record.Fault
	// collapsed is, for a catch-up fire standing for more than one missed
	// occurrence, how many, itself included; zero otherwise.
	collapsed int
	// suspect marks a fire refused together with others of its target
	// partition: it is written alone, to learn whether it is refused on
	// its own.
	suspect bool
	// refused is set once the fire is known refused for its task's own
	// reason: it is not written again in this transaction.
	refused *refusal

	// watched marks a fire whose run the engine follows (runs.go);
	// runAfter is that run once the fire is written.
	watched  bool
	runAfter *run
	// attempt and run are a retry's (attempt 2 or more, and its run's
	// first fire id); retryOf is the run it continues.
	attempt int
	run     string
	retryOf *run
	// after are the predecessors' runs that released a chained task.
	after []string
}

// before is a task's slot and fault before a scheduled fire changed them.
type before struct {
	slot  slot
	fault *record.Fault
}

func (f *fire) name() string { return f.key[len(f.shape.Host)+1:] }

// newFire is a fire at the scheduled time at of slot i, whose task has
// key and data; the caller counts it when it is an occurrence.
func (r *runner) newFire(ctx context.Context, i int32, key string, data []byte, at int64) *fire {
	t := r.tasks
	s := t.at(i)
	f := &append(r.fires.take(1), fire{key: key, data: t.keep(data), shape: t.shape(i), src: t.source(i), scheduled: at})[0]
	f.watched = r.runs.watched(key, f.shape)
	f.fireID = record.FireID(f.shape.Host, f.name(), at)
	if err := r.e.cfg.Targets.Ensure(ctx, f.shape.Topic); err != nil {
		f.err = fmt.Errorf("%w: %w", errTarget, err)
	}
	if f.shape.Message != nil {
		r.prepareMessage(ctx, f)
	}
	if s.avro {
		r.encodeAvro(ctx, f)
	}
	return f
}
