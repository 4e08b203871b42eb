package scheduler

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/retry"
	"github.com/jobdrop/jobdrop/task"
)

// Keys of the runner's own records on the state topic. Task keys always
// hold a "/", these never do.
const (
	keyOwner      = "#owner"
	keyCheckpoint = "#checkpoint"
)

// idleWait is how long a runner with nothing scheduled waits before looking
// again; input wakes it sooner.
const idleWait = time.Minute

// maxCommandsWait bounds how long commands wait for a fire due soon (see
// runner.loop).
const maxCommandsWait = time.Second

// What a runner has fetched and not applied yet is memory, and with many
// partitions loading at once (a million-row file, a restore) it is most of
// the engine's: fetchBytes bounds one fetch of a runner's consumer,
// pollRecords the records taken from it at once, and txnCommands the
// commands one transaction applies.
const (
	fetchBytes  = 512 << 10
	pollRecords = 1_000
	txnCommands = 2_500
)

// errFenced means another instance took the partition over.
var errFenced = errors.New("fenced: another instance owns the partition")

// errCrashed ends a runner as if its process died: tests use it through
// testHookBeforeCommit to leave a transaction open and never ended.
var errCrashed = errors.New("crashed")

// testHookBeforeCommit, when set by a test, runs after a fire transaction is
// written and before it is committed; returning true kills the runner there.
var testHookBeforeCommit func(p int32, fires int) bool

type owner struct {
	Node  string `json:"node"`
	Nonce string `json:"nonce"`
}

type checkpoint struct {
	// InputOffset is the next input offset to apply.
	InputOffset int64 `json:"inputOffset"`
}

// runner owns one input partition: its tasks, its transactional producer and
// its consumer.
type runner struct {
	e   *Engine
	p   int32
	log *slog.Logger

	cancel context.CancelFunc
	done   chan struct{}

	prod  *kgo.Client
	cons  *kgo.Client
	tasks *table
	next  int64 // next input offset to apply

	crashed bool // set by testHookBeforeCommit

	active atomic.Int64 // tasks held, as of the last commit
	paused atomic.Int64 // of them, paused by the fault policy
	// due is when the earliest occurrence the runner holds is due, in
	// epoch milliseconds, as of the loop's last look (noneDue when it
	// holds none): while a transaction is under way, what it fires. See
	// Engine.Lateness.
	due atomic.Int64
}

// noneDue is runner.due when nothing is scheduled.
const noneDue = math.MaxInt64

func newRunner(e *Engine, p int32) *runner {
	r := &runner{e: e, p: p, log: e.log.With("partition", p), done: make(chan struct{})}
	r.due.Store(noneDue)
	return r
}

func (r *runner) start(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	r.cancel = cancel
	go r.run(ctx)
}

// stop ends the runner and waits for it: a transaction under way is
// finished (committed or aborted) first.
func (r *runner) stop() {
	r.cancel()
	<-r.done
}

// restartWait spaces the sessions of a runner that keeps failing. The
// waits are on the real clock: a test's fake clock decides what is due,
// and a restarting runner never counts among the waiters on it.
var restartWait = retry.Backoff{First: 100 * time.Millisecond, Max: 10 * time.Second}

func (r *runner) run(ctx context.Context) {
	defer close(r.done)
	err := retry.Do(ctx, retry.Policy{Backoff: restartWait, Log: r.log, Level: slog.LevelError,
		Msg: "runner failed; restoring the partition again"}, func() error {
		err := r.session(ctx)
		if errors.Is(err, errCrashed) {
			return retry.Permanent(err) // a dead process ends nothing and closes nothing
		}
		r.closeClients()
		if errors.Is(err, errFenced) {
			return retry.Permanent(err)
		}
		if err == nil {
			err = errors.New("session ended") // only once ctx is done
		}
		return err
	})
	if errors.Is(err, errFenced) && ctx.Err() == nil {
		r.log.Warn("partition taken over by another instance; stopping", "err", err)
	}
}

func (r *runner) closeClients() {
	for _, cl := range []*kgo.Client{r.prod, r.cons} {
		if cl != nil {
			cl.Close()
		}
	}
	r.prod, r.cons = nil, nil
	if r.tasks != nil {
		r.tasks.spill.close()
		r.tasks = nil
	}
}

// session fences the previous owner, restores the partition and fires until
// ctx is done or something fails.
func (r *runner) session(ctx context.Context) error {
	r.due.Store(noneDue) // until the loop looks again
	cfg := r.e.cfg
	var err error
	r.prod, err = kgo.NewClient(append([]kgo.Opt{
		kgo.TransactionalID(fmt.Sprintf("%s-%s-%d", cfg.Group, cfg.Topics.Input, r.p)),
		kgo.TransactionTimeout(30 * time.Second),
		kgo.RecordPartitioner(kafka.ManualFor(manualTopics(cfg))),
		kgo.ProducerBatchMaxBytes(1 << 20),
		// A target topic the brokers do not know is asked for once more
		// (a topic just created may not be known everywhere yet), then
		// the fire is refused: kgo's default of 4 tries held the whole
		// transaction for 15 s.
		kgo.UnknownTopicRetries(1),
	}, cfg.ClientOpts...)...)
	if err != nil {
		return err
	}
	start := time.Now()
	nonce := newNonce()
	if err := r.fence(ctx, nonce); err != nil {
		return fmt.Errorf("take ownership: %w", err)
	}
	r.cons, err = kgo.NewClient(append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topics.State: {r.p: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxBytes(fetchBytes), kgo.FetchMaxPartitionBytes(fetchBytes),
	}, cfg.ClientOpts...)...)
	if err != nil {
		return err
	}
	if err := r.restore(ctx, nonce); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	r.active.Store(int64(r.tasks.n))
	r.paused.Store(int64(r.tasks.paused))
	r.log.Info("partition restored", "tasks", r.tasks.n, "input_offset", r.next, "took_ms", time.Since(start).Milliseconds())
	r.cons.RemoveConsumePartitions(map[string][]int32{cfg.Topics.State: {r.p}})
	r.cons.AddConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topics.Input: {r.p: kgo.NewOffset().At(r.next)}})
	return r.loop(ctx)
}

// fence commits an ownership marker in a transaction of the partition's
// transactional id: initialising the producer fences (and aborts the open
// transaction of) any previous owner, and the committed marker tells restore
// where the state committed before us ends.
func (r *runner) fence(ctx context.Context, nonce string) error {
	v := encode(owner{Node: r.e.cfg.Node, Nonce: nonce})
	return r.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(r.stateRecord(keyOwner, v))
		return nil
	})
}

// restore reads the state partition up to our own ownership marker.
func (r *runner) restore(ctx context.Context, nonce string) error {
	if r.tasks != nil {
		r.tasks.spill.close()
	}
	sp, err := openSpill(r.e.cfg.DataDir)
	if err != nil {
		return err
	}
	r.tasks = newTable(sp)
	r.next = 0
	var failed error
	for {
		fs := r.cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := fs.Err(); err != nil {
			return err
		}
		found := false
		fs.EachRecord(func(rec *kgo.Record) {
			if failed != nil {
				return
			}
			key := string(rec.Key)
			switch key {
			case keyOwner:
				var o owner
				if json.Unmarshal(rec.Value, &o) == nil && o.Nonce == nonce {
					found = true
				}
			case keyCheckpoint:
				var c checkpoint
				if err := json.Unmarshal(rec.Value, &c); err == nil {
					r.next = c.InputOffset
				}
			default:
				if rec.Value == nil {
					i, ok, err := r.tasks.find(key)
					if ok {
						r.tasks.remove(i, key)
					}
					failed = err
					return
				}
				st, data, err := decodeState(rec.Value)
				if err != nil {
					r.log.Error("unreadable task state skipped", "key", key, "offset", rec.Offset, "err", err)
					return
				}
				_, failed = r.tasks.set(key, &st.Definition, &st, data)
			}
		})
		if failed != nil {
			return failed
		}
		if found {
			break
		}
	}
	r.tasks.scheduleAll()
	return nil
}

// loop applies commands and fires due tasks, one transaction at a time.
//
// Fires come first. Occurrences due commit in a transaction of their own,
// ahead of the commands waiting to be applied: with commands in it, the
// transaction would take longer (a flood of files brings thousands). And
// a transaction of commands does not start when an occurrence falls due
// before it would likely end, as long as the last one did: the commands
// wait for the fire, then go. They never wait twice in a row, so they
// always make headway, however often tasks fire. A command takes effect
// once applied: an occurrence due before is fired, as it would have been
// had the command come later.
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
	// waited for a fire once.
	var cmdsTook time.Duration
	var deferred bool
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
		now := clock.Now().UnixMilli()
		_, due, scheduled := r.tasks.next()
		if scheduled {
			r.due.Store(due)
		} else {
			r.due.Store(noneDue)
		}
		switch nextStep(scheduled, due, now, len(cmds), cmdsTook, deferred) {
		case fireDue:
			if err := r.commit(ctx, nil, now); err != nil {
				return err
			}
			continue
		case applyCommands:
			start := clock.Now()
			if err := r.commit(ctx, cmds, now); err != nil {
				return err
			}
			cmdsTook = min(clock.Since(start), maxCommandsWait)
			cmds, deferred = nil, false
			continue
		case holdCommands:
			deferred = true
		}
		wait := idleWait
		if scheduled {
			wait = time.Duration(due-now) * time.Millisecond
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

// step is what the loop does next.
type step int

const (
	// waitForInput: nothing to do before the next due time or input.
	waitForInput step = iota
	// fireDue commits the occurrences due, alone.
	fireDue
	// applyCommands commits the commands waiting, and whatever falls due
	// meanwhile.
	applyCommands
	// holdCommands waits for the occurrence due soon before applying
	// the commands waiting.
	holdCommands
)

// nextStep decides what the loop does next (see runner.loop): the
// earliest occurrence held is due at due (if scheduled), it is now, so
// many commands wait, the last transaction of commands took cmdsTook,
// and deferred says whether they waited for a fire already.
func nextStep(scheduled bool, due, now int64, waiting int, cmdsTook time.Duration, deferred bool) step {
	soon := scheduled && time.Duration(due-now)*time.Millisecond < cmdsTook
	switch {
	case scheduled && due <= now:
		return fireDue
	case waiting > 0 && (!soon || deferred):
		return applyCommands
	case waiting > 0:
		return holdCommands
	}
	return waitForInput
}

// change collects what one transaction writes besides fired events.
type change struct {
	dirty  map[int32]struct{} // slots whose state changed
	ended  map[string]ending  // keys of the tasks to tombstone → why
	fires  []*fire
	audits []*kgo.Record
	// forwards are commands written again onto the input topic, keyed as
	// the task's other commands are (see rekeyAvro).
	forwards []*kgo.Record
}

func newChange() *change {
	return &change{dirty: map[int32]struct{}{}, ended: map[string]ending{}}
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
	// fire: what a refusal puts back.
	before *before
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
}

// before is a task's slot and fault before a scheduled fire changed them.
type before struct {
	slot  slot
	fault *record.Fault
}

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

func (f *fire) name() string { return f.key[len(f.shape.Host)+1:] }

// newFire counts a fire at the scheduled time at of slot i, whose task has
// key and data.
func (r *runner) newFire(ctx context.Context, i int32, key string, data []byte, at int64) *fire {
	t := r.tasks
	s := t.at(i)
	f := &fire{key: key, data: bytes.Clone(data), shape: t.shape(i), src: t.source(i), scheduled: at}
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
	s.fireCount++
	return f
}

// errRefused ends an attempt at a transaction in which the brokers refused
// fired events for their tasks' own reasons: it is aborted, and written
// again without them.
var errRefused = errors.New("fired events refused")

// commit applies cmds and fires the tasks due at now in one transaction.
// A fired event the brokers refuse for its task's own reason costs an
// aborted attempt: the transaction is written again without it, with the
// occurrence recorded FAILED and its task following Config.Refused, so the
// other tasks of the partition fire on time. On any other failure the
// in-memory state may be ahead of Kafka; the caller restores.
func (r *runner) commit(ctx context.Context, cmds []*kgo.Record, now int64) error {
	t := r.tasks
	c := newChange()
	next := r.next
	for _, rec := range cmds {
		if rec.Offset < next {
			continue // already applied before a restore
		}
		next = rec.Offset + 1
		if err := r.apply(ctx, rec, now, c); err != nil {
			return err
		}
	}
	for len(c.fires) < r.e.cfg.MaxFiresPerTxn {
		i, due, ok := t.next()
		if !ok || due > now {
			break
		}
		k, data, err := t.read(i)
		if err != nil {
			return err
		}
		key := string(k)
		s := t.at(i)
		b := &before{slot: *s}
		var at, following int64
		var fire, more bool
		stands := 1
		if f, ok := t.fault(i); ok && !f.Paused {
			// The refused occurrence again, with its own fire id: the
			// task's later occurrences wait behind it.
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
		if fire {
			f := r.newFire(ctx, i, key, data, at)
			f.before, f.retried = b, b.fault
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
		} else if err := r.finish(c, i, key, record.EndCompleted, now); err != nil {
			return err
		}
	}

	// Targets found unusable before anything is written are refused
	// at once.
	if err := r.holdRefused(c, now); err != nil {
		return err
	}
	var err error
	for {
		err = r.transact(ctx, func(produce func(*kgo.Record)) error {
			return r.write(ctx, c, now, next, produce)
		})
		if !errors.Is(err, errRefused) {
			break
		}
		if err := r.holdRefused(c, now); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	r.next = next
	r.active.Store(int64(t.n))
	r.paused.Store(int64(t.paused))
	if err := t.compact(); err != nil {
		return err
	}
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
	return nil
}

// write produces one attempt at the transaction of change c: the fired
// events, then the execution records (which carry the events' offsets),
// the state, the audit events and the input checkpoint next. It returns
// errRefused when the brokers refused fired events for their tasks' own
// reasons, and the error of any other refusal (the cluster's fault).
func (r *runner) write(ctx context.Context, c *change, now, next int64, produce func(*kgo.Record)) error {
	t := r.tasks
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
		rec := r.event(f, now)
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
		r.prod.Produce(ctx, r.event(f, now), func(rec *kgo.Record, err error) {
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
	for _, f := range c.fires {
		if f.refused != nil && f.refused.dropped {
			continue
		}
		d := f.shape
		x := record.Execution{FireID: f.fireID, Host: d.Host, Name: f.name(), Topic: d.Topic,
			Partition: f.partition, Offset: f.offset, ScheduledAt: f.scheduled, FiredAt: now, Batch: f.src.batch,
			Timeout: d.Timeout, Collapsed: f.collapsed}
		if f.refused != nil {
			x.Partition, x.Offset = -1, -1
		}
		produce(&kgo.Record{Topic: r.e.cfg.Topics.Executions, Key: []byte(f.fireID), Value: encode(x)})
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
	for i := range c.dirty {
		k, data, err := t.read(i)
		if err != nil {
			return err
		}
		key := string(k)
		produce(r.stateRecord(key, encodeState(t.state(i, key, now), data)))
	}
	for key, e := range c.ended {
		if e.final != nil {
			produce(r.stateRecord(key, e.final))
		}
		rec := r.stateRecord(key, nil)
		rec.Headers = []kgo.RecordHeader{{Key: record.HeaderEnd, Value: []byte(e.reason)}}
		produce(rec)
	}
	for _, a := range c.audits {
		produce(a)
	}
	for _, f := range c.forwards {
		produce(f)
	}
	if next != r.next {
		v := encode(checkpoint{InputOffset: next})
		produce(r.stateRecord(keyCheckpoint, v))
	}
	if hook := testHookBeforeCommit; hook != nil && len(c.fires) > 0 && hook(r.p, len(c.fires)) {
		r.crashed = true
	}
	return nil
}

// event is the record of fire f fired at now, for its target topic.
func (r *runner) event(f *fire, now int64) *kgo.Record {
	if f.msg != nil {
		return r.messageEvent(f)
	}
	d, name := f.shape, f.name()
	v := encode(firedWire{Fired: record.Fired{Host: d.Host, Name: name, ScheduledAt: f.scheduled,
		FiredAt: now, FireID: f.fireID, Triggered: f.triggered}, Data: f.data})
	rec := &kgo.Record{
		Topic: d.Topic, Key: []byte(f.key), Value: v,
		Headers: []kgo.RecordHeader{
			{Key: record.HeaderFireHost, Value: []byte(d.Host)},
			{Key: record.HeaderFireName, Value: []byte(name)},
			{Key: record.HeaderFireID, Value: []byte(f.fireID)},
			{Key: record.HeaderFireScheduled, Value: []byte(strconv.FormatInt(f.scheduled, 10))},
		},
	}
	if f.collapsed > 0 {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: record.HeaderFireCollapsed, Value: []byte(strconv.Itoa(f.collapsed))})
	}
	if f.avro != nil {
		rec.Key, rec.Value = f.avro.key, f.avro.value
	}
	return rec
}

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
	if f.triggered {
		// Asked for by hand, outside the schedule: not retried; the
		// operator sees it FAILED and may trigger again.
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

// apply changes the in-memory tasks for one command. Commands from files are
// audited by the file's own record; others (API, console) one by one.
func (r *runner) apply(ctx context.Context, rec *kgo.Record, now int64, c *change) error {
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
	d, key, err := cmd.def, cmd.key, cmd.err
	if err == nil {
		err = d.Validate()
	}
	if err == nil && key != d.Key() {
		err = fmt.Errorf("record key %q does not match host/name %q", key, d.Key())
	}
	if err != nil {
		r.log.Warn("invalid command skipped", "offset", rec.Offset, "key", key, "err", err)
		c.audits = append(c.audits, r.audit(src, record.ActionTaskRejected, key, record.OutcomeRejected, err.Error(), rec.Timestamp))
		return nil
	}
	if fwd := r.rekeyAvro(rec, cmd); fwd != nil {
		c.forwards = append(c.forwards, fwd)
		return nil
	}
	data := splitPayload(&d)
	t := r.tasks
	i, exists, err := t.find(key)
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
		_, data, err := t.read(i)
		if err != nil {
			return err
		}
		f := r.newFire(ctx, i, key, data, now)
		f.fireID = record.TriggerFireID(d.Host, d.Name, rec.Partition, rec.Offset)
		f.triggered = true
		c.fires = append(c.fires, f)
		c.touch(i, key)
	default:
		var old task.Definition
		sameData := false
		if exists {
			old = t.definition(i, key)
			_, stored, err := t.read(i)
			if err != nil {
				return err
			}
			sameData = bytes.Equal(stored, data)
		}
		format := cmd.format
		if exists {
			format = formatAfter(format, t.format(i), src)
		}
		if sameData && d.Action == task.Insert && old.Equal(&d) && format == t.format(i) {
			outcome, detail = record.OutcomeNoChange, "identical to the stored definition"
			break
		}
		accepted := rec.Timestamp.UnixMilli()
		st := record.State{Definition: d, Anchor: d.Anchor(accepted), Source: src, Format: format}
		if exists && d.Start == nil && sameCadence(&old, &d) {
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
				action = changeAction(&old, &d)
			}
			st.FireCount, st.LastFire = t.at(i).fireCount, t.at(i).lastFire
			after = max(after, st.LastFire) // never fire an occurrence twice
		}
		n, ok := d.NextFire(st.Anchor, after)
		if ok && !d.Paused() {
			st.NextFire = n
		}
		if i, err = t.set(key, &d, &st, data); err != nil {
			return err
		}
		switch {
		case !ok:
			c.touch(i, key) // set just now: its state is not written yet
			if err := r.finish(c, i, key, record.EndCompleted, now); err != nil {
				return err
			}
			detail = "no occurrence left to fire"
		case d.Paused():
			t.unschedule(i) // kept, but due never
			c.touch(i, key)
		default:
			t.schedule(i)
			c.touch(i, key)
		}
	}
	if src.Batch == "" {
		c.audits = append(c.audits, r.audit(src, action, key, outcome, detail, rec.Timestamp))
	}
	return nil
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

// engineAudit is an audit event of the engine's own doing to the task
// with key, about its fire fireID, at now: the node is its actor.
func (r *runner) engineAudit(action, key, fireID, outcome, detail string, now int64) *kgo.Record {
	a := record.NewAudit(time.UnixMilli(now), r.e.cfg.Node, action, key, outcome)
	a.Detail = detail
	return &kgo.Record{Topic: r.e.cfg.Topics.Audit, Key: []byte(a.Actor), Value: encode(a)}
}

// audit is the audit event of a command of src, sent at at, by its actor.
// Its ID is random, not made of the command's fields: the command is
// audited in the transaction that checkpoints past it, so once however
// often the engine restores, and two commands alike to the byte (two
// clients deleting one task in the same millisecond) are two events.
func (r *runner) audit(src record.Source, action, object, outcome, detail string, at time.Time) *kgo.Record {
	actor := src.Actor
	if actor == "" {
		actor = "unknown"
	}
	a := record.NewAudit(at, actor, action, object, outcome)
	a.Detail = detail
	if src.Batch != "" {
		a.Detail = fmt.Sprintf("%s (file %s row %d)", detail, src.File, src.Row)
	}
	v := encode(a)
	return &kgo.Record{Topic: r.e.cfg.Topics.Audit, Key: []byte(actor), Value: v}
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

func (r *runner) stateRecord(key string, value []byte) *kgo.Record {
	return &kgo.Record{Topic: r.e.cfg.Topics.State, Partition: r.p, Key: []byte(key), Value: value}
}

// transact runs fill in one transaction of the partition's producer and
// commits it.
func (r *runner) transact(ctx context.Context, fill func(produce func(*kgo.Record)) error) error {
	err := kafka.Transact(ctx, r.prod, fill, func() error {
		if r.crashed {
			return kafka.ErrLeaveOpen
		}
		return nil
	})
	if errors.Is(err, kafka.ErrLeaveOpen) {
		return errCrashed
	}
	return fenced(err)
}

func fenced(err error) error {
	if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		return fmt.Errorf("%w: %w", errFenced, err)
	}
	return err
}

// manualTopics are the topics whose records name their partition: the
// state topic (the runner's own partition) and the schedule topics (a
// fired schedule's tombstone goes where the schedule was).
func manualTopics(cfg Config) map[string]bool {
	m := map[string]bool{cfg.Topics.State: true}
	for _, t := range cfg.ScheduleTopics {
		m[t] = true
	}
	return m
}

func newNonce() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "jobdrop"
	}
	return h
}
