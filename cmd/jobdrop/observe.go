package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/metrics"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/web"
)

// countFile feeds the injector's OnFile hook into the metrics.
func countFile(m *metrics.Metrics) func(injector.FileDone) {
	return func(d injector.FileDone) {
		f := metrics.File{Outcome: string(d.Outcome), Took: d.Took}
		switch d.Outcome {
		case injector.Injected, injector.Partial:
			f.Accepted = d.Rows - d.Rejected
			f.Rejected = d.Rejected
		case injector.Rejected:
			f.Rejected = d.Rejected
		}
		m.FileDone(f)
	}
}

// countRefused counts an entry the watcher refused (a link, a FIFO, an
// unreadable file, a bad name) as a failed file: it is moved to failed/
// like one.
func countRefused(m *metrics.Metrics) func() {
	return func() { m.FileDone(metrics.File{Outcome: metrics.FileFailed}) }
}

// countFires feeds the engine's OnCommit hook into the metrics. Lateness
// is measured on the engine's own clock, read as the hook runs, right
// after the commit: the scheduled times are on that clock, which in
// tests is a fake one. In production it is the real clock, the one the
// hook's own commit time is read from.
func countFires(m *metrics.Metrics, clock clockwork.Clock) func([]int64, time.Time) {
	return func(scheduled []int64, _ time.Time) { m.Fired(scheduled, clock.Now()) }
}

// countRecorded feeds the recorder's Observe hook into the metrics.
func countRecorded(m *metrics.Metrics) func(store.Progress) {
	return func(p store.Progress) {
		m.ExecutionsDone(p.Executions)
		m.SetRecorderLag(p.Lag)
	}
}

// recorderNotice warns the console's pages when what they show is less
// than what Kafka holds: the database is being rebuilt, or cannot take
// what the recorder reads.
func recorderNotice(rec *store.Recorder) func() string {
	return func() string {
		err := rec.Err()
		switch {
		case errors.Is(err, store.ErrRebuilding):
			return "The console's database is being rebuilt from Kafka: this page shows only part of what there is until it is done."
		case err != nil:
			return "The console cannot store what it reads from Kafka (" + err.Error() + "): this page may be behind."
		}
		return ""
	}
}

// readiness says whether this node is ready: the brokers answer, jobdrop's
// topics exist, the recorder has stored everything committed before the
// node started (so the console and file deduplication are current) and
// stores what it reads, the scheduler has joined its consumer group, and
// the data dir takes writes.
type readiness struct {
	admin    *kgo.Client
	topics   []string
	group    string
	clients  *metrics.KafkaClients
	recorder interface{ Err() error }
	dataDir  string
	// caughtUp is set once the recorder has stored everything committed
	// before this node started.
	caughtUp atomic.Bool
}

func newReadiness(cfg Config, admin *kgo.Client, clients *metrics.KafkaClients, rec *store.Recorder) *readiness {
	return &readiness{
		admin:  admin,
		topics: cfg.Topics.All(),
		// Empty means the engine's default group.
		group:    cmp.Or(cfg.Scheduler.Group, "jobdrop-scheduler"),
		clients:  clients,
		recorder: rec,
		dataDir:  cfg.DataDir,
	}
}

// checks runs every check; the Kafka ones ask the brokers.
func (r *readiness) checks(ctx context.Context) []web.ReadyCheck {
	kafkaErr := r.admin.Ping(ctx)
	if kafkaErr != nil {
		kafkaErr = fmt.Errorf("no broker answers: %w", kafkaErr)
	}
	topicsErr := errors.New("not checked: no broker answers")
	if kafkaErr == nil {
		topicsErr = r.topicsExist(ctx)
	}
	var recorderErr, schedulerErr error
	if err := r.recorder.Err(); errors.Is(err, store.ErrRebuilding) {
		recorderErr = err
	} else if err != nil {
		recorderErr = fmt.Errorf("cannot store records, retrying: %w", err)
	} else if !r.caughtUp.Load() {
		recorderErr = errors.New("still storing what was committed before this node started")
	}
	if !r.clients.InGroup(r.group) {
		schedulerErr = fmt.Errorf("not yet a member of consumer group %s", r.group)
	}
	return []web.ReadyCheck{
		{Name: "kafka", Err: kafkaErr},
		{Name: "topics", Err: topicsErr},
		{Name: "recorder", Err: recorderErr},
		{Name: "scheduler", Err: schedulerErr},
		{Name: "data_dir", Err: writable(r.dataDir)},
	}
}

// waitWritable returns once dir takes writes (see writable), or with ctx's
// error once ctx is done. On a full disk jobdrop so waits for space
// instead of exiting, which under a service manager would restart it in
// a loop; the wait is logged once, and its end.
func waitWritable(ctx context.Context, dir string, log *slog.Logger) error {
	wait := time.Second
	for logged := false; ; logged = true {
		err := writable(dir)
		if err == nil {
			if logged {
				log.Info("the data dir takes writes again; starting", "data_dir", dir)
			}
			return nil
		}
		if !logged {
			log.Error("cannot start: the data dir does not take writes; waiting until it does", "error", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// writable checks that dir takes a new file of a few kilobytes, which
// the SQLite view and the embedded broker need all the time: a full disk,
// a file system remounted read-only or a lost permission shows here
// before anything else fails.
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".ready-*")
	if err == nil {
		defer os.Remove(f.Name())
		_, err = f.Write(make([]byte, 4096))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the probe's own name says nothing
		}
		return fmt.Errorf("cannot write to %s: %w", dir, err)
	}
	return nil
}

// topicsExist asks the brokers for jobdrop's topics.
func (r *readiness) topicsExist(ctx context.Context) error {
	details, err := kadm.NewClient(r.admin).ListTopics(ctx, r.topics...)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	var errs []error
	for _, t := range r.topics {
		d, ok := details[t]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: missing", t))
		case d.Err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", t, d.Err))
		}
	}
	return errors.Join(errs...)
}
