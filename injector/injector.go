package injector

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/diff"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// Config configures an Injector.
type Config struct {
	// ClientOpts reach the brokers.
	ClientOpts []kgo.Opt
	// TransactionalID identifies this injector's producer. It must be stable
	// across restarts of one instance and differ between instances.
	// Required.
	TransactionalID string
	// Topics names jobdrop's topics.
	Topics record.Topics
	// Actor is who the audit trail says injected files. Defaults to
	// "watcher".
	Actor string
	// MaxErrors bounds the row errors kept for a rejected file's report.
	// Defaults to 1000.
	MaxErrors int
	// Now is the clock of audit timestamps. Defaults to time.Now.
	Now func() time.Time
	// Sources answers the files of sync folders (File.Sync) with the
	// tasks that run now. Without it such files are refused.
	Sources Sources
	// OnFile, if set, is told what became of every file Inject handled,
	// except those interrupted by ctx (they are handled again at the next
	// start) and those failed with ErrUnavailable (they are handled
	// again once Kafka takes them). It runs on Inject's goroutine and
	// must be quick.
	OnFile func(FileDone)
	// Pacing makes files wait while the scheduler fires late, as Late
	// says. Without Late files never wait.
	Pacing Pacing
	// Late says how late the scheduler fires now
	// (scheduler.Engine.Lateness).
	Late func() time.Duration
	// OnPaced, if set, is told of every wait Pacing imposed, however
	// short. It runs on Inject's goroutine and must be quick.
	OnPaced func(time.Duration)
}

// FileDone is what became of one file, for Config.OnFile.
type FileDone struct {
	// Outcome is Injected, Partial, Duplicate, Rejected (invalid
	// content), or Failed (any other error but ErrUnavailable, such as
	// a file that cannot be read).
	Outcome Outcome
	// Rows counts the data rows read; Rejected the invalid ones.
	Rows, Rejected int
	// Took is the time from Inject's call, right after the watcher
	// claimed the file, to the commit of its transaction, by the real
	// clock; zero when nothing was committed.
	Took time.Duration
}

// ErrUnavailable marks the error of a file that could not be injected for
// a reason outside it: the brokers did not take its transaction (they are
// unreachable, or refuse writes while their disk is full), or the batches
// injected before could not be looked up. Nothing of the file was
// injected; injecting it again later may succeed.
var ErrUnavailable = errors.New("kafka or the batch store is unavailable")

// errClosed is the error of a transaction asked of a closed Injector.
var errClosed = errors.New("injector closed")

// Batches answers whether a batch id was already injected.
type Batches interface {
	BatchInjected(ctx context.Context, id string) (bool, error)
}

// Injector injects files. It is safe for concurrent use; files are injected
// one at a time, since one transactional producer serves them all.
type Injector struct {
	cfg     Config
	batches Batches
	log     *slog.Logger

	mu       sync.Mutex // owns cl: one transaction at a time
	cl       *kgo.Client
	injected map[string]bool // batch ids committed by this process

	// notices is a plain producer for arrival events, which must not wait
	// behind a large file's transaction.
	notices *kgo.Client
	// progress is the Progress of the file being injected, told of each
	// record the brokers acknowledge.
	progress progressHook
	// clock times the waits of Pacing.
	clock clockwork.Clock
}

// progressHook passes the brokers' acknowledgements of the transactional
// producer's records on to the file being injected.
type progressHook struct{ fn atomic.Pointer[func()] }

var _ kgo.HookProduceRecordUnbuffered = (*progressHook)(nil)

// OnProduceRecordUnbuffered implements kgo.HookProduceRecordUnbuffered.
func (h *progressHook) OnProduceRecordUnbuffered(_ *kgo.Record, err error) {
	if fn := h.fn.Load(); fn != nil && err == nil {
		(*fn)()
	}
}

// follow makes the acknowledgements of the records from now on progress
// of f, until the returned function is called.
func (h *progressHook) follow(f File) (stop func()) {
	if f.Progress == nil {
		return func() {}
	}
	h.fn.Store(&f.Progress)
	return func() { h.fn.Store(nil) }
}

var _ Batches = (*Injector)(nil)

// New connects a transactional producer.
func New(cfg Config, batches Batches, log *slog.Logger) (*Injector, error) {
	if cfg.TransactionalID == "" {
		return nil, errors.New("injector: TransactionalID is required")
	}
	cfg.Topics = cfg.Topics.WithDefaults()
	if cfg.Actor == "" {
		cfg.Actor = "watcher"
	}
	if cfg.MaxErrors == 0 {
		cfg.MaxErrors = 1000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.Pacing.Validate(); err != nil {
		return nil, fmt.Errorf("injector: Pacing.%w", err)
	}
	cfg.Pacing = cfg.Pacing.withDefaults()
	in := &Injector{cfg: cfg, log: log.With("component", "injector"), injected: map[string]bool{},
		clock: clockwork.NewRealClock()}
	opts := append([]kgo.Opt{
		kgo.WithHooks(&in.progress),
		kgo.TransactionalID(cfg.TransactionalID),
		// A large file may take minutes to produce.
		kgo.TransactionTimeout(5 * time.Minute),
		kgo.ProducerBatchMaxBytes(kafka.MaxBatchBytes),
		kgo.MaxBufferedRecords(20_000),
	}, cfg.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("injector: %w", err)
	}
	notices, err := kgo.NewClient(append([]kgo.Opt{kgo.ProducerLinger(0)}, cfg.ClientOpts...)...)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("injector: %w", err)
	}
	in.batches, in.cl, in.notices = batches, cl, notices
	return in, nil
}

// Close releases the producers. It is safe to call more than once.
func (in *Injector) Close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cl != nil {
		in.cl.Close()
		in.notices.Close()
		in.cl = nil
	}
}

// Arrive records an event of the arrival arr, as handled by actor:
// received, converting, failed or withdrawn (action), with its outcome
// and detail, at the injector's clock. It is produced outside any
// transaction, so it is not held up by a file being injected; done, when
// not nil, is called with the outcome once the brokers have it. Events of
// one arrival keep their order, and come before the file's batch event as
// long as each was done before the file was injected.
func (in *Injector) Arrive(ctx context.Context, actor, action, outcome, detail string, arr record.Arrival, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	a := record.NewAudit(in.cfg.Now(), actor, action, arr.File, outcome)
	a.Detail, a.Arrival = detail, &arr
	in.notices.Produce(ctx, in.encodeAudit(a), func(_ *kgo.Record, err error) { done(err) })
}

// Moved records that the file of batch b, as handled by actor, was moved
// to path in its folder's archive/ or failed/: the console serves each
// drop's own file and report from there, whatever name an earlier file
// took. It is produced like Arrive, outside any transaction; done, when
// not nil, is called with the outcome once the brokers have it.
func (in *Injector) Moved(ctx context.Context, actor string, b record.Batch, path string, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	a := record.NewAudit(in.cfg.Now(), actor, record.ActionFileMoved, path, record.OutcomeOK)
	a.Detail = b.File + " moved to " + path
	// The batch, not the arrival, names the file: the arrival may be a new
	// file of the same name already.
	a.Batch = &record.Batch{ID: b.ID, File: b.File, Folder: b.Folder}
	in.notices.Produce(ctx, in.encodeAudit(a), func(_ *kgo.Record, err error) { done(err) })
}

// File is one file to inject.
type File struct {
	// Path is where the file is read from.
	Path string
	// Name is the name the file was dropped as; reports use it.
	Name string
	// Folder is the watched folder it came from, if any.
	Folder string
	// Policy says what becomes of a file with invalid rows. Defaults to
	// PolicyReject.
	Policy Policy
	// MaxBytes bounds the file's size: a larger file is rejected before it
	// is read. Defaults to DefaultMaxBytes; negative means no limit.
	MaxBytes int64
	// Arrival is the record.ArrivalID of a file from a watched folder,
	// carried on its batch.
	Arrival string
	// Progress, if set, is called whenever the injection makes headway:
	// a row converted, a record acknowledged by the brokers.
	Progress func()
	// Sync, when set, makes the file the whole truth of its source (see
	// Sync); nil injects its rows as they are.
	Sync *Sync
	// Actor is who the audit trail says injected the file. Defaults to
	// Config.Actor.
	Actor string
}

// DefaultMaxBytes is the size limit of a file when File.MaxBytes is 0.
const DefaultMaxBytes = 1 << 30

// Policy says what becomes of a file with invalid rows.
type Policy string

// The policies.
const (
	// PolicyReject rejects a file with any invalid row whole: nothing of it
	// is injected.
	PolicyReject Policy = "reject"
	// PolicyGoodRows injects the valid rows of a file in one transaction
	// and leaves the invalid ones out, reporting them in Result.Report. A
	// file with no valid row, or with a problem as a whole (unreadable,
	// wrong format, too large), is still rejected whole.
	PolicyGoodRows Policy = "good-rows"
)

// Valid reports whether p is a known policy or empty (the default).
func (p Policy) Valid() bool { return p == "" || p == PolicyReject || p == PolicyGoodRows }

// Outcome says what became of a file.
type Outcome string

// The outcomes of Inject.
const (
	Injected  Outcome = "injected"
	Duplicate Outcome = "duplicate"
	Rejected  Outcome = "rejected"
	// Partial is a file whose valid rows were injected and whose invalid
	// ones were left out, under PolicyGoodRows.
	Partial Outcome = "partial"
	// Held is a file of a sync folder that would delete too much of its
	// source: nothing was injected; it waits for an operator.
	Held Outcome = "held"
	// Failed is reported to Config.OnFile, never returned by Inject: the
	// file could not be injected for a reason other than its content.
	Failed Outcome = "failed"
)

// Result describes an injected, duplicate, rejected or partly injected file.
type Result struct {
	Outcome Outcome
	// Batch is the file's batch record; Batch.Rows counts the data rows
	// read and Batch.Rejected those left out.
	Batch record.Batch
	// Report lists the rows left out of a Partial file.
	Report *RejectedError
}

// RejectedError is returned for a file with invalid rows; its message is the
// error report, one line per problem.
type RejectedError struct {
	File string
	// Warnings are the first warnings of valid rows: they reach the
	// file's batch whatever becomes of it.
	Warnings []string
	Rows     int // data rows read
	Bad      int // rows rejected
	// Problems counts what was wrong: a row may have several problems.
	Problems int
	Errors   []string // the first MaxErrors problems
	Err      error    // a problem with the file as a whole, if any
	// Partial is set when the other rows were injected (PolicyGoodRows).
	Partial bool
}

// fail records one problem, keeping the first max lines of them.
func (e *RejectedError) fail(line string, max int) {
	e.Problems++
	if len(e.Errors) < max {
		e.Errors = append(e.Errors, line)
	}
}

// read counts row r of file f: the row, its first warnings, its progress
// and, when it is invalid, each of its problems. It reports whether r is
// invalid.
func (e *RejectedError) read(r *converters.Row, f File, max int) (invalid bool) {
	e.Rows++
	for _, w := range r.Warnings {
		if len(e.Warnings) < record.MaxBatchErrors {
			e.Warnings = append(e.Warnings, w)
		}
	}
	if f.Progress != nil {
		f.Progress()
	}
	if r.Err == nil {
		return false
	}
	errs := converters.RowErrors(r.Err)
	for _, re := range errs {
		e.fail(re.Error(), max)
	}
	if len(errs) == 0 {
		e.fail(r.Err.Error(), max)
	}
	return true
}

// RowLines lists the problems: the file's own, then one per bad row.
func (e *RejectedError) RowLines() []string {
	var out []string
	if e.Err != nil {
		if lines := converters.RowErrors(e.Err); len(lines) > 0 {
			for _, l := range lines {
				out = append(out, l.Error())
			}
		} else {
			out = append(out, e.Err.Error())
		}
	}
	return append(out, e.Errors...)
}

func (e *RejectedError) Error() string {
	var b strings.Builder
	if e.Err != nil {
		if lines := converters.RowErrors(e.Err); len(lines) > 0 {
			for _, l := range lines {
				fmt.Fprintf(&b, "%s\n", l)
			}
		} else if msg := e.Err.Error(); strings.HasPrefix(msg, e.File+":") {
			fmt.Fprintf(&b, "%s\n", msg) // it names the file already
		} else {
			fmt.Fprintf(&b, "%s: %s\n", e.File, msg)
		}
	}
	switch {
	case e.Bad > 0 && e.Partial:
		fmt.Fprintf(&b, "%s: %d of %d rows rejected; the other %d were injected\n", e.File, e.Bad, e.Rows, e.Rows-e.Bad)
	case e.Bad > 0:
		fmt.Fprintf(&b, "%s: %d of %d rows rejected; nothing was injected\n", e.File, e.Bad, e.Rows)
	}
	for _, line := range e.Errors {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if e.Problems > len(e.Errors) {
		fmt.Fprintf(&b, "… and %d more problems\n", e.Problems-len(e.Errors))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// BatchInjected reports whether this process committed the batch, or the
// store of earlier injections says it was.
func (in *Injector) BatchInjected(ctx context.Context, id string) (bool, error) {
	in.mu.Lock()
	done := in.injected[id]
	in.mu.Unlock()
	if done || in.batches == nil {
		return done, nil
	}
	return in.batches.BatchInjected(ctx, id)
}

// Inject converts f with conv and commits all its commands in one
// transaction, or none of them: a file with any invalid row is rejected
// whole with a *RejectedError, unless f.Policy is PolicyGoodRows, which
// injects the valid rows and returns the others in Result.Report with a
// nil error. A file over f.MaxBytes is rejected unread. Content injected
// before is recorded as a duplicate and injects nothing.
func (in *Injector) Inject(ctx context.Context, f File, conv converters.Converter, opts converters.Options) (Result, error) {
	start := time.Now()
	res, err := in.inject(ctx, f, conv, opts)
	if in.cfg.OnFile != nil && ctx.Err() == nil && !errors.Is(err, ErrUnavailable) {
		in.cfg.OnFile(fileDone(res, err, time.Since(start)))
	}
	return res, err
}

// fileDone says what became of a file from what Inject returned.
func fileDone(res Result, err error, took time.Duration) FileDone {
	d := FileDone{Outcome: res.Outcome, Rows: res.Batch.Rows, Rejected: res.Batch.Rejected}
	var rej *RejectedError
	switch {
	case errors.As(err, &rej):
		d.Outcome = Rejected
	case err != nil:
		d.Outcome = Failed
	}
	if err == nil && (d.Outcome == Injected || d.Outcome == Partial) {
		d.Took = took
	}
	return d
}

func (in *Injector) inject(ctx context.Context, f File, conv converters.Converter, opts converters.Options) (Result, error) {
	if f.Name == "" {
		f.Name = filepath.Base(f.Path)
	}
	if !f.Policy.Valid() {
		return Result{}, fmt.Errorf("inject %s: unknown policy %q (want %s or %s)", f.Name, f.Policy, PolicyReject, PolicyGoodRows)
	}
	if err := in.checkSize(ctx, f); err != nil {
		return Result{Outcome: Rejected, Batch: err.batch}, err.rej
	}
	pace := in.pacer()
	pace.wait(ctx)
	id, size, err := hashFile(f.Path)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", f.Name, err)
	}
	batch := record.Batch{ID: id, File: f.Name, Folder: f.Folder, Size: size, Arrival: f.Arrival}
	seen, err := in.BatchInjected(ctx, id)
	if err != nil {
		return Result{}, fmt.Errorf("check batch %s: %w: %w", f.Name, ErrUnavailable, err)
	}
	if seen {
		err := in.audit(ctx, f, record.ActionFileDuplicate, record.OutcomeNoChange, &batch,
			"same content as a file injected before; nothing injected")
		if err != nil {
			return Result{}, fmt.Errorf("record duplicate %s: %w: %w", f.Name, ErrUnavailable, err)
		}
		return Result{Outcome: Duplicate, Batch: batch}, nil
	}

	if f.Sync == nil {
		return in.stream(ctx, f, conv, opts, &batch)
	}

	// A file of a sync folder is checked whole before anything is
	// produced: what it deletes, and whether it is held, depends on every
	// row.
	syncing := newSyncRows()
	sctx, cancel := context.WithCancel(ctx)
	var scope *scopeRead
	defer func() {
		cancel()
		<-scope.done
	}()
	scope = in.readScope(sctx, f)
	rows, rej, skip := in.check(ctx, f, conv, opts, syncing, pace)
	batch.Rows, batch.Warnings = rej.Rows, rej.Warnings
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	partial := f.Policy == PolicyGoodRows && rej.Err == nil && rej.Bad > 0 && rej.Bad < rej.Rows
	if (rej.Err != nil || rej.Bad > 0) && !partial {
		batch.Rejected = rej.Bad
		batch.Errors = rej.Errors[:min(len(rej.Errors), record.MaxBatchErrors)]
		if err := in.audit(ctx, f, record.ActionFileRejected, record.OutcomeRejected, &batch, firstLine(rej.Error())); err != nil {
			in.log.Error("audit rejected file", "file", f.Name, "err", err)
		}
		return Result{Outcome: Rejected, Batch: batch}, rej
	}

	var plan *syncPlan
	if syncing != nil {
		if plan, err = in.planSync(ctx, f, syncing, scope); err != nil {
			return Result{}, err
		}
		batch.Diff = &plan.diff
		switch {
		case plan.diff.Held != "":
			held := &HeldError{File: f.Name, Diff: plan.diff, Lines: plan.lines}
			if err := in.audit(ctx, f, record.ActionFileHeld, record.OutcomeNoChange, &batch, firstLine(held.Error())); err != nil {
				return Result{}, fmt.Errorf("record held %s: %w: %w", f.Name, ErrUnavailable, err)
			}
			return Result{Outcome: Held, Batch: batch}, held
		case rej.Rows == 0 && plan.diff.Scope == 0:
			rej.Err = fmt.Errorf("%s: %w: the file holds no task and its source none", f.Name, converters.ErrNoRows)
			batch.Errors = []string{rej.Error()}
			if err := in.audit(ctx, f, record.ActionFileRejected, record.OutcomeRejected, &batch, firstLine(rej.Error())); err != nil {
				in.log.Error("audit rejected file", "file", f.Name, "err", err)
			}
			return Result{Outcome: Rejected, Batch: batch}, rej
		}
	}

	outcome, detail := Injected, fmt.Sprintf("%d tasks injected", batch.Rows)
	if plan != nil {
		d := plan.diff
		detail = fmt.Sprintf("sync of %d rows: %d added, %d changed, %d removed, %d unchanged", batch.Rows, d.Added, d.Changed, d.Removed, d.Unchanged)
		if f.Sync.Reviewed {
			detail = "applied after review: " + detail
		}
	}
	if partial {
		rej.Partial = true
		batch.Rejected = rej.Bad
		batch.Errors = rej.Errors[:min(len(rej.Errors), record.MaxBatchErrors)]
		outcome = Partial
		detail = fmt.Sprintf("%d of %d rows injected, %d rejected (policy %s); the rejected rows are listed in %s.errors.txt beside the archived file",
			rej.Rows-rej.Bad, rej.Rows, rej.Bad, PolicyGoodRows, f.Name)
	}
	src := record.Source{Batch: id, File: f.Name, Folder: f.Folder, Actor: in.actor(f)}
	var fillErr error // the file's own problem, found while producing
	err = in.transactFile(ctx, f, func(produce func(*kgo.Record)) error {
		emit := func(r converters.Row) error {
			if _, bad := skip[r.Line]; bad && partial {
				return nil
			}
			if r.Err != nil {
				return fmt.Errorf("file changed while injected: %w", r.Err)
			}
			d := &r.Def
			if plan != nil {
				if d = plan.plan.Command(r.Def); d == nil {
					return nil // unchanged: sent again, it would change nothing
				}
			}
			produce(in.command(d, src, r.Line))
			return nil
		}
		if rows != nil {
			for _, r := range rows {
				_ = emit(r)
			}
		} else if err := conv.Convert(ctx, f.Path, opts, emit); err != nil && !(plan != nil && errors.Is(err, converters.ErrNoRows)) {
			fillErr = err
			return err
		}
		if plan != nil {
			for _, key := range plan.removals {
				d := diff.Delete(key)
				produce(in.command(&d, src, 0))
			}
		}
		produce(in.auditRecord(f, record.ActionFileInjected, record.OutcomeOK, &batch, detail))
		return nil
	})
	if err != nil {
		if refused := refusedLines(f.Name, err); len(refused) > 0 && ctx.Err() == nil {
			// The brokers refuse some of the file's records whenever they
			// are sent: the file's fault, not the cluster's.
			return in.refused(ctx, f, batch, rej.Rows, refused)
		}
		if fillErr == nil && ctx.Err() == nil && !errors.Is(err, errClosed) {
			return Result{}, fmt.Errorf("inject %s: %w: %w", f.Name, ErrUnavailable, err)
		}
		return Result{}, fmt.Errorf("inject %s: %w", f.Name, err)
	}
	in.mu.Lock()
	in.injected[id] = true
	in.mu.Unlock()
	in.log.Info("file injected", "file", f.Name, "batch", id, "rows", batch.Rows, "rejected", batch.Rejected)
	res := Result{Outcome: outcome, Batch: batch}
	if partial {
		res.Report = rej
	}
	return res, nil
}

// refusedLines names each of the file's records that the brokers refused
// for a fault of its own (kafka.RecordFault), one line each: the row, the
// task and the brokers' answer. A refusal about one of jobdrop's own
// topics (deleted, not writable) is the cluster's fault, not the file's,
// and so is every refusal when none is the records' own.
func refusedLines(file string, err error) []string {
	var lines []string
	for _, re := range kafka.RecordErrors(err) {
		if !kafka.RecordFault(re.Err) || kafka.TopicFault(re.Err) {
			continue
		}
		row := header(re.Record, record.HeaderRow)
		what := "the file's audit record"
		if row != "" {
			what = "row " + row + ": task " + string(re.Record.Key)
		}
		lines = append(lines, fmt.Sprintf("%s: %s: the brokers refused its record (%d bytes) on topic %s: %v",
			file, what, recordSize(re.Record), re.Record.Topic, re.Err))
	}
	return lines
}

// refused rejects a file some of whose records the brokers refused:
// nothing of it was injected, and its report names each refused row.
func (in *Injector) refused(ctx context.Context, f File, batch record.Batch, rows int, lines []string) (Result, error) {
	rej := &RejectedError{File: f.Name, Rows: rows, Bad: len(lines), Problems: len(lines), Errors: lines,
		Err: errors.New("the brokers refused part of the file; nothing was injected")}
	batch.Rejected = rej.Bad
	batch.Errors = lines[:min(len(lines), record.MaxBatchErrors)]
	if err := in.audit(ctx, f, record.ActionFileRejected, record.OutcomeRejected, &batch, lines[0]); err != nil {
		in.log.Error("audit rejected file", "file", f.Name, "err", err)
	}
	return Result{Outcome: Rejected, Batch: batch}, rej
}

// header is the value of a record's header, or "".
func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// recordSize is the size of a record's key, value and headers, which the
// brokers' limits count.
func recordSize(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// sizeError is a file rejected for its size, with its batch record.
type sizeError struct {
	rej   *RejectedError
	batch record.Batch
}

// checkSize rejects a file over its size limit, recording the rejection.
func (in *Injector) checkSize(ctx context.Context, f File) *sizeError {
	limit := f.MaxBytes
	if limit == 0 {
		limit = DefaultMaxBytes
	}
	fi, err := os.Stat(f.Path)
	if limit < 0 || err != nil || fi.Size() <= limit {
		return nil // an unreadable file is reported when it is read
	}
	// Not hashed: reading a huge file whole is what the limit avoids. The
	// rejection is audited without a batch id.
	batch := record.Batch{File: f.Name, Folder: f.Folder, Size: fi.Size(), Arrival: f.Arrival}
	rej := &RejectedError{File: f.Name, Err: fmt.Errorf("file is %s (%d bytes), over the size limit of %s (max_file_bytes: %d); nothing was read or injected",
		humanBytes(fi.Size()), fi.Size(), humanBytes(limit), limit)}
	batch.Errors = []string{rej.Error()}
	if err := in.audit(ctx, f, record.ActionFileRejected, record.OutcomeRejected, &batch, rej.Error()); err != nil {
		in.log.Error("audit rejected file", "file", f.Name, "err", err)
	}
	return &sizeError{rej: rej, batch: batch}
}

// humanBytes formats n bytes in binary units, as "1.5 GiB".
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// bufferRows bounds how many converted rows check keeps (files of sync
// folders), so a small file is
// read once and a large one is converted again while producing instead of
// held in memory.
const bufferRows = 20_000

// check converts the whole file without producing anything, collecting
// every problem: invalid rows and task keys repeated within the file. It
// returns the valid rows when there were few enough to keep, and the lines
// of the invalid ones.
// A file being injected waits as pace says; nil: it never waits.
func (in *Injector) check(ctx context.Context, f File, conv converters.Converter, opts converters.Options, sync *syncRows, pace *pacer) ([]converters.Row, *RejectedError, map[int]struct{}) {
	rej := &RejectedError{File: f.Name}
	var rows []converters.Row
	skip := map[int]struct{}{}
	keep := true
	rowCheck := NewRowCheck(f.Name, in.cfg.Topics).WithLimit(in.recordLimit(ctx))
	fail := func(line string) { rej.fail(line, in.cfg.MaxErrors) }
	err := conv.Convert(ctx, f.Path, opts, func(r converters.Row) error {
		pace.row(ctx)
		if rej.read(&r, f, in.cfg.MaxErrors) {
			skip[r.Line] = struct{}{}
			if sync != nil {
				sync.add(r, false)
			}
			return nil
		}
		if err := rowCheck.Check(r); err != nil {
			fail(err.Error())
			skip[r.Line] = struct{}{}
			if sync != nil {
				sync.add(r, false)
			}
			return nil
		}
		if sync != nil {
			sync.add(r, true)
		}
		if keep && len(rows) < bufferRows {
			rows = append(rows, r)
		} else {
			keep, rows = false, nil
		}
		return ctx.Err()
	})
	rej.Bad = len(skip)
	if err != nil && !(sync != nil && errors.Is(err, converters.ErrNoRows)) {
		// A sync file may hold no task: it would empty its source,
		// which is held for review.
		rej.Err = err
	} else if rej.Rows == 0 && sync == nil {
		rej.Err = errors.New("no rows: the file holds no job")
	}
	if !keep {
		rows = nil
	}
	return rows, rej, skip
}

// recordLimit is the largest record the brokers take on the input and
// state topics, asked at each file so that a changed setting is seen: a
// row over it is a row error, before anything is produced. When the
// brokers cannot be asked, the producers' own limit stands, and the
// brokers' answer to the records themselves decides.
func (in *Injector) recordLimit(ctx context.Context) kafka.RecordLimit {
	limit, err := kafka.RecordLimitOf(ctx, kadm.NewClient(in.notices), in.cfg.Topics.Input, in.cfg.Topics.State)
	if err != nil {
		in.log.Debug("cannot read the brokers' record limit; using the producers' own", "limit", limit.Bytes, "err", err)
	}
	return limit
}

// Send injects commands that did not come from a file (the REST API and the
// console) in one transaction, with an audit event per command.
func (in *Injector) Send(ctx context.Context, actor string, defs ...task.Definition) error {
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		for i := range defs {
			produce(in.command(&defs[i], record.Source{Actor: actor}, 0))
		}
		return nil
	})
}

// ReportStatus writes a worker's report on an execution to the status
// topic, with its audit event, in one transaction.
func (in *Injector) ReportStatus(ctx context.Context, actor string, s record.Status) error {
	v, _ := json.Marshal(s)
	a := record.NewAudit(in.cfg.Now(), actor, "execution."+strings.ToLower(s.Status), s.FireID, record.OutcomeOK)
	a.Detail = s.Message
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(&kgo.Record{Topic: in.cfg.Topics.Status, Key: []byte(s.FireID), Value: v})
		produce(in.encodeAudit(a))
		return nil
	})
}

// AppendLogs writes a worker's log lines on an execution to the status
// topic. They are not audited: a log is the worker's, not an action on
// jobdrop.
func (in *Injector) AppendLogs(ctx context.Context, s record.Status) error {
	v, _ := json.Marshal(s)
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(&kgo.Record{Topic: in.cfg.Topics.Status, Key: []byte(s.FireID), Value: v})
		return nil
	})
}

// Trigger sends a TRIGGER command for the task host/name and returns the
// fire id the engine gives the fire it asks for (see
// record.TriggerFireID): it follows from where the command was written.
func (in *Injector) Trigger(ctx context.Context, actor, host, name string) (string, error) {
	d := task.Definition{Host: host, Name: name, Action: task.Trigger}
	rec := in.command(&d, record.Source{Actor: actor}, 0)
	if err := in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(rec)
		return nil
	}); err != nil {
		return "", err
	}
	return record.TriggerFireID(host, name, rec.Partition, rec.Offset), nil
}

// Reap writes the FAILED status of an execution left with no final
// status, with its audit event, in one transaction.
func (in *Injector) Reap(ctx context.Context, s record.Status, a record.Audit) error {
	v, _ := json.Marshal(s)
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(&kgo.Record{Topic: in.cfg.Topics.Status, Key: []byte(s.FireID), Value: v})
		produce(in.encodeAudit(a))
		return nil
	})
}

// Audit writes one audit event on its own.
func (in *Injector) Audit(ctx context.Context, a record.Audit) error {
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(in.encodeAudit(a))
		return nil
	})
}

func (in *Injector) audit(ctx context.Context, f File, action, outcome string, b *record.Batch, detail string) error {
	return in.transact(ctx, func(produce func(*kgo.Record)) error {
		produce(in.auditRecord(f, action, outcome, b, detail))
		return nil
	})
}

// actor is who the audit trail says handled f.
func (in *Injector) actor(f File) string { return cmp.Or(f.Actor, in.cfg.Actor) }

func (in *Injector) auditRecord(f File, action, outcome string, b *record.Batch, detail string) *kgo.Record {
	a := record.NewAudit(in.cfg.Now(), in.actor(f), action, b.File, outcome)
	a.Detail, a.Batch = detail, b
	return in.encodeAudit(a)
}

func (in *Injector) encodeAudit(a record.Audit) *kgo.Record {
	v, _ := json.Marshal(a)
	// Events of one file share a key, so they are read in order.
	key := a.Actor
	switch {
	case a.Arrival != nil:
		key = a.Arrival.ID
	case a.Batch != nil && a.Batch.Arrival != "":
		key = a.Batch.Arrival
	case a.Batch != nil && a.Batch.ID != "":
		key = a.Batch.ID
	}
	return &kgo.Record{Topic: in.cfg.Topics.Audit, Key: []byte(key), Value: v}
}

func (in *Injector) command(d *task.Definition, src record.Source, row int) *kgo.Record {
	v, _ := json.Marshal(d)
	h := []kgo.RecordHeader{{Key: record.HeaderActor, Value: []byte(src.Actor)}}
	if src.Batch != "" {
		h = append(h,
			kgo.RecordHeader{Key: record.HeaderBatch, Value: []byte(src.Batch)},
			kgo.RecordHeader{Key: record.HeaderFile, Value: []byte(src.File)},
			kgo.RecordHeader{Key: record.HeaderFolder, Value: []byte(src.Folder)},
			kgo.RecordHeader{Key: record.HeaderRow, Value: []byte(strconv.Itoa(row))})
	}
	// The command's timestamp is when it was submitted: a task with no
	// start counts from it.
	return &kgo.Record{Topic: in.cfg.Topics.Input, Key: []byte(d.Key()), Value: v, Headers: h, Timestamp: in.cfg.Now()}
}

// transact runs fill inside one transaction and commits it, or aborts it
// when fill or any produce fails.
func (in *Injector) transact(ctx context.Context, fill func(produce func(*kgo.Record)) error) error {
	return in.transactFile(ctx, File{}, fill)
}

// transactFile is transact for the records of file f: each the brokers
// acknowledge is progress of f.
func (in *Injector) transactFile(ctx context.Context, f File, fill func(produce func(*kgo.Record)) error) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cl == nil {
		return errClosed
	}
	defer in.progress.follow(f)()
	return kafka.Transact(ctx, in.cl, fill, nil)
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
