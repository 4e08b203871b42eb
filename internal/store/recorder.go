package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

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
}

// rebuild is the refilling of a database that was deleted or replaced
// while the Recorder ran.
type rebuild struct {
	why   error
	start time.Time
	ends  map[string]map[int32]int64 // last stable offsets when it began
}

// ErrRebuilding is what Err wraps while the Recorder refills a database
// that was deleted or replaced while it ran: the console shows less than
// there is until it is done.
var ErrRebuilding = errors.New("rebuilding the database from the topics")

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
			r.log.Warn("fetch failed", "topic", topic, "partition", partition, "error", err)
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
	skipped, err := r.apply(ctx, recs, &outcomes)
	if err != nil {
		return false, err
	}
	for _, s := range skipped {
		r.log.Warn("skipped malformed record", "topic", s.Topic, "partition", s.Partition, "offset", s.Offset, "error", s.Err)
	}
	if r.cfg.Observe != nil {
		var behind int64
		for _, n := range lag {
			behind += n
		}
		r.cfg.Observe(Progress{Executions: outcomes, Lag: behind})
	}
	return true, nil
}

// startRebuild opens the file now at the database's path, a new one when
// it is gone, and returns a consumer that fills it from the offsets it
// holds: from the topics' start for a new file. Until the Recorder has
// stored everything committed when it began, Err wraps ErrRebuilding.
func (r *Recorder) startRebuild(ctx context.Context, why error) (*kgo.Client, error) {
	r.log.Error("the database file changed under the recorder; rebuilding it from the topics", "reason", why)
	b := &rebuild{why: why, start: time.Now()}
	r.setRebuild(b)
	r.rebuilds.Add(1)
	if err := retry.Do(ctx, retry.Policy{Backoff: applyBackoff, Log: r.log, Level: slog.LevelError, QuietRepeats: true,
		Msg: "cannot open the database; retrying"}, func() error {
		err := r.st.Reopen()
		r.setFailing(err)
		return err
	}); err != nil {
		return nil, err
	}
	r.notify() // pages show what the new file holds
	if err := retry.Do(ctx, retry.Policy{Backoff: applyBackoff, Log: r.log, Level: slog.LevelWarn,
		Msg: "cannot ask the brokers how far to rebuild; retrying"}, func() error {
		ends, err := r.endOffsets(ctx, r.topics...)
		if err == nil {
			r.mu.Lock()
			b.ends = ends
			r.mu.Unlock()
		}
		return err
	}); err != nil {
		return nil, err
	}
	return r.consumer(ctx)
}

// endRebuild ends the rebuild under way once every partition is stored up
// to where it stood when the rebuild began, and reports whether it did.
func (r *Recorder) endRebuild(ctx context.Context) bool {
	r.mu.Lock()
	b := r.rebuild
	r.mu.Unlock()
	if b == nil {
		return false
	}
	stored, err := r.st.Offsets(ctx)
	if err != nil {
		return false // asked again after the next poll
	}
	for topic, ps := range b.ends {
		for p, end := range ps {
			if stored[topic][p] < end {
				return false
			}
		}
	}
	r.setRebuild(nil)
	r.log.Info("database rebuilt from the topics", "took_ms", time.Since(b.start).Milliseconds())
	return true
}

func (r *Recorder) setRebuild(b *rebuild) {
	r.mu.Lock()
	r.rebuild = b
	r.mu.Unlock()
}

// Whole runs fn, which reads the store, once the database is whole: after
// the rebuild under way, if any, and again should a rebuild begin while
// fn runs, since what fn read may then come from a file just replaced.
// It returns fn's error, ctx's, or ErrRecorderStopped.
func (r *Recorder) Whole(ctx context.Context, fn func() error) error {
	for {
		if err := r.WaitRebuilt(ctx); err != nil {
			return err
		}
		began := r.rebuilds.Load()
		err := fn()
		if r.rebuilds.Load() == began {
			return err
		}
	}
}

// WaitRebuilt returns at once unless the Recorder is rebuilding its
// database; then it returns once the rebuild is done, with ctx's error
// when ctx is done first, or ErrRecorderStopped when Run returns first.
// What asks the store for what was done before (has this file been
// injected?) waits for it.
func (r *Recorder) WaitRebuilt(ctx context.Context) error {
	for {
		applied := r.appliedChan()
		r.mu.Lock()
		b := r.rebuild
		r.mu.Unlock()
		if b == nil {
			return nil
		}
		select {
		case <-applied:
		case <-r.done:
			return ErrRecorderStopped
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// consumer builds the Kafka client, starting every partition at the
// offset stored with the data, or at its start when none is stored.
//
// Partitions are learnt from the brokers once, here: a topic that exists
// is read partition by partition from its stored offsets; a topic that
// does not exist yet is read whole from its start once it appears.
// Partitions added to an existing topic are picked up at the next Run.
func (r *Recorder) consumer(ctx context.Context) (*kgo.Client, error) {
	stored, err := r.st.Offsets(ctx)
	if err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	details, err := r.partitions(ctx)
	if err != nil {
		return nil, err
	}
	partitions := make(map[string]map[int32]kgo.Offset)
	var whole []string
	for _, topic := range r.topics {
		d, ok := details[topic]
		if !ok || len(d.Partitions) == 0 {
			whole = append(whole, topic)
			continue
		}
		partitions[topic] = make(map[int32]kgo.Offset, len(d.Partitions))
		for p := range d.Partitions {
			// An exact offset, even 0 for "from the start", lets every
			// partition join the first fetch: AtStart would first need
			// a ListOffsets, and the partition would then wait for the
			// others' fetch to return (up to its max wait). Should 0 be
			// gone already, the reset offset below applies.
			partitions[topic][p] = kgo.NewOffset().At(stored[topic][p])
		}
	}
	opts := append([]kgo.Opt{}, r.cfg.ClientOpts...)
	opts = append(opts,
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers come through so the stored offsets move
		// past them and reach the last stable offset: WaitAudit relies
		// on that to tell when a partition is caught up.
		kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(fetchBytes),
	)
	if len(partitions) > 0 {
		opts = append(opts, kgo.ConsumePartitions(partitions))
	}
	if len(whole) > 0 {
		r.log.Info("topics not found yet; will read them from the start once created", "topics", whole)
		opts = append(opts, kgo.ConsumeTopics(whole...))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("recorder: new kafka client: %w", err)
	}
	return cl, nil
}

// fetchBytes bounds one fetch of the recorder's consumer. What it has
// fetched and not stored yet is memory, and it is behind whenever Kafka
// takes records faster than SQLite (a flood of files, a rebuild): with
// kgo's default of 50 MiB a fetch, decompressed to several times that,
// the recorder held a few hundred MiB. 4 MiB is some ten thousand
// records, more than one SQLite transaction takes.
const fetchBytes = 4 << 20

// partitions asks the brokers for the partitions of the recorder's
// topics, retrying while the brokers cannot be reached.
func (r *Recorder) partitions(ctx context.Context) (kadm.TopicDetails, error) {
	cl, err := kgo.NewClient(r.cfg.ClientOpts...)
	if err != nil {
		return nil, fmt.Errorf("recorder: new kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	out := make(kadm.TopicDetails)
	err = retry.Do(ctx, retry.Policy{Backoff: retry.Backoff{First: 250 * time.Millisecond, Max: 10 * time.Second},
		Log: r.log, Level: slog.LevelWarn, Msg: "cannot reach the brokers; retrying"}, func() error {
		md, err := adm.Metadata(ctx, r.topics...)
		if err != nil {
			return err
		}
		for topic, d := range md.Topics {
			switch {
			case d.Err == nil:
				out[topic] = d
			case errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			default:
				return retry.Permanent(fmt.Errorf("recorder: metadata of topic %s: %w", topic, d.Err))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
func (r *Recorder) apply(ctx context.Context, recs []*kgo.Record, outcomes *map[string]int) ([]Skipped, error) {
	var skipped []Skipped
	attempt := 0
	err := retry.Do(ctx, retry.Policy{Backoff: applyBackoff, Log: r.log, Level: slog.LevelError, QuietRepeats: true,
		Msg: "cannot store records; retrying until the database takes them"}, func() error {
		if attempt++; *outcomes != nil && attempt > 1 {
			*outcomes = make(map[string]int)
		}
		var err error
		skipped, err = r.st.apply(ctx, r.cfg.Topics, recs, *outcomes, r.cfg.MaxLogBytes)
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

// notify wakes everyone waiting for a commit.
func (r *Recorder) notify() {
	r.mu.Lock()
	close(r.applied)
	r.applied = make(chan struct{})
	r.mu.Unlock()
}

// Applied returns a channel closed after the next commit of recorded
// records: a reader that wants to hear of every change takes a new channel
// each time the previous one closes.
func (r *Recorder) Applied() <-chan struct{} { return r.appliedChan() }

func (r *Recorder) appliedChan() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

// WaitAudit returns once the audit event with this id is stored and so is
// every audit record committed, on any partition, before WaitAudit was
// called: a node that writes a "node started" event and waits for it has
// then seen every file event committed before it started. It returns ctx's
// error when ctx is done first, and ErrRecorderStopped when Run returns
// first.
func (r *Recorder) WaitAudit(ctx context.Context, id string) error {
	all, err := r.endOffsets(ctx, r.cfg.Topics.Audit)
	if err != nil {
		return fmt.Errorf("wait for audit %s: %w", id, err)
	}
	ends := all[r.cfg.Topics.Audit]
	for {
		// Take the channel before looking, so a commit between the look
		// and the wait is not missed.
		applied := r.appliedChan()
		ok, err := r.auditCaughtUp(ctx, id, ends)
		if err != nil {
			return fmt.Errorf("wait for audit %s: %w", id, err)
		}
		if ok {
			return nil
		}
		select {
		case <-applied:
		case <-r.done:
			if ok, err := r.auditCaughtUp(ctx, id, ends); err == nil && ok {
				return nil
			}
			return fmt.Errorf("wait for audit %s: %w", id, ErrRecorderStopped)
		case <-ctx.Done():
			return fmt.Errorf("wait for audit %s: %w", id, ctx.Err())
		}
	}
}

// endOffsets asks the brokers for the last stable offset of every
// partition of topics: everything committed so far lies below it. Topics
// that do not exist, and partitions that hold no record, are left out.
func (r *Recorder) endOffsets(ctx context.Context, topics ...string) (map[string]map[int32]int64, error) {
	cl, err := kgo.NewClient(r.cfg.ClientOpts...)
	if err != nil {
		return nil, fmt.Errorf("new kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	listed, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %v: %w", topics, err)
	}
	// A partition whose records are all gone (retention deleted them, or
	// compaction) has nothing to read: its end is never reached by
	// reading, so it is left out.
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list start offsets of %v: %w", topics, err)
	}
	ends := make(map[string]map[int32]int64)
	var errs []error
	listed.Each(func(o kadm.ListedOffset) {
		switch {
		case o.Err == nil:
			if s, ok := starts.Lookup(o.Topic, o.Partition); ok && s.Err == nil && s.Offset >= o.Offset {
				return
			}
			if ends[o.Topic] == nil {
				ends[o.Topic] = make(map[int32]int64)
			}
			ends[o.Topic][o.Partition] = o.Offset
		case errors.Is(o.Err, kerr.UnknownTopicOrPartition):
		default:
			errs = append(errs, fmt.Errorf("%s partition %d: %w", o.Topic, o.Partition, o.Err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	return ends, nil
}

// auditCaughtUp reports whether the event is stored and every audit
// partition has been applied up to ends.
func (r *Recorder) auditCaughtUp(ctx context.Context, id string, ends map[int32]int64) (bool, error) {
	ok, err := r.st.AuditRecorded(ctx, id)
	if err != nil || !ok {
		return false, err
	}
	offsets, err := r.st.Offsets(ctx)
	if err != nil {
		return false, err
	}
	for p, end := range ends {
		if end > 0 && offsets[r.cfg.Topics.Audit][p] < end {
			return false, nil
		}
	}
	return true, nil
}
