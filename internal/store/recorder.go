package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/pace"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/retry"
)

// RecorderConfig says where the Recorder reads from.
type RecorderConfig struct {
	// ClientOpts reach the brokers: seed brokers, SASL, TLS and the like.
	// Consumer options are the Recorder's own and are added to these.
	// Required.
	ClientOpts []kgo.Opt
	// Topics names the topics to read; empty names take the defaults of
	// record.Topics.WithDefaults.
	Topics record.Topics
	// MaxPollRecords bounds how many records go into one SQLite
	// transaction. Defaults to 10000.
	MaxPollRecords int
	// MaxLogBytes bounds the log kept of each execution: past it, its
	// oldest lines are dropped, and the log says how many. Defaults to
	// DefaultMaxLogBytes.
	MaxLogBytes int64
	// Observe, if set, is told after every commit to SQLite what it
	// stored and how far behind the recorder still is. It runs on the
	// recorder's goroutine and must be quick.
	Observe func(Progress)
	// Late, if set, says how hard this node's scheduler's fires press
	// now (scheduler.Engine.Pressure). While they press longer than
	// Pacing.RecorderLateness, the Recorder gives way: it stores nothing,
	// waiting at most Pacing.MaxWait (and Pacing.Ahead) for each fetch. It waits between
	// two records, so a burst of fires due waits for one record, not for
	// a long SQLite transaction begun just before. What it stores is the
	// console's view: it lags a burst by about the burst's length.
	Late   func() time.Duration
	Pacing pace.Pacing
}

// Progress is what one commit of the Recorder stored, for
// RecorderConfig.Observe.
type Progress struct {
	// Executions counts the final execution statuses stored, by what the
	// console shows once they are: SUCCESS, FAILED, or OVERDUE for a
	// success reported past the execution's timeout. A report older than
	// the one stored changes nothing and is not counted.
	Executions map[string]int
	// Lag counts the committed records of the recorder's topics not yet
	// stored: for every partition read so far, its last stable offset at
	// the latest fetch minus the next offset to store. It goes stale
	// while no fetch succeeds.
	Lag int64
}

// ErrRecorderStopped is returned by WaitAudit when the Recorder's Run has
// returned, so the event waited for will not be recorded by it.
var ErrRecorderStopped = errors.New("recorder stopped")

// Recorder copies the audit, state, executions and status topics into the
// store. It is a plain consumer of every partition, not a member of a
// consumer group: every node keeps its own full view. It reads committed
// records only and resumes from the offsets stored with the data, so a
// crash never applies a record twice or skips one, and an empty database
// is rebuilt from the topics' start.
type Recorder struct {
	st     *Store
	cfg    RecorderConfig
	log    *slog.Logger
	topics []string

	mu      sync.Mutex
	applied chan struct{} // closed and replaced after every commit
	running bool
	done    chan struct{} // closed when Run returns
	failing error         // why records cannot be stored right now; nil when they can
	rebuild *rebuild      // the rebuild under way; nil when none is

	rebuilds atomic.Uint64 // rebuilds begun, counted before the file is reopened

	// uncheckpointed counts the records stored since the WAL was last
	// checkpointed (see checkpoint); only Run's goroutine uses it.
	uncheckpointed int
}

// fileCheck is how often, at least, the Recorder looks whether its
// database file is still the one it has open.
const fileCheck = 2 * time.Second

// NewRecorder validates cfg, applies its defaults and returns a Recorder
// that does nothing until Run.
func NewRecorder(st *Store, cfg RecorderConfig, log *slog.Logger) (*Recorder, error) {
	if st == nil {
		return nil, errors.New("new recorder: nil store")
	}
	if len(cfg.ClientOpts) == 0 {
		return nil, errors.New("new recorder: no client options: at least the seed brokers are required")
	}
	if cfg.MaxPollRecords < 0 {
		return nil, fmt.Errorf("new recorder: negative max poll records %d", cfg.MaxPollRecords)
	}
	if cfg.MaxPollRecords == 0 {
		cfg.MaxPollRecords = 10000
	}
	if cfg.MaxLogBytes < 0 {
		return nil, fmt.Errorf("new recorder: negative max log bytes %d", cfg.MaxLogBytes)
	}
	if cfg.MaxLogBytes == 0 {
		cfg.MaxLogBytes = DefaultMaxLogBytes
	}
	cfg.Topics = cfg.Topics.WithDefaults()
	cfg.Pacing = cfg.Pacing.WithDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{
		st:      st,
		cfg:     cfg,
		log:     log.With("component", "recorder"),
		topics:  []string{cfg.Topics.Audit, cfg.Topics.State, cfg.Topics.Executions, cfg.Topics.Status},
		applied: make(chan struct{}),
		done:    make(chan struct{}),
	}, nil
}

// Run reads and applies records until ctx is done, then returns nil. It
// returns an error when it cannot start. Records the database cannot take
// (its disk is full, say) are applied again, after a wait, until it takes
// them: Err says why meanwhile, and nothing is read further or skipped.
// What was committed before stays, and the next Run resumes from there.
// Run may be called once.
func (r *Recorder) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return errors.New("recorder: run called twice")
	}
	r.running = true
	r.mu.Unlock()
	defer close(r.done)

	cl, err := r.consumer(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer func() {
		if cl != nil { // nil after a rebuild cut short
			cl.Close()
		}
	}()
	r.log.Info("recorder started", "topics", r.topics)
	lag := make(map[topicPartition]int64) // for Observe
	for {
		// A deadline, so that the database file is looked at while no
		// records come.
		pctx, cancel := context.WithTimeout(ctx, fileCheck)
		fetches := cl.PollRecords(pctx, r.cfg.MaxPollRecords)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if why := r.st.Replaced(); why != nil {
			// What was read is for the old file: the new one starts
			// from its own offsets.
			cl.Close()
			if cl, err = r.startRebuild(ctx, why); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			clear(lag)
			continue
		}
		if fetches.IsClientClosed() {
			return errors.New("recorder: kafka client closed")
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			// The client retries by itself; say why nothing comes.
			r.log.Warn("fetch failed", "topic", topic, "partition", partition, "err", err)
		})
		stored, err := r.store(ctx, fetches, lag)
		if errors.Is(err, errReplaced) {
			continue // rebuilt at the top of the loop
		}
		if err != nil {
			return nil // ctx is done
		}
		if r.endRebuild(ctx) || stored {
			r.notify()
		}
		if r.uncheckpointed >= checkpointRecords {
			r.checkpoint(ctx)
		}
	}
}

// store stores the records of fetches, telling Observe, and reports
// whether there were any. lag is the Observe's view of the partitions read
// so far. It fails only when ctx is done, or with errReplaced.
func (r *Recorder) store(ctx context.Context, fetches kgo.Fetches, lag map[topicPartition]int64) (bool, error) {
	recs := fetches.Records()
	if len(recs) == 0 {
		return false, nil
	}
	var outcomes map[string]int
	if r.cfg.Observe != nil {
		outcomes = make(map[string]int)
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if n := len(p.Records); n > 0 {
				end := p.LastStableOffset
				if end < 0 { // a broker that does not say
					end = p.HighWatermark
				}
				lag[topicPartition{p.Topic, p.Partition}] = max(end-p.Records[n-1].Offset-1, 0)
			}
		})
	}
	skipped, err := r.storeRecords(ctx, recs, outcomes)
	if err != nil {
		return false, err
	}
	for _, s := range skipped {
		r.log.Warn("skipped malformed record", "topic", s.Topic, "partition", s.Partition, "offset", s.Offset, "err", s.Err)
	}
	r.uncheckpointed += len(recs)
	if r.cfg.Observe != nil {
		var behind int64
		for _, n := range lag {
			behind += n
		}
		r.cfg.Observe(Progress{Executions: outcomes, Lag: behind})
	}
	return true, nil
}

// storeRecords stores recs, giving way to the scheduler's fires (see
// RecorderConfig.Late), and adds the outcomes stored to outcomes when it
// is not nil.
func (r *Recorder) storeRecords(ctx context.Context, recs []*kgo.Record, outcomes map[string]int) ([]Skipped, error) {
	// Records are stored in one transaction whatever the pace: SQLite
	// writes each page a transaction changed once, and the tasks of a
	// file touch pages all over the tasks' indexes. Stored 500 at a
	// time, the 100,000 tasks of one file went in at about 3,400 a
	// second; a poll at a time, 7,000 to 10,000. Giving way is a wait
	// between two records, within the transaction.
	return r.apply(ctx, recs, &outcomes, r.cfg.Pacing.Background(r.cfg.Late).Within(ctx).Pause)
}

// checkpointRecords is how many records the Recorder stores between two
// checkpoints of the WAL: one after every poll of a flood, one every
// 2,000 records of a trickle.
const checkpointRecords = 2_000

// checkpoint copies the WAL into the database file (Store.Checkpoint),
// once this node's scheduler's fires no longer press, waiting at most
// Pacing.MaxWait plus Pacing.Ahead for it: a checkpoint cannot give way once begun. A
// failure is only logged: the next one, or the writer's own, copies what
// this one did not.
func (r *Recorder) checkpoint(ctx context.Context) {
	r.cfg.Pacing.Background(r.cfg.Late).Wait(ctx)
	r.uncheckpointed = 0
	if err := r.st.Checkpoint(ctx); err != nil && ctx.Err() == nil {
		r.log.Warn("cannot checkpoint the database's write-ahead log; trying again after the next records", "err", err)
	}
}

// errReplaced ends apply's retries when the database file was deleted or
// replaced meanwhile.
var errReplaced = errors.New("the database file was replaced")

// applyBackoff spaces the attempts at storing records, and at reopening
// the database and asking how far to rebuild it.
var applyBackoff = retry.Backoff{First: 250 * time.Millisecond, Max: 5 * time.Second}

// apply stores recs, trying again after a wait while the database fails,
// until it succeeds, ctx is done (its error is then returned) or the
// database file is found replaced (errReplaced). The
// failure is logged once, and once more should it change; Err reports it
// until the records are stored. outcomes, when not nil, is made anew for
// each attempt, so a failed one counts nothing.
func (r *Recorder) apply(ctx context.Context, recs []*kgo.Record, outcomes *map[string]int, pause func()) ([]Skipped, error) {
	var skipped []Skipped
	attempt := 0
	err := retry.Do(ctx, retry.Policy{Backoff: applyBackoff, Log: r.log, Level: slog.LevelError, QuietRepeats: true,
		Msg: "cannot store records; retrying until the database takes them"}, func() error {
		if attempt++; *outcomes != nil && attempt > 1 {
			*outcomes = make(map[string]int)
		}
		var err error
		skipped, err = r.st.apply(ctx, r.cfg.Topics, recs, *outcomes, r.cfg.MaxLogBytes, pause)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			// Failing may be left from an earlier call, cut short
			// by a replaced file.
			if r.setFailing(nil) != nil {
				r.log.Info("storing records again", "attempt", attempt)
			}
			return nil
		}
		r.setFailing(err)
		if r.st.Replaced() != nil {
			// Deleted to free space, say: these records go to the
			// new file, read again from its own offsets.
			return retry.Permanent(errReplaced)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return skipped, nil
}

// setFailing records why records cannot be stored (nil: they can) and
// returns what was recorded before.
func (r *Recorder) setFailing(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.failing
	r.failing = err
	return prev
}

// Err says why the Recorder cannot store the records it read, while it
// keeps trying: "database or disk is full", say; or, wrapping
// ErrRebuilding, that it is refilling a database that was deleted or
// replaced. It is nil while records are stored and the database is whole.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.failing != nil:
		return r.failing
	case r.rebuild != nil:
		return fmt.Errorf("%w: %w", ErrRebuilding, r.rebuild.why)
	}
	return nil
}
