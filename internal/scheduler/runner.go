package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/record"
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
	tasks map[string]*entry
	heap  fireHeap
	next  int64 // next input offset to apply

	crashed bool // set by testHookBeforeCommit

	active atomic.Int64 // tasks held, as of the last commit

	strs map[string]string // interned strings shared by tasks
}

func newRunner(e *Engine, p int32) *runner {
	return &runner{e: e, p: p, log: e.log.With("partition", p), done: make(chan struct{})}
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

func (r *runner) run(ctx context.Context) {
	defer close(r.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := r.session(ctx)
		if errors.Is(err, errCrashed) {
			return // a dead process ends nothing and closes nothing
		}
		r.closeClients()
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errCrashed) {
			return
		}
		if errors.Is(err, errFenced) {
			r.log.Warn("partition taken over by another instance; stopping", "err", err)
			return
		}
		r.log.Error("runner failed; restoring the partition again", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func (r *runner) closeClients() {
	for _, cl := range []*kgo.Client{r.prod, r.cons} {
		if cl != nil {
			cl.Close()
		}
	}
	r.prod, r.cons = nil, nil
}

// session fences the previous owner, restores the partition and fires until
// ctx is done or something fails.
func (r *runner) session(ctx context.Context) error {
	cfg := r.e.cfg
	var err error
	r.prod, err = kgo.NewClient(append([]kgo.Opt{
		kgo.TransactionalID(fmt.Sprintf("%s-%s-%d", cfg.Group, cfg.Topics.Input, r.p)),
		kgo.TransactionTimeout(30 * time.Second),
		kgo.RecordPartitioner(statePartitioner{state: cfg.Topics.State, other: kgo.StickyKeyPartitioner(nil)}),
		kgo.ProducerBatchMaxBytes(1 << 20),
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
	}, cfg.ClientOpts...)...)
	if err != nil {
		return err
	}
	if err := r.restore(ctx, nonce); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	r.active.Store(int64(len(r.tasks)))
	r.log.Info("partition restored", "tasks", len(r.tasks), "input_offset", r.next, "took_ms", time.Since(start).Milliseconds())
	r.cons.RemoveConsumePartitions(map[string][]int32{cfg.Topics.State: {r.p}})
	r.cons.AddConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topics.Input: {r.p: kgo.NewOffset().At(r.next)}})
	return r.loop(ctx)
}

// fence commits an ownership marker in a transaction of the partition's
// transactional id: initialising the producer fences (and aborts the open
// transaction of) any previous owner, and the committed marker tells restore
// where the state committed before us ends.
func (r *runner) fence(ctx context.Context, nonce string) error {
	v, _ := json.Marshal(owner{Node: r.e.cfg.Node, Nonce: nonce})
	return r.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(r.stateRecord(keyOwner, v))
		return nil
	})
}

// restore reads the state partition up to our own ownership marker.
func (r *runner) restore(ctx context.Context, nonce string) error {
	r.tasks = map[string]*entry{}
	r.strs = map[string]string{}
	r.heap = nil
	r.next = 0
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
					delete(r.tasks, key)
					return
				}
				e := &entry{key: key, index: -1}
				if err := r.decodeState(rec.Value, e); err != nil {
					r.log.Error("unreadable task state skipped", "key", key, "offset", rec.Offset, "err", err)
					return
				}
				r.tasks[key] = e
			}
		})
		if found {
			break
		}
	}
	r.heap = make(fireHeap, 0, len(r.tasks))
	for _, e := range r.tasks {
		if e.st.NextFire > 0 {
			r.heap.schedule(e)
		}
	}
	return nil
}

// loop applies commands and fires due tasks, one transaction at a time.
func (r *runner) loop(ctx context.Context) error {
	in := make(chan []*kgo.Record, 4)
	pollErr := make(chan error, 1)
	pollCtx, stopPoll := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			fs := r.cons.PollRecords(pollCtx, 10_000)
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
	for {
		// Take whatever input is already there without waiting.
	drain:
		for len(cmds) < 10_000 {
			select {
			case recs := <-in:
				cmds = append(cmds, recs...)
			default:
				break drain
			}
		}
		now := clock.Now().UnixMilli()
		if len(cmds) > 0 || (len(r.heap) > 0 && r.heap[0].st.NextFire <= now) {
			if err := r.commit(ctx, cmds, now); err != nil {
				return err
			}
			cmds = nil
			continue
		}
		wait := idleWait
		if len(r.heap) > 0 {
			wait = time.Duration(r.heap[0].st.NextFire-now) * time.Millisecond
		}
		timer := clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case err := <-pollErr:
			timer.Stop()
			return fmt.Errorf("consume input: %w", err)
		case recs := <-in:
			cmds = append(cmds, recs...)
		case <-timer.Chan():
		}
		timer.Stop()
	}
}

// change collects what one transaction writes besides fired events.
type change struct {
	dirty  map[string]*entry // tasks whose state changed
	ended  []endedTask       // tasks to tombstone
	fires  []*fire
	audits []*kgo.Record
}

// newFire counts a fire of e at the scheduled time at.
func (r *runner) newFire(ctx context.Context, e *entry, at, now int64) *fire {
	f := &fire{e: e, scheduled: at, fireID: record.FireID(e.st.Definition.Host, e.st.Definition.Name, at)}
	if err := r.e.cfg.Targets.Ensure(ctx, e.st.Definition.Topic); err != nil {
		f.err = fmt.Errorf("%w: %w", errTarget, err)
	}
	e.st.FireCount++
	e.st.UpdatedAt = now
	return f
}

// fire is one occurrence being fired in the current transaction.
type fire struct {
	e         *entry
	scheduled int64
	fireID    string
	partition int32
	offset    int64
	triggered bool
	err       error // the target could not be written
}

// commit applies cmds and fires the tasks due at now in one transaction.
// On failure the in-memory state may be ahead of Kafka; the caller restores.
func (r *runner) commit(ctx context.Context, cmds []*kgo.Record, now int64) error {
	c := &change{dirty: map[string]*entry{}}
	next := r.next
	for _, rec := range cmds {
		if rec.Offset < next {
			continue // already applied before a restore
		}
		next = rec.Offset + 1
		r.apply(ctx, rec, now, c)
	}
	dirty, fires := c.dirty, c.fires
	ended, audits := c.ended, c.audits
	for len(r.heap) > 0 && r.heap[0].st.NextFire <= now && len(fires) < r.e.cfg.MaxFiresPerTxn {
		e := r.heap[0]
		at, fire, following, more := e.st.Definition.Plan(e.st.Anchor, e.st.NextFire, now)
		if fire {
			fires = append(fires, r.newFire(ctx, e, at, now))
			e.st.LastFire = at
		}
		e.st.UpdatedAt = now
		if more {
			e.st.NextFire = following
			r.heap.schedule(e)
			dirty[e.key] = e
		} else {
			r.heap.unschedule(e)
			delete(r.tasks, e.key)
			delete(dirty, e.key)
			ended = append(ended, endedTask{e.key, record.EndCompleted})
		}
	}

	err := r.transact(ctx, func(produce func(*kgo.Record)) error {
		for _, f := range fires {
			if f.err != nil {
				continue
			}
			f := f
			d := &f.e.st.Definition
			v, _ := json.Marshal(firedWire{Fired: record.Fired{Host: d.Host, Name: d.Name, ScheduledAt: f.scheduled,
				FiredAt: now, FireID: f.fireID, Triggered: f.triggered}, Data: f.e.data})
			r.prod.Produce(ctx, &kgo.Record{
				Topic: d.Topic, Key: []byte(f.e.key), Value: v,
				Headers: []kgo.RecordHeader{
					{Key: record.HeaderFireHost, Value: []byte(d.Host)},
					{Key: record.HeaderFireName, Value: []byte(d.Name)},
					{Key: record.HeaderFireID, Value: []byte(f.fireID)},
					{Key: record.HeaderFireScheduled, Value: []byte(strconv.FormatInt(f.scheduled, 10))},
				},
			}, func(rec *kgo.Record, err error) {
				f.partition, f.offset, f.err = rec.Partition, rec.Offset, err
			})
		}
		// The execution records carry the target offsets, known once the
		// events are written.
		if len(fires) > 0 {
			if err := r.prod.Flush(ctx); err != nil {
				return err
			}
		}
		for _, f := range fires {
			d := &f.e.st.Definition
			if f.err != nil && !isTargetProblem(f.err) {
				return f.err // a broker failure: abort, restore, fire again
			}
			x := record.Execution{FireID: f.fireID, Host: d.Host, Name: d.Name, Topic: d.Topic,
				Partition: f.partition, Offset: f.offset, ScheduledAt: f.scheduled, FiredAt: now, Batch: f.e.st.Source.Batch,
				Timeout: d.Timeout}
			if f.err != nil {
				x.Partition, x.Offset = -1, -1
			}
			v, _ := json.Marshal(x)
			produce(&kgo.Record{Topic: r.e.cfg.Topics.Executions, Key: []byte(f.fireID), Value: v})
			if f.err != nil {
				s, _ := json.Marshal(record.Status{FireID: f.fireID, Status: record.StatusFailed, Message: f.err.Error(), Worker: "scheduler", At: now})
				produce(&kgo.Record{Topic: r.e.cfg.Topics.Status, Key: []byte(f.fireID), Value: s})
			}
		}
		for key, e := range dirty {
			produce(r.stateRecord(key, encodeState(e)))
		}
		for _, t := range ended {
			rec := r.stateRecord(t.key, nil)
			rec.Headers = []kgo.RecordHeader{{Key: record.HeaderEnd, Value: []byte(t.reason)}}
			produce(rec)
		}
		for _, a := range audits {
			produce(a)
		}
		if next != r.next {
			v, _ := json.Marshal(checkpoint{InputOffset: next})
			produce(r.stateRecord(keyCheckpoint, v))
		}
		if hook := testHookBeforeCommit; hook != nil && len(fires) > 0 && hook(r.p, len(fires)) {
			r.crashed = true
		}
		return nil
	})
	if err != nil {
		for _, f := range fires {
			if f.err != nil && isTargetProblem(f.err) && !errors.Is(f.err, errTarget) {
				r.e.cfg.Targets.Forget(f.e.st.Definition.Topic)
			}
		}
		return err
	}
	r.next = next
	r.active.Store(int64(len(r.tasks)))
	if hook := r.e.cfg.OnCommit; hook != nil && len(fires) > 0 {
		at := time.Now()
		scheduled := make([]int64, len(fires))
		for i, f := range fires {
			scheduled[i] = f.scheduled
		}
		hook(scheduled, at)
	}
	return nil
}

// isTargetProblem tells a target topic that cannot be written (missing,
// forbidden) from a failure of the brokers.
func isTargetProblem(err error) bool {
	return errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.InvalidTopicException) || errors.Is(err, kerr.MessageTooLarge) ||
		errors.Is(err, kerr.RecordListTooLarge) || errors.Is(err, errTarget)
}

var errTarget = errors.New("target topic unavailable")

type endedTask struct{ key, reason string }

// apply changes the in-memory tasks for one command. Commands from files are
// audited by the file's own record; others (API, console) one by one.
func (r *runner) apply(ctx context.Context, rec *kgo.Record, now int64, c *change) {
	src := sourceOf(rec)
	var d task.Definition
	err := json.Unmarshal(rec.Value, &d)
	if err == nil {
		err = d.Validate()
	}
	key := string(rec.Key)
	if err == nil && key != d.Key() {
		err = fmt.Errorf("record key %q does not match host/name %q", key, d.Key())
	}
	if err != nil {
		r.log.Warn("invalid command skipped", "offset", rec.Offset, "key", key, "err", err)
		c.audits = append(c.audits, r.audit(src, record.ActionTaskRejected, key, record.OutcomeRejected, err.Error(), rec.Timestamp))
		return
	}
	data := splitData(&d)
	e, exists := r.tasks[key]
	action, outcome, detail := record.ActionTaskCreated, record.OutcomeOK, ""
	switch d.Action {
	case task.Delete:
		action = record.ActionTaskDeleted
		if !exists {
			outcome, detail = record.OutcomeNoChange, "no such task"
			break
		}
		r.remove(e, record.EndDeleted, c)
	case task.Trigger:
		action = record.ActionTaskTriggered
		if !exists {
			outcome, detail = record.OutcomeRejected, "no such task"
			break
		}
		f := r.newFire(ctx, e, now, now)
		f.fireID = record.TriggerFireID(d.Host, d.Name, rec.Partition, rec.Offset)
		f.triggered = true
		c.fires = append(c.fires, f)
		c.dirty[key] = e
	default:
		sameData := exists && string(e.data) == string(data)
		if sameData && d.Action == task.Insert && e.st.Definition.Equal(&d) {
			outcome, detail = record.OutcomeNoChange, "identical to the stored definition"
			break
		}
		accepted := rec.Timestamp.UnixMilli()
		st := record.State{Definition: d, Anchor: d.Anchor(accepted), Source: src, UpdatedAt: accepted}
		after := st.Anchor - 1
		if d.Repeats() {
			// A schedule dropped (or changed, or resumed) today goes on from
			// its next occurrence: the ones before are history, not
			// misfires. A one-shot due in the past still fires, late.
			after = max(after, accepted-1)
		}
		if exists {
			if src.Batch == "" {
				// A change by hand (pause, resume, API) keeps the file the
				// task came from.
				st.Source.Batch, st.Source.File, st.Source.Row = e.st.Source.Batch, e.st.Source.File, e.st.Source.Row
			}
			action = record.ActionTaskUpdated
			if sameData {
				action = changeAction(&e.st.Definition, &d)
			}
			st.FireCount, st.LastFire = e.st.FireCount, e.st.LastFire
			after = max(after, e.st.LastFire) // never fire an occurrence twice
		} else {
			e = &entry{key: key, index: -1}
			r.tasks[key] = e
		}
		e.st, e.data = st, data
		r.internStrings(&e.st)
		n, ok := d.NextFire(st.Anchor, after)
		switch {
		case !ok:
			r.remove(e, record.EndCompleted, c)
			detail = "no occurrence left to fire"
		case d.Paused():
			r.heap.unschedule(e) // kept, but due never
			c.dirty[key] = e
		default:
			e.st.NextFire = n
			r.heap.schedule(e)
			c.dirty[key] = e
		}
	}
	if src.Batch == "" {
		c.audits = append(c.audits, r.audit(src, action, key, outcome, detail, rec.Timestamp))
	}
}

// remove ends a task: out of the heap, tombstoned with the reason.
func (r *runner) remove(e *entry, reason string, c *change) {
	r.heap.unschedule(e)
	delete(r.tasks, e.key)
	delete(c.dirty, e.key)
	c.ended = append(c.ended, endedTask{e.key, reason})
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

func (r *runner) audit(src record.Source, action, object, outcome, detail string, at time.Time) *kgo.Record {
	actor := src.Actor
	if actor == "" {
		actor = "unknown"
	}
	a := record.Audit{ID: action + ":" + object + ":" + strconv.FormatInt(at.UnixNano(), 36), At: at.UnixMilli(),
		Actor: actor, Action: action, Object: object, Outcome: outcome, Detail: detail}
	if src.Batch != "" {
		a.Detail = fmt.Sprintf("%s (file %s row %d)", detail, src.File, src.Row)
	}
	v, _ := json.Marshal(a)
	return &kgo.Record{Topic: r.e.cfg.Topics.Audit, Key: []byte(actor), Value: v}
}

func sourceOf(rec *kgo.Record) record.Source {
	var s record.Source
	for _, h := range rec.Headers {
		switch h.Key {
		case record.HeaderBatch:
			s.Batch = string(h.Value)
		case record.HeaderFile:
			s.File = string(h.Value)
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

// statePartitioner writes the state topic to the partition the record names
// (the runner's own) and every other topic by key, as Kafka's Java clients
// do, so downstream consumers see a task's events in order.
type statePartitioner struct {
	state string
	other kgo.Partitioner
}

func (p statePartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if topic == p.state {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	return p.other.ForTopic(topic)
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
