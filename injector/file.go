package injector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/diff"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/record"
)

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
	if rej, batch := checkSize(f); rej != nil {
		return in.reject(ctx, f, batch, rej, rej.Error())
	}
	pace := in.pacer()
	pace.wait(ctx)
	// A file that does not sync is converted while it is hashed (see
	// stream); its rows are produced once its batch is known new.
	var rows *rowStream
	ready := make(chan struct{})
	if f.Sync == nil {
		rows = convertAsync(ctx, f, conv, opts, ready)
		defer rows.stop()
	}
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
		close(ready)
		b := batch
		res, err := in.stream(ctx, f, rows, &b)
		if !errors.Is(err, errTwoPasses) {
			return res, err
		}
		// Its rows follow tasks, or one is too large for small batches:
		// it is checked whole first, then injected.
	}
	return in.injectChecked(ctx, f, conv, opts, batch, pace)
}

// injectChecked injects f, a file not injected before, as batch, in two
// passes: its rows are all checked before anything is produced, then
// produced in one transaction. A file of a sync folder is injected so,
// since what it deletes, and whether it is held, depends on every row;
// and so is a file whose rows follow tasks (after), whose predecessors
// and cycles depend on every row, and whose link records go first in the
// transaction, before the commands: a predecessor created by the file is
// then watched from its first fire.
func (in *Injector) injectChecked(ctx context.Context, f File, conv converters.Converter, opts converters.Options, batch record.Batch, pace *pacer) (Result, error) {
	id := batch.ID
	var syncing *syncRows
	// ready returns once the store answers for every command committed
	// before the file.
	ready := func(ctx context.Context) error { return in.applied(ctx, "check the chains of "+f.Name) }
	var scope *scopeRead
	if f.Sync != nil {
		syncing = newSyncRows()
		sctx, cancel := context.WithCancel(ctx)
		defer func() {
			cancel()
			<-scope.done
		}()
		scope = in.readScope(sctx, f)
		ready = scope.ready
	}
	chains := NewChainCheck(f.Name)
	rows, rej, skip, largest := in.check(ctx, f, conv, opts, syncing, chains, pace)
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	if rej.Err == nil {
		if err := in.checkChains(ctx, f, chains, rej, skip, syncing, ready); err != nil {
			return Result{}, err
		}
	}
	batch.Rows, batch.Warnings = rej.Rows, rej.Warnings
	partial := f.Policy == PolicyGoodRows && rej.Err == nil && rej.Bad > 0 && rej.Bad < rej.Rows
	if (rej.Err != nil || rej.Bad > 0) && !partial {
		batch.Rejected = rej.Bad
		lines := rej.RowLines() // a cycle's first
		batch.Errors = lines[:min(len(lines), record.MaxBatchErrors)]
		return in.reject(ctx, f, batch, rej, firstLine(rej.Error()))
	}

	var plan *syncPlan
	var err error
	if syncing != nil {
		if plan, err = in.planSync(ctx, f, syncing, scope); err != nil {
			return Result{}, err
		}
		batch.Diff = &plan.diff
		switch {
		case len(plan.orphans) > 0:
			// Refused whatever it is held for, reviewed or not: the
			// followers would wait for ever.
			rej = plan.orphaned(f, rej)
			lines := rej.RowLines()
			batch.Errors = lines[:min(len(lines), record.MaxBatchErrors)]
			return in.reject(ctx, f, batch, rej, firstLine(rej.Error()))
		case plan.diff.Held != "":
			held := &HeldError{File: f.Name, Diff: plan.diff, Lines: plan.lines}
			if err := in.audit(ctx, f, record.ActionFileHeld, record.OutcomeNoChange, &batch, firstLine(held.Error())); err != nil {
				return Result{}, fmt.Errorf("record held %s: %w: %w", f.Name, ErrUnavailable, err)
			}
			return Result{Outcome: Held, Batch: batch}, held
		case rej.Rows == 0 && plan.diff.Scope == 0:
			rej.Err = fmt.Errorf("%s: %w: the file holds no task and its source none", f.Name, converters.ErrNoRows)
			batch.Errors = []string{rej.Error()}
			return in.reject(ctx, f, batch, rej, firstLine(rej.Error()))
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
	// A command's headers also hold the folder and the actor.
	if err := in.largeBatches(largest + len(src.Folder) + len(src.Actor)); err != nil {
		return Result{}, fmt.Errorf("inject %s: %w: %w", f.Name, ErrUnavailable, err)
	}
	var fillErr error // the file's own problem, found while producing
	links := 0
	err = in.transactFile(ctx, f, 1, func(produce func(*kgo.Record)) error {
		links = in.produceLinks(chains, produce)
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
	in.log.Info("file injected", "file", f.Name, "batch", id, "rows", batch.Rows, "rejected", batch.Rejected, "links", links)
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
		switch {
		case row != "":
			what = "row " + row + ": task " + string(re.Record.Key)
		case header(re.Record, record.HeaderLink) != "":
			what = "the link to predecessor " + string(re.Record.Key)
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
	return in.reject(ctx, f, batch, rej, lines[0])
}

// reject records f's rejection rej in the audit trail and returns it. A
// rejection the audit trail could not take is not the file's last word:
// the file is tried again later (ErrUnavailable), as one whose rows could
// not be written, and says the same then.
func (in *Injector) reject(ctx context.Context, f File, batch record.Batch, rej *RejectedError, detail string) (Result, error) {
	err := in.audit(ctx, f, record.ActionFileRejected, record.OutcomeRejected, &batch, detail)
	if err != nil && len(refusedLines(f.Name, err)) > 0 {
		// The brokers refuse the event itself (a topic's message size
		// set below it): trying again would not change that.
		in.log.Error("the brokers refuse the audit event of a rejected file; the rejection stands unrecorded", "file", f.Name, "err", err)
		err = nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("record the rejection of %s: %w: %w", f.Name, ErrUnavailable, err)
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
