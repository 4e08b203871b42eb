package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/retry"
)

// Keys of the runner's own records on the state topic. Task keys always
// hold a "/", these never do.
const (
	keyOwner      = "#owner"
	keyCheckpoint = "#checkpoint"
)

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

// testHookBeforeCommit, when set by a test, runs after a transaction that
// fires or carries a chain's work (runs, outcomes, links) is written and
// before it is committed, with the number of fires; returning true kills
// the runner there.
var testHookBeforeCommit func(p int32, fires int) bool

type owner struct {
	Node  string `json:"node"`
	Nonce string `json:"nonce"`
}

type checkpoint struct {
	// InputOffset is the next input offset to apply.
	InputOffset int64 `json:"inputOffset"`
	// Status holds the next offset to read of each partition of the
	// status topic.
	Status map[int32]int64 `json:"status,omitempty"`
}

// checkpoint is the checkpoint of a transaction of change c that applies
// the input up to next.
func (r *runner) checkpoint(next int64, c *change) checkpoint {
	cp := checkpoint{InputOffset: next, Status: make(map[int32]int64, len(r.statusNext))}
	for p, o := range r.statusNext {
		cp.Status[p] = o
	}
	for p, o := range c.status {
		cp.Status[p] = o
	}
	return cp
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
	// statusNext is the next offset to apply of each status partition;
	// checkpointed says whether this session committed a checkpoint yet
	// (its first transaction writes one, so that the status offsets it
	// started from are known to the next owner).
	statusNext   map[int32]int64
	checkpointed bool
	runs         *runs
	// inputPartitions is how many partitions the input topic has (0:
	// not counted yet), and inputPartitioner places a key among them as
	// every producer of commands does (see tell).
	inputPartitions  int
	inputPartitioner kgo.TopicPartitioner
	keyRecord        kgo.Record // the key inputPartition places
	// stateWire is what writeState encodes each state record through.
	stateWire stateWire

	crashed bool // set by testHookBeforeCommit
	// ahead is, while the runner writes a transaction ahead of its
	// occurrences' due time, that time (epoch ms), which the transaction
	// commits at; 0 otherwise. aheadSince is when that began, by the
	// engine's clock (0: not writing ahead), for Engine.Urgency. perFire
	// is what writing a fire took in the runner's recent transactions of
	// many, fixed what its recent ones of a few took (see ahead.go).
	ahead      int64
	aheadSince atomic.Int64
	perFire    time.Duration
	fixed      time.Duration
	// wrote is how long writing the last transaction took, from the
	// start of building it to its records written. After a transaction
	// of fires that pressed (see Engine.Pressure), pressed is how long
	// they had pressed as it committed and settledAt when that stops
	// counting (epoch ms, the wall clock: the consumers read at its
	// pace, whatever the engine's clock says).
	wrote     time.Duration
	pressed   atomic.Int64
	settledAt atomic.Int64
	// arena holds what a transaction writes (see arena.go); change and
	// fires what it is built from, kept until the next one is.
	arena  arena
	change change
	fires  slab[fire]

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
	r.prod, err = kgo.NewClient(append(append([]kgo.Opt{
		kgo.TransactionTimeout(cfg.TransactionTimeout),
		kgo.RecordPartitioner(kafka.ManualFor(manualTopics(cfg))),
		kgo.ProducerBatchMaxBytes(1 << 20),
		// A target topic the brokers do not know is asked for once more
		// (a topic just created may not be known everywhere yet), then
		// the fire is refused: kgo's default of 4 tries held the whole
		// transaction for 15 s.
		kgo.UnknownTopicRetries(1),
	}, cfg.ClientOpts...), kafka.TxnOpts(fmt.Sprintf("%s-%s-%d", cfg.Group, cfg.Topics.Input, r.p))...)...)
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
	if err := r.statusFrom(ctx); err != nil {
		return fmt.Errorf("status topic: %w", err)
	}
	r.log.Info("partition restored", "tasks", r.tasks.n, "input_offset", r.next, "runs", len(r.runs.byRun),
		"duration_ms", time.Since(start).Milliseconds())
	r.cons.RemoveConsumePartitions(map[string][]int32{cfg.Topics.State: {r.p}})
	status := make(map[int32]kgo.Offset, len(r.statusNext))
	for p, o := range r.statusNext {
		status[p] = kgo.NewOffset().At(o)
	}
	r.cons.AddConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topics.Input: {r.p: kgo.NewOffset().At(r.next)},
		cfg.Topics.Status: status})
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
	}, nil)
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
	r.runs = newRuns()
	r.next = 0
	r.statusNext = map[int32]int64{}
	r.checkpointed = false
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
					if c.Status != nil {
						r.statusNext = c.Status
					}
				}
			default:
				if ok, err := r.runs.restoreRecord(key, rec.Value); ok {
					failed = err
					return
				}
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

// statusFrom completes the offsets the runner reads the status topic
// from: a partition its checkpoint does not know (a new partition, or a
// first start) is read from its last stable offset, since no run the
// partition's earlier owners watched can have a status there.
func (r *runner) statusFrom(ctx context.Context) error {
	ends, err := kadm.NewClient(r.prod).ListCommittedOffsets(ctx, r.e.cfg.Topics.Status)
	if err != nil {
		return err
	}
	if err := ends.Error(); err != nil {
		return err
	}
	ends.Each(func(o kadm.ListedOffset) {
		if _, ok := r.statusNext[o.Partition]; !ok {
			r.statusNext[o.Partition] = o.Offset
		}
	})
	return nil
}

// inputPartition is the input partition of the commands of the task with
// key, as every producer of commands places it; false while the input
// topic's partitions cannot be counted (they are, from the brokers, the
// first time).
func (r *runner) inputPartition(key string) (int, bool) {
	if r.inputPartitions == 0 {
		r.inputPartitioner = kgo.StickyKeyPartitioner(nil).ForTopic(r.e.cfg.Topics.Input)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		topics, err := kadm.NewClient(r.prod).ListTopics(ctx, r.e.cfg.Topics.Input)
		cancel()
		if err != nil {
			return 0, false
		}
		if r.inputPartitions = len(topics[r.e.cfg.Topics.Input].Partitions); r.inputPartitions == 0 {
			return 0, false
		}
	}
	r.keyRecord.Key = append(r.keyRecord.Key[:0], key...)
	return r.inputPartitioner.Partition(&r.keyRecord, r.inputPartitions), true
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
