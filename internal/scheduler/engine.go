package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/avro"
	"github.com/jobdrop/jobdrop/internal/pace"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/retry"
)

// Config configures an Engine.
type Config struct {
	// ClientOpts reach the brokers.
	ClientOpts []kgo.Opt
	// Topics names jobdrop's topics.
	Topics record.Topics
	// Group is the consumer group the instances share. Defaults to
	// "jobdrop-scheduler".
	Group string
	// Node names this instance in logs and ownership markers. Defaults to
	// the host name.
	Node string
	// MaxFiresPerTxn caps the fires committed in one transaction. Defaults
	// to 1,000: smaller transactions commit the first fires of a burst
	// sooner, and hold the partitions they write for a shorter time
	// against read_committed consumers; on 2 cores, with the broker and a
	// consumer beside the engine, 1,000 drained a burst faster than 2,500
	// or 5,000 did (docs/benchmarks.md).
	MaxFiresPerTxn int
	// FireAhead is how long before its due time the transaction of an
	// occurrence may be written at most: it commits once the occurrence
	// is due, so read_committed consumers read it then, rather than after
	// the time writing it takes, which for a burst is most of a second
	// (see ahead.go). A runner begins as far ahead as it expects writing
	// the fires due then to take. Defaults to 2s, or a third of
	// TransactionTimeout if that is less; at most that third (the
	// brokers abort a transaction open longer than TransactionTimeout);
	// negative: fires are written from their due time on.
	FireAhead time.Duration
	// TransactionTimeout is the transaction timeout of the runners'
	// producers. Defaults to 30s.
	TransactionTimeout time.Duration
	// MaxFiresAhead caps the fires of one transaction written ahead; the
	// occurrences due at the same instant past it fire once due,
	// MaxFiresPerTxn at a time. A fire written ahead holds about 2 KB of
	// memory until its commit. Defaults to 16,384.
	MaxFiresAhead int
	// SessionTimeout is how long the group waits for a silent instance
	// before giving its partitions to others. Defaults to 10s.
	SessionTimeout time.Duration
	// Targets checks target topics before a task fires into one. Required.
	Targets TargetChecker
	// Clock drives fire times. Defaults to the real clock.
	Clock clockwork.Clock
	// DataDir holds, while the engine runs, the keys and data (payloads)
	// of the tasks it holds, in files unlinked as soon as they are opened:
	// a million 200-byte payloads cost about 230 MB of disk and page cache
	// instead of resident memory. Defaults to the system's temporary
	// folder.
	DataDir string
	// OnCommit, if set, is told of every committed transaction that fired
	// something: the scheduled times fired and when the commit returned,
	// by the real clock (how late a downstream consumer sees each fire).
	// It runs on the partition's goroutine and must be quick.
	OnCommit func(scheduled []int64, committed time.Time)
	// Refused is what becomes of an occurrence whose fired event the
	// brokers refuse for a reason of its task's own.
	Refused FaultPolicy
	// OnRefused, if set, is told of every fire refused for its task's own
	// reason, once the transaction recording it FAILED commits: the
	// brokers' error code (MESSAGE_TOO_LARGE, TOPIC_AUTHORIZATION_FAILED,
	// …), or TARGET_UNAVAILABLE for a target topic found unusable before
	// anything was written. It runs on the partition's goroutine and must
	// be quick.
	OnRefused func(code string)
	// Avro reads the commands that come as light-scheduler's Avro
	// records and writes their tasks' events alike (avro.go). Nil: such
	// commands are refused.
	Avro *avro.Codec
	// ScheduleTopics are the topics of message schedules (see
	// message.go): a fired schedule's tombstone goes to the partition the
	// schedule was read from.
	ScheduleTopics []string
}

// FaultPolicy is what the engine does with an occurrence whose fired
// event the brokers refuse for a reason of its task's own: too large for
// its target topic, a target topic that does not exist or may not be
// written, a policy violation. The occurrence is recorded FAILED with the
// brokers' answer, in the transaction that fires the partition's other
// tasks on time, and fired again after a wait, with its own fire id, until
// it goes through or its attempts are spent: the task is then paused
// (active: false) until an operator resumes it. The task's later
// occurrences wait behind the refused one; once it fires, those missed
// meanwhile follow the task's misfire policy. The cluster's faults
// (brokers down, not enough replicas, a coordinator moving, timeouts) are
// no task's: the whole transaction waits and is written again.
type FaultPolicy struct {
	// Attempts is how many times one occurrence is fired before its task
	// is paused. Defaults to 5; 1 pauses the task at the first refusal.
	Attempts int `yaml:"attempts"`
	// FirstRetry is the wait after the first refusal; each further one
	// doubles it, up to MaxRetry. Defaults to 1s.
	FirstRetry time.Duration `yaml:"first_retry"`
	// MaxRetry is the longest wait between two attempts. Defaults to 1m.
	MaxRetry time.Duration `yaml:"max_retry"`
}

// withDefaults fills what p leaves zero.
func (p FaultPolicy) withDefaults() FaultPolicy {
	p.Attempts = cmp.Or(p.Attempts, 5)
	p.FirstRetry = cmp.Or(p.FirstRetry, time.Second)
	p.MaxRetry = cmp.Or(p.MaxRetry, time.Minute)
	return p
}

// Validate checks p, zero fields standing for their defaults; its errors
// name the fields as configuration files do (attempts, first_retry,
// max_retry).
func (p FaultPolicy) Validate() error {
	switch d := p.withDefaults(); {
	case p.Attempts < 0:
		return fmt.Errorf("attempts: %d is negative (0 means 5)", p.Attempts)
	case p.FirstRetry < 0:
		return fmt.Errorf("first_retry: %s is negative (0 means 1s)", p.FirstRetry)
	case d.MaxRetry < d.FirstRetry:
		return fmt.Errorf("max_retry: %s is below first_retry %s", d.MaxRetry, d.FirstRetry)
	}
	return nil
}

// wait is the wait after the n-th refused attempt at one occurrence.
func (p FaultPolicy) wait(n int) time.Duration {
	return retry.Backoff{First: p.FirstRetry, Max: p.MaxRetry}.Wait(n)
}

// TargetChecker says whether a target topic can be written.
type TargetChecker interface {
	// Ensure returns an error only when the topic definitely cannot be
	// written; the fire is then recorded as FAILED with that error.
	Ensure(ctx context.Context, topic string) error
	// Forget drops a remembered answer after writing to topic failed.
	Forget(topic string)
}

// Engine fires the tasks of the input partitions this instance owns.
type Engine struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	runners map[int32]*runner
	closed  bool

	// group is the group member while Run runs, set once its client is
	// made: a client is not to be asked anything before NewClient
	// returns.
	group atomic.Pointer[kgo.Client]
}

// New checks cfg and applies its defaults.
func New(cfg Config, log *slog.Logger) (*Engine, error) {
	cfg.Topics = cfg.Topics.WithDefaults()
	if cfg.Group == "" {
		cfg.Group = "jobdrop-scheduler"
	}
	if cfg.Node == "" {
		cfg.Node = hostname()
	}
	if cfg.MaxFiresPerTxn == 0 {
		cfg.MaxFiresPerTxn = 1_000
	}
	if cfg.TransactionTimeout == 0 {
		cfg.TransactionTimeout = DefaultTransactionTimeout
	}
	if cfg.FireAhead == 0 {
		cfg.FireAhead = min(DefaultFireAhead, AheadBound(cfg.TransactionTimeout))
	}
	if cfg.MaxFiresAhead == 0 {
		cfg.MaxFiresAhead = 16_384
	}
	if cfg.DataDir == "" {
		cfg.DataDir = os.TempDir()
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Targets == nil {
		return nil, errors.New("scheduler: Targets is required")
	}
	if cfg.MaxFiresPerTxn < 1 {
		return nil, fmt.Errorf("scheduler: MaxFiresPerTxn must be positive, got %d", cfg.MaxFiresPerTxn)
	}
	if bound := AheadBound(cfg.TransactionTimeout); cfg.FireAhead > bound {
		return nil, fmt.Errorf("scheduler: FireAhead %s is over a third of TransactionTimeout %s", cfg.FireAhead, cfg.TransactionTimeout)
	}
	if cfg.MaxFiresAhead < 1 {
		return nil, fmt.Errorf("scheduler: MaxFiresAhead must be positive, got %d", cfg.MaxFiresAhead)
	}
	if err := cfg.Refused.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler: Refused.%w", err)
	}
	cfg.Refused = cfg.Refused.withDefaults()
	return &Engine{cfg: cfg, log: log.With("component", "scheduler", "node", cfg.Node), runners: map[int32]*runner{}}, nil
}

// Run joins the group and runs a runner per owned partition until ctx is
// done; then it stops the runners and leaves the group. It returns an
// error when the brokers refuse the group's session timeout, which no
// retry mends.
func (e *Engine) Run(ctx context.Context) error {
	input := e.cfg.Topics.Input
	opts := append([]kgo.Opt{
		kgo.ConsumerGroup(e.cfg.Group),
		kgo.ConsumeTopics(input),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(e.cfg.SessionTimeout),
		kgo.HeartbeatInterval(e.cfg.SessionTimeout / 10),
		// Giving up a partition only waits for the transaction under way,
		// so members need little time to rejoin. A coordinator that waits
		// out the rebalance timeout for members that died meanwhile (the
		// embedded broker does) would otherwise leave their partitions
		// unowned for kgo's default of a minute.
		kgo.RebalanceTimeout(e.cfg.SessionTimeout),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			e.assign(ctx, m[input])
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			e.revoke(m[input])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			e.revoke(m[input])
		}),
	}, e.cfg.ClientOpts...)
	group, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	e.group.Store(group)
	// The group assigns partitions; each runner reads its own partition from
	// the offset it checkpointed, so the group client itself never fetches.
	group.PauseFetchTopics(input)
	refused := make(chan error, 1)
	pollCtx, stopPoll := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		// Polling surfaces group errors; records never come while paused.
		for pollCtx.Err() == nil {
			fs := group.PollFetches(pollCtx)
			fs.EachError(func(t string, p int32, err error) {
				switch {
				case pollCtx.Err() != nil:
				case errors.Is(err, kerr.InvalidSessionTimeout):
					// Retrying cannot help: the engine would never fire.
					select {
					case refused <- fmt.Errorf("scheduler: the brokers refuse a session timeout of %s "+
						"(allowed: group.min.session.timeout.ms to group.max.session.timeout.ms of the brokers): %w",
						e.cfg.SessionTimeout, err):
					default:
					}
				default:
					e.log.Warn("group consumer", "topic", t, "partition", p, "err", err)
				}
			})
		}
	}()
	select {
	case <-ctx.Done():
	case err = <-refused:
	}
	e.mu.Lock()
	e.closed = true
	var all []int32
	for p := range e.runners {
		all = append(all, p)
	}
	e.mu.Unlock()
	e.stop(all)
	stopPoll()
	<-polled
	e.group.Store(nil)
	group.Close()
	return err
}

// InGroup reports whether the engine has joined its consumer group: its
// member has a member id and a generation from the group's coordinator.
// It is false before Run and after it returns.
func (e *Engine) InGroup() bool {
	cl := e.group.Load()
	if cl == nil {
		return false
	}
	// A KIP-848 member takes a member id and generation 0 before it has
	// joined; the classic protocol's generations start at 1.
	member, gen := cl.GroupMetadata()
	return member != "" && gen > 0
}

// Group is the engine's consumer group.
func (e *Engine) Group() string { return e.cfg.Group }

// ActiveTasks counts the tasks of the partitions this instance runs, as of
// their last committed transaction.
func (e *Engine) ActiveTasks() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for _, r := range e.runners {
		n += r.active.Load()
	}
	return n
}

// PausedByFaultPolicy counts the tasks of the partitions this instance
// runs that the fault policy paused, as of their last committed
// transaction.
func (e *Engine) PausedByFaultPolicy() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for _, r := range e.runners {
		n += r.paused.Load()
	}
	return n
}

// Lateness is how late this instance fires now: how long ago the earliest
// occurrence of its partitions that is due and not fired yet was due, by
// the engine's clock; zero when none is waiting. It grows while the
// partitions' transactions take long (a large backlog of commands to
// apply, a starved CPU), before the fires they hold commit. Partitions
// being restored are not counted.
func (e *Engine) Lateness() time.Duration { return e.pressing(false) }

// Urgency is how long the fires of this instance have been pressing for
// the node's CPU and brokers: its Lateness, or, while a partition writes
// a transaction ahead of its occurrences' due time (see ahead.go), how
// long ago it began, if that is longer. What others sharing the node
// (files to inject, the recorder, the dashboard) watch to give way, so
// that a burst written ahead is not slowed by them and commits on time.
func (e *Engine) Urgency() time.Duration { return e.pressing(true) }

// Ahead is how long before their due time, at most, the engine begins
// writing the transaction of occurrences due soon (Config.FireAhead as
// defaulted); zero when it never writes ahead. Urgency can count up to
// that much for a burst that is on time.
func (e *Engine) Ahead() time.Duration { return max(e.cfg.FireAhead, 0) }

// Pressure is Urgency, and, once a transaction of fires that pressed
// commits, how long they had pressed, for as long again as writing it
// took (at least pace.Settle, on the wall clock whatever Config.Clock):
// the consumers of the fired events read them then, at about the pace
// they were written. What work in the
// background (the recorder, the dashboard) watches to give way, so that
// it does not take the cores from them either, even when it was waiting
// on something else (the recorder for records, which only the commit
// brings) while the fires pressed. The recorder, resuming 200 ms after
// the commit of a burst of 100,000 written ahead, stored its executions
// while an outside consumer still read the burst (BenchmarkBurstFromOutside,
// embedded, p99 505–576 ms in the slower runs).
func (e *Engine) Pressure() time.Duration {
	now, wall := e.cfg.Clock.Now().UnixMilli(), time.Now().UnixMilli()
	e.mu.Lock()
	defer e.mu.Unlock()
	var p int64
	for _, r := range e.runners {
		p = max(p, r.pressing(now, true))
		if wall < r.settledAt.Load() {
			p = max(p, r.pressed.Load())
		}
	}
	return time.Duration(p) * time.Millisecond
}

func (e *Engine) pressing(ahead bool) time.Duration {
	now := e.cfg.Clock.Now().UnixMilli()
	e.mu.Lock()
	defer e.mu.Unlock()
	var late int64
	for _, r := range e.runners {
		late = max(late, r.pressing(now, ahead))
	}
	return time.Duration(late) * time.Millisecond
}

// pressing is how long the runner's fires have pressed at now (see
// Engine.Urgency; only its lateness unless ahead), in milliseconds.
func (r *runner) pressing(now int64, ahead bool) int64 {
	late := max(now-r.due.Load(), 0)
	if since := r.aheadSince.Load(); ahead && since != 0 {
		late = max(late, now-since)
	}
	return late
}

// settle notes, as a transaction of fires commits, how long they pressed,
// for Engine.Pressure to count while their consumers read them. A window
// still open is only extended: an on-time fire committed just after a
// burst does not end the burst's.
func (r *runner) settle() {
	now := time.Now()
	p := r.pressing(r.e.cfg.Clock.Now().UnixMilli(), true)
	until := now.Add(max(pace.Settle, r.wrote)).UnixMilli()
	if open := r.settledAt.Load(); now.UnixMilli() < open {
		p, until = max(p, r.pressed.Load()), max(until, open)
	}
	r.pressed.Store(p)
	r.settledAt.Store(until)
}

func (e *Engine) assign(ctx context.Context, ps []int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	for _, p := range ps {
		if _, ok := e.runners[p]; ok {
			continue
		}
		r := newRunner(e, p)
		e.runners[p] = r
		r.start(ctx)
	}
	e.log.Info("partitions assigned", "partitions", ps)
}

func (e *Engine) revoke(ps []int32) {
	if len(ps) == 0 {
		return
	}
	e.log.Info("partitions revoked", "partitions", ps)
	e.stop(ps)
}

func (e *Engine) stop(ps []int32) {
	var rs []*runner
	e.mu.Lock()
	for _, p := range ps {
		if r, ok := e.runners[p]; ok {
			rs = append(rs, r)
			delete(e.runners, p)
		}
	}
	e.mu.Unlock()
	for _, r := range rs {
		r.stop()
	}
}
