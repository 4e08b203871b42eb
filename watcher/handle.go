package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
)

// handle hands a claimed file to the handler and moves it by the outcome,
// then releases lock. A file the handler asks to retry, or one that cannot
// be moved (a full disk), stays in .processing and is tried again until it
// works, and the folder's later files wait behind it.
func (f *folder) handle(ctx context.Context, name string, lock *os.File, recovered bool) {
	if lock != nil {
		defer lock.Close()
	}
	file := File{Dir: f.dir, Name: name, Path: filepath.Join(f.processing, name), Recovered: recovered,
		status: &f.status, clock: f.clock}
	log := f.log.With("file", name)
	if recovered {
		log = log.With("recovered", true)
	}
	start := f.clock.Now()
	f.status.handling(name, start)
	defer f.status.handling("", time.Time{})
	var err error
	kept := log.With("kept_in", ProcessingDir)
	handled := f.retry(ctx, kept, "handle the file", func() error {
		err = f.call(ctx, file)
		var retry *RetryError
		if errors.As(err, &retry) && ctx.Err() == nil {
			return err
		}
		return nil
	})
	took := slog.Int64("duration_ms", f.clock.Since(start).Milliseconds())
	var partial *PartialError
	var held *HeldError
	if !handled || err != nil && ctx.Err() != nil && !errors.As(err, &partial) && !errors.As(err, &held) {
		log.Info("shutting down: file left in "+ProcessingDir+" for the next start", took, "err", err)
		return
	}

	var move func() (string, error)
	sub := FailedDir
	switch {
	case errors.As(err, &held):
		sub = HeldDir
		report := strings.TrimRight(held.Error(), "\n") + "\n"
		move = func() (string, error) {
			return moveWithReport(file.Path, filepath.Join(f.dir, HeldDir), name, HeldSuffix, report, f.clock.Now())
		}
	case errors.As(err, &partial):
		// Handled, so archived even during shutdown: handling it again
		// would find it done and lose the report.
		sub = ArchiveDir
		report := strings.TrimRight(partial.Error(), "\n") + "\n"
		move = func() (string, error) { return moveFailed(file.Path, f.archive, name, report, f.clock.Now()) }
	case err == nil:
		sub = ArchiveDir
		move = func() (string, error) { return moveNoClobber(file.Path, f.archive, name, f.clock.Now()) }
	default:
		report := strings.TrimRight(err.Error(), "\n") + "\n"
		move = func() (string, error) { return moveFailed(file.Path, f.failed, name, report, f.clock.Now()) }
	}
	var to string
	moved := f.retry(ctx, kept, "move the file to "+sub+"/", func() error {
		var merr error
		to, merr = move()
		return merr
	})
	if !moved {
		log.Info("shutting down: file handled but left in "+ProcessingDir+" for the next start", took, "err", err)
		return
	}
	f.removeMarker(name, log)
	f.moved(file, to)
	switch {
	case held != nil:
		log.Warn("file held for review", took, "held_as", f.rel(to), "reason", brief(held.Err))
	case partial != nil:
		log.Warn("file handled in part", took, "archived_as", f.rel(to), "err", brief(partial.Err))
	case err == nil:
		log.Info("file archived", took, "archived_as", f.rel(to))
	default:
		attrs := []any{took, "err", brief(err), "failed_as", f.rel(to)}
		var pe *panicError
		if errors.As(err, &pe) {
			attrs = append(attrs, "stack", pe.stack)
		}
		log.Warn("file failed", attrs...)
	}
}

// briefLines is how many lines of a file's error report the log repeats.
const briefLines = 5

// brief is err's report cut to its first lines for the log: a file with
// thousands of bad rows would otherwise make one line of megabytes. The
// whole report is beside the file.
func brief(err error) string {
	text := strings.TrimRight(err.Error(), "\n")
	lines := strings.SplitN(text, "\n", briefLines+1)
	if len(lines) <= briefLines {
		return text
	}
	rest := strings.Count(lines[briefLines], "\n") + 1
	return strings.Join(lines[:briefLines], "\n") + fmt.Sprintf("\n… %d more lines in the report beside the file", rest)
}

// moved tells the handler, when it asked, where file went.
func (f *folder) moved(file File, to string) {
	if f.moves != nil {
		f.moves.FileMoved(file, to)
	}
}

// call runs the handler, turning a panic into an error.
func (f *folder) call(ctx context.Context, file File) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: string(debug.Stack())}
		}
	}()
	return f.handler.HandleFile(ctx, file)
}

// panicError is a handler panic.
type panicError struct {
	value any
	stack string
}

func (e *panicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.value) }
