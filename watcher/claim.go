package watcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// work handles the files a previous run left in .processing, then the
// queue, until ctx is done.
func (f *folder) work(ctx context.Context) {
	f.recoverLeftovers(ctx)
	f.drain.started(f.clock.Now())
	for {
		e := f.next(ctx)
		if e == nil {
			return
		}
		lock, ok := f.claim(ctx, e)
		if ok {
			f.handle(ctx, e.name, lock, false)
		}
		f.drain.took(f.clock.Now())
	}
}

// next waits for the next queued file; nil once ctx is done.
func (f *folder) next(ctx context.Context) *entry {
	for waited := false; ; waited = true {
		if ctx.Err() != nil {
			return nil
		}
		f.mu.Lock()
		if len(f.queue) > 0 {
			e := f.queue[0]
			f.queue[0] = nil
			f.queue = f.queue[1:]
			f.mu.Unlock()
			if waited {
				f.drain.started(f.clock.Now())
			}
			return e
		}
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-f.ready:
		}
	}
}

// claim moves a queued file into .processing. It returns the open, locked
// file (nil where locking is impossible) and whether the file was claimed.
// A file that vanished (another watcher claimed it) or is locked by another
// watcher is skipped quietly; one that changed since it was found stable is
// handed back to the monitor; an entry that is refused is moved to failed/
// unopened.
func (f *folder) claim(ctx context.Context, e *entry) (*os.File, bool) {
	src := filepath.Join(f.dir, e.name)
	dst := filepath.Join(f.processing, e.name)
	log := f.log.With("file", e.name)

	lock, outcome, refused := f.lockStable(src, e)
	if outcome == claimOK {
		err := renameNoReplace(src, dst)
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrNotExist):
			outcome = claimGone
		case errors.Is(err, fs.ErrExist):
			outcome = claimFailed
			log.Warn("cannot claim file: a file of the same name is in " + ProcessingDir + "; retrying at the next rescan")
		default:
			outcome = claimFailed
			log.Error("cannot claim file; retrying at the next rescan", "err", err)
		}
	}
	if outcome != claimOK && lock != nil {
		_ = lock.Close()
		lock = nil
	}

	f.mu.Lock()
	if f.queued[e.name] == e {
		delete(f.queued, e.name)
	}
	f.mu.Unlock()
	switch outcome {
	case claimOK:
		return lock, true
	case claimChanged:
		f.signal(func() { f.touched[e.name] = struct{}{} })
	case claimGone:
		log.Debug("file vanished before it was claimed, probably by another watcher")
	case claimBusy:
		log.Debug("file is being claimed by another watcher")
	case claimRefused:
		f.refuse(ctx, refused, log)
	}
	return nil, false
}

// claimOutcome is why a claim went as it did.
type claimOutcome int

const (
	claimOK      claimOutcome = iota
	claimGone                 // no longer there
	claimBusy                 // locked by another watcher
	claimChanged              // changed since found stable
	claimFailed               // logged already
	claimRefused              // not taken: see the RefusedError
)

// lockStable checks the entry at src, then opens and locks it and checks
// it is still the file found stable. It is the one place that decides
// what is taken: an entry that is not a regular file, whose name is
// refused or that cannot be read is refused, without ever being opened
// unless it is a regular file (and opening never waits: see
// openRegular).
func (f *folder) lockStable(src string, e *entry) (*os.File, claimOutcome, *RefusedError) {
	f.mu.Lock()
	dirty := e.dirty
	f.mu.Unlock()
	cur, err := os.Lstat(src)
	if err != nil {
		return nil, claimGone, nil
	}
	if cur.Mode().Type() != e.mode {
		return nil, claimChanged, nil
	}
	// An event after the file was found stable means a change only if the
	// file shows one: the event of its own arrival may come late (a
	// rename is heard from inotify and from fsnotify).
	if dirty && (cur.Size() != e.size || !cur.ModTime().Equal(e.mod)) {
		return nil, claimChanged, nil
	}
	if reason := cmp.Or(typeProblem(src, cur.Mode()), nameProblem(e.name)); reason != "" {
		return nil, claimRefused, &RefusedError{Name: e.name, Reason: reason}
	}
	lock, err := openRegular(src)
	switch {
	case err == nil:
		locked, err := tryLock(lock)
		if err == nil && !locked {
			_ = lock.Close()
			return nil, claimBusy, nil
		}
	case errors.Is(err, fs.ErrNotExist):
		return nil, claimGone, nil
	case errors.Is(err, fs.ErrPermission):
		why := err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			why = pe.Err // the path is the folder's business, not the report's
		}
		return nil, claimRefused, &RefusedError{Name: e.name, Reason: fmt.Sprintf(
			"cannot be read (%v); let the user jobdrop runs as read it, then drop it again", why)}
	default:
		if now, err := os.Lstat(src); err != nil || !now.Mode().IsRegular() {
			return nil, claimChanged, nil // replaced by a link or a pipe since
		}
		lock = nil // claimed unlocked: the handler reports what is wrong
	}
	cur, err = os.Lstat(src)
	if err != nil {
		return lock, claimGone, nil
	}
	if lock != nil && !sameFile(lock, cur) {
		// The lock may have been won only after another watcher handled
		// the file and a new one took its name.
		return lock, claimChanged, nil
	}
	if !cur.Mode().IsRegular() || cur.Size() != e.size || !cur.ModTime().Equal(e.mod) {
		return lock, claimChanged, nil
	}
	return lock, claimOK, nil
}

// refuse moves a refused entry from the folder to failed/, beside a report
// saying why, and tells the observer. The entry is never opened. Should
// the move fail (a full disk), it is tried again until it works.
func (f *folder) refuse(ctx context.Context, refused *RefusedError, log *slog.Logger) {
	src := filepath.Join(f.dir, refused.Name)
	report := refused.Error() + "\n"
	var to string
	gone := false
	moved := f.retry(ctx, log, "move the refused entry to "+FailedDir+"/", func() error {
		var err error
		to, err = moveFailed(src, f.failed, refused.Name, report, f.clock.Now())
		if err != nil {
			if _, lerr := os.Lstat(src); errors.Is(lerr, fs.ErrNotExist) {
				gone = true
				return nil
			}
		}
		return err
	})
	switch {
	case !moved:
		log.Info("shutting down: the refused entry is left in the folder", "err", refused)
	case gone:
		log.Debug("refused entry vanished before it was moved, probably by another watcher")
	default:
		log.Warn("entry refused", "err", refused, "failed_as", f.rel(to))
		if f.observer != nil {
			f.observer.FileRefused(f.dir, refused.Name, refused)
		}
	}
}

// recoverLeftovers handles the files a previous run left in .processing,
// oldest first, except those another watcher is handling right now.
func (f *folder) recoverLeftovers(ctx context.Context) {
	entries, err := os.ReadDir(f.processing)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) { // the monitor reports a missing folder
			f.log.Error("cannot recover files from "+ProcessingDir, "err", err)
		}
		return
	}
	type left struct {
		name string
		mod  time.Time
	}
	var files []left
	for _, e := range entries {
		if f.ignored(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil {
			files = append(files, left{e.Name(), fi.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b left) int {
		return cmp.Or(a.mod.Compare(b.mod), strings.Compare(a.name, b.name))
	})
	for _, l := range files {
		if ctx.Err() != nil {
			return
		}
		path := filepath.Join(f.processing, l.name)
		lock, err := openRegular(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // another watcher finished it
		}
		if err != nil {
			if cur, err := os.Lstat(path); err != nil || !cur.Mode().IsRegular() {
				continue // not ours: the watcher never claims anything else
			}
			lock = nil
		} else if locked, err := tryLock(lock); err == nil && !locked {
			_ = lock.Close()
			continue // another watcher is handling it
		} else if cur, err := os.Lstat(path); err != nil || !sameFile(lock, cur) {
			_ = lock.Close()
			continue // another watcher finished it while we locked
		}
		f.handle(ctx, l.name, lock, true)
	}
}

// sameFile reports whether the open file f is the one cur describes.
func sameFile(f *os.File, cur fs.FileInfo) bool {
	held, err := f.Stat()
	return err == nil && os.SameFile(held, cur)
}
