package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/metrics"
	"github.com/jobdrop/jobdrop/internal/retry"
	"github.com/jobdrop/jobdrop/internal/scheduler"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/watcher"
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

// consoleNotice warns the console's pages of what an operator must know
// whatever page is open: what they show is less than what Kafka holds
// (the database is being rebuilt, or cannot take what the recorder
// reads), a folder is stalled or slow, or files wait for review.
func consoleNotice(rec *store.Recorder, st *store.Store, folders folderWatch) func() string {
	return func() string {
		var parts []string
		err := rec.Err()
		switch {
		case errors.Is(err, store.ErrRebuilding):
			parts = append(parts, "The console's database is being rebuilt from Kafka: this page shows only part of what there is until it is done.")
		case err != nil:
			parts = append(parts, "The console cannot store what it reads from Kafka ("+err.Error()+"): this page may be behind.")
		}
		if n := folders.notice(); n != "" {
			parts = append(parts, n)
		}
		if held, err := st.HeldBatches(context.Background()); err == nil && len(held) > 0 {
			var names []string
			for _, b := range held {
				names = append(names, fmt.Sprintf("%s in %s (%d of its source's tasks would be deleted)", b.File, b.Folder, b.Diff.Removed))
			}
			parts = append(parts, fmt.Sprintf("Held for review: %s. Open each file's page to apply or reject it.", strings.Join(names, "; ")))
		}
		return strings.Join(parts, " ")
	}
}

// folderWatch judges what the watched folders do, for the readiness
// check, the metrics and the console's notice.
type folderWatch struct {
	status     func() []watcher.FolderStatus
	clock      clockwork.Clock
	stallAfter time.Duration
	slowAfter  time.Duration
}

func newFolderWatch(cfg WatcherConfig, status func() []watcher.FolderStatus, clock clockwork.Clock) folderWatch {
	return folderWatch{status: status, clock: clock,
		stallAfter: cmp.Or(cfg.StallAfter, time.Minute), slowAfter: cmp.Or(cfg.SlowAfter, 10*time.Minute)}
}

// judged is what folderWatch finds of the folders at one moment.
type judged struct {
	stalled []string // why each stalled folder is
	slow    []string // files in .processing/ for longer than slowAfter
	gauges  metrics.Folders
}

func (fw folderWatch) judge() judged {
	var j judged
	now := fw.clock.Now()
	for _, s := range fw.status() {
		j.gauges.Queued += s.Queued
		if s.File != "" {
			j.gauges.OldestProcessing = max(j.gauges.OldestProcessing, now.Sub(s.Since))
		}
		switch {
		case s.Problem != "":
			j.stalled = append(j.stalled, fmt.Sprintf("folder %s cannot be watched: %s", s.Dir, s.Problem))
		case stalledFor(s, now) >= fw.stallAfter:
			what, why := s.File, "no headway"
			if what == "" {
				what = "a refused entry"
			}
			if s.Retrying != nil {
				why = s.Retrying.Error()
			}
			j.stalled = append(j.stalled, fmt.Sprintf("folder %s stalled for %s on %s, %d more files waiting: %s",
				s.Dir, stalledFor(s, now).Round(time.Second), what, s.Queued, why))
		case s.File != "" && now.Sub(s.Since) >= fw.slowAfter:
			j.slow = append(j.slow, fmt.Sprintf("%s has been in %s/%s for %s", s.File, s.Dir, watcher.ProcessingDir,
				now.Sub(s.Since).Round(time.Second)))
		}
	}
	j.gauges.Stalled = len(j.stalled)
	return j
}

// stalledFor is how long a folder has made no headway: with the file it
// handles since its claim or its last progress, whichever is later, or
// with a refused entry it cannot move since the first failure.
func stalledFor(s watcher.FolderStatus, now time.Time) time.Duration {
	switch {
	case s.File != "":
		return now.Sub(later(s.Since, s.LastProgress))
	case s.Retrying != nil:
		return now.Sub(s.RetryingSince)
	}
	return 0
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// check is the readiness check of the folders: a stalled one means the
// node cannot do its job.
func (fw folderWatch) check() error {
	if j := fw.judge(); len(j.stalled) > 0 {
		return errors.New(strings.Join(j.stalled, "; "))
	}
	return nil
}

// gauges feeds metrics.ObserveFolders.
func (fw folderWatch) gauges() metrics.Folders { return fw.judge().gauges }

// notice is what the console says of the folders above every page.
func (fw folderWatch) notice() string {
	j := fw.judge()
	var parts []string
	if len(j.stalled) > 0 {
		parts = append(parts, "Stalled: "+strings.Join(j.stalled, "; ")+".")
	}
	if len(j.slow) > 0 {
		parts = append(parts, "Slow: "+strings.Join(j.slow, "; ")+".")
	}
	return strings.Join(parts, " ")
}

// queues is what the dashboard shows of each folder's queue: the files
// waiting, how fast the folder takes them and the time left at that pace.
func (fw folderWatch) queues() []web.FolderQueue {
	var out []web.FolderQueue
	for _, s := range fw.status() {
		left, _ := s.Left()
		out = append(out, web.FolderQueue{Dir: s.Dir, Queued: s.Queued, PerMinute: 60 * s.Rate, Left: left})
	}
	return out
}

// readiness says whether this node is ready: the brokers answer, jobdrop's
// topics exist, the recorder has stored everything committed before the
// node started (so the console and file deduplication are current) and
// stores what it reads, the scheduler has joined its consumer group, and
// the data dir takes writes.
type readiness struct {
	admin    *kgo.Client
	topics   []string
	engine   *scheduler.Engine
	recorder interface{ Err() error }
	folders  folderWatch
	dataDir  string
	// caughtUp is set once the recorder has stored everything committed
	// before this node started.
	caughtUp atomic.Bool
}

func newReadiness(cfg Config, admin *kgo.Client, eng *scheduler.Engine, rec *store.Recorder, folders folderWatch) *readiness {
	return &readiness{
		folders:  folders,
		admin:    admin,
		topics:   cfg.Topics.All(),
		engine:   eng,
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
	if !r.engine.InGroup() {
		schedulerErr = fmt.Errorf("not yet a member of consumer group %s", r.engine.Group())
	}
	return []web.ReadyCheck{
		{Name: "kafka", Err: kafkaErr},
		{Name: "topics", Err: topicsErr},
		{Name: "recorder", Err: recorderErr},
		{Name: "scheduler", Err: schedulerErr},
		{Name: "folders", Err: r.folders.check()},
		{Name: "data_dir", Err: writable(r.dataDir)},
	}
}

// waitWritable returns once dir takes writes (see writable), or with ctx's
// error once ctx is done. On a full disk jobdrop so waits for space
// instead of exiting, which under a service manager would restart it in
// a loop; the wait is logged once (again should its cause change), and
// its end.
func waitWritable(ctx context.Context, dir string, log *slog.Logger) error {
	return retry.Do(ctx, retry.Policy{
		Backoff:      retry.Backoff{First: time.Second, Max: 10 * time.Second},
		Log:          log.With("data_dir", dir),
		Level:        slog.LevelError,
		QuietRepeats: true,
		Msg:          "cannot start: the data dir does not take writes; waiting until it does",
		Recovered:    "the data dir takes writes again; starting",
	}, func() error { return writable(dir) })
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
