package msgsched

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/retry"
	"github.com/jobdrop/jobdrop/task"
)

// Config configures a Bridge.
type Config struct {
	// ClientOpts reach the brokers.
	ClientOpts []kgo.Opt
	// Topics are the schedule topics read. Required.
	Topics []string
	// History, when set, is the topic a copy of each fired record goes to.
	History string
	// Grace is how late a schedule may arrive and still fire, at once;
	// one later is dropped. Zero: every schedule past due on arrival is.
	Grace time.Duration
	// Records names jobdrop's topics: commands go to the input topic,
	// audit events to the audit topic.
	Records record.Topics
	// Group is the consumer group of the bridges of all instances.
	// Defaults to "jobdrop-message-scheduler".
	Group string
	// Node names this instance; its transactions are the bridge's of it.
	Node string
	// SessionTimeout is how long the group waits for a silent instance
	// before giving its partitions to others. Defaults to 10s.
	SessionTimeout time.Duration
	// MaxPollRecords bounds the records of one transaction. Defaults to
	// 10,000.
	MaxPollRecords int
	// Clock is the clock of audit events and of what is due. Defaults
	// to the real clock.
	Clock clockwork.Clock
	Log   *slog.Logger
}

// Bridge moves schedules from their topics onto the input topic, each
// exactly once: the commands of a poll and the group's offsets past it
// commit in one transaction.
type Bridge struct {
	cfg  Config
	conv converter
	// live is set while the bridge has a session with the group.
	live atomic.Bool
	// refused are records whose command the brokers refused for its own
	// reason (too large): taken again, they are rejected instead.
	mu      sync.Mutex
	refused map[string]string
	// ahead is what was seen ahead of partitions read from behind (see
	// lookahead.go); used by the session's goroutine only.
	ahead map[topicPartition]*lookahead
}

// New returns a bridge; Run runs it.
func New(cfg Config) *Bridge {
	if cfg.Group == "" {
		cfg.Group = "jobdrop-message-scheduler"
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.MaxPollRecords <= 0 {
		cfg.MaxPollRecords = 10_000
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Bridge{cfg: cfg, refused: map[string]string{}, ahead: map[topicPartition]*lookahead{},
		conv: converter{input: cfg.Records.Input, audit: cfg.Records.Audit, history: cfg.History, grace: cfg.Grace, clock: cfg.Clock}}
}

// Live reports whether the bridge is consuming its topics.
func (b *Bridge) Live() bool { return b.live.Load() }

// Run consumes the schedule topics until ctx is done, starting over after
// a failure of the cluster.
func (b *Bridge) Run(ctx context.Context) {
	_ = retry.Do(ctx, retry.Policy{Backoff: retry.Backoff{First: 100 * time.Millisecond, Max: 10 * time.Second},
		Log: b.cfg.Log, Level: slog.LevelWarn, Msg: "schedule topics: starting over"}, func() error {
		err := b.session(ctx)
		b.live.Store(false)
		if err == nil {
			err = errors.New("session ended") // only once ctx is done
		}
		return err
	})
}

// livePoll bounds one wait for records.
const livePoll = 2 * time.Second

func (b *Bridge) session(ctx context.Context) error {
	manual := map[string]bool{}
	for _, t := range b.cfg.Topics {
		manual[t] = true
	}
	sess, err := kgo.NewGroupTransactSession(append([]kgo.Opt{
		kgo.TransactionalID(b.cfg.Group + "-" + b.cfg.Node),
		kgo.TransactionTimeout(30 * time.Second),
		kgo.ConsumerGroup(b.cfg.Group),
		kgo.SessionTimeout(b.cfg.SessionTimeout),
		kgo.HeartbeatInterval(b.cfg.SessionTimeout / 10),
		kgo.RebalanceTimeout(b.cfg.SessionTimeout),
		kgo.ConsumeTopics(b.cfg.Topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RecordPartitioner(kafka.ManualFor(manual)),
	}, b.cfg.ClientOpts...)...)
	if err != nil {
		return err
	}
	defer sess.Close()
	clear(b.ahead) // the group may give partitions at other offsets
	b.cfg.Log.Info("reading schedule topics", "topics", b.cfg.Topics, "group", b.cfg.Group)
	for {
		// A poll ends at least every few seconds, so that a bridge with
		// nothing to read still says it is live.
		pctx, cancel := context.WithTimeout(ctx, livePoll)
		fetches := sess.PollRecords(pctx, b.cfg.MaxPollRecords)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = errors.Join(ferr, fmt.Errorf("%s partition %d: %w", t, p, err))
			}
		})
		if ferr != nil {
			return ferr
		}
		b.live.Store(true)
		if fetches.NumRecords() == 0 {
			continue
		}
		if err := b.transact(ctx, sess, fetches); err != nil {
			return err
		}
	}
}

// transact writes what the records of one poll become, and the group's
// offsets past them, in one transaction. A command the brokers refuse for
// its own reason aborts it; the records come again, and that one is
// rejected with the brokers' answer.
func (b *Bridge) transact(ctx context.Context, sess *kgo.GroupTransactSession, fetches kgo.Fetches) error {
	b.lookAhead(ctx, fetches)
	if err := sess.Begin(); err != nil {
		return err
	}
	var mu sync.Mutex
	var failed error
	fetches.EachRecord(func(rec *kgo.Record) {
		where := fmt.Sprintf("%s/%d/%d", rec.Topic, rec.Partition, rec.Offset)
		outs := b.convertOrRefused(rec, where)
		for _, out := range outs {
			sess.Produce(ctx, out, func(_ *kgo.Record, err error) {
				if err == nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if kafka.RecordFault(err) {
					b.mu.Lock()
					b.refused[where] = err.Error()
					b.mu.Unlock()
				}
				failed = errors.Join(failed, err)
			})
		}
	})
	if err := sess.Client().Flush(ctx); err != nil {
		failed = errors.Join(failed, err)
	}
	try := kgo.TryCommit
	if failed != nil {
		try = kgo.TryAbort
	}
	committed, err := sess.End(ctx, try)
	switch {
	case err != nil:
		return err
	case failed != nil:
		b.cfg.Log.Warn("schedule topics: transaction aborted; reading again", "err", failed)
	case !committed:
		b.cfg.Log.Info("schedule topics: partitions moved during the transaction; reading again")
	default:
		b.mu.Lock()
		clear(b.refused)
		b.mu.Unlock()
	}
	return nil
}

// convertOrRefused converts rec, or rejects it when its command was
// refused by the brokers before.
func (b *Bridge) convertOrRefused(rec *kgo.Record, where string) []*kgo.Record {
	b.mu.Lock()
	why, refused := b.refused[where]
	b.mu.Unlock()
	if b.ahead[topicPartition{rec.Topic, rec.Partition}].superseded(rec) {
		return nil // a later version of its key is further on: it wins
	}
	if !refused {
		return b.conv.convert(rec)
	}
	key := task.Key(rec.Topic, task.EscapeName(rec.Key))
	return []*kgo.Record{b.conv.auditRec(rec, key, record.ActionScheduleRejected, record.OutcomeRejected,
		"was refused by the brokers as a command: "+why)}
}
