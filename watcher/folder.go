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
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/jonboulle/clockwork"
)

// folder is one watched folder: a monitor goroutine that finds files and
// decides when they are stable, and a worker goroutine that claims and
// handles them one at a time.
type folder struct {
	dir, processing, archive, failed string

	handler       Handler
	log           *slog.Logger
	clock         clockwork.Clock
	checkInterval time.Duration
	rescan        time.Duration // or the poll interval of a poll folder
	poll          bool
	doneMarker    bool

	// Guarded by mu: signals for the monitor, and the queue for the worker.
	mu        sync.Mutex
	touched   map[string]struct{} // names with events since the monitor last looked
	rescanNow bool                // events were lost
	lost      bool                // the folder itself was removed or renamed
	queue     []*entry            // stable files in arrival order
	queued    map[string]*entry   // queue plus the file being claimed
	wake      chan struct{}       // monitor: signals pending
	ready     chan struct{}       // worker: queue not empty

	// Owned by the monitor.
	track   *tracker
	problem string // last problem logged; "" while the folder is fine
}

// entry is a stable file waiting to be claimed.
type entry struct {
	candidate
	dirty bool // an event came after it was found stable; guarded by mu
}

func newFolder(dir string, fc Folder, h Handler, log *slog.Logger, cfg Config) *folder {
	rescan := cfg.Rescan
	if fc.Poll {
		rescan = fc.PollInterval
	}
	f := &folder{
		dir:           dir,
		processing:    filepath.Join(dir, ProcessingDir),
		archive:       filepath.Join(dir, ArchiveDir),
		failed:        filepath.Join(dir, FailedDir),
		handler:       h,
		log:           log,
		clock:         cfg.Clock,
		checkInterval: cfg.CheckInterval,
		rescan:        rescan,
		poll:          fc.Poll,
		doneMarker:    fc.DoneMarker,
		touched:       make(map[string]struct{}),
		queued:        make(map[string]*entry),
		wake:          make(chan struct{}, 1),
		ready:         make(chan struct{}, 1),
		track:         newTracker(cfg.StableChecks, cfg.CheckInterval),
	}
	f.track.minAge = fc.MinAge
	if fc.DoneMarker {
		f.track.ready = func(name string) bool {
			_, err := os.Lstat(filepath.Join(dir, name+MarkerSuffix))
			return err == nil
		}
	}
	return f
}

// ignored reports whether name is never input in this folder: the names
// every folder ignores, and markers in a DoneMarker folder.
func (f *folder) ignored(name string) bool {
	return ignored(name) || (f.doneMarker && len(name) > len(MarkerSuffix) &&
		strings.EqualFold(name[len(name)-len(MarkerSuffix):], MarkerSuffix))
}

// removeMarker removes the marker of a handled file in a DoneMarker folder.
func (f *folder) removeMarker(name string, log *slog.Logger) {
	if !f.doneMarker {
		return
	}
	if err := os.Remove(filepath.Join(f.dir, name+MarkerSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("cannot remove the file's marker", "error", err)
	}
}

// signal applies set under the lock and wakes the monitor; it never blocks.
func (f *folder) signal(set func()) {
	f.mu.Lock()
	set()
	f.mu.Unlock()
	notify(f.wake)
}

// notify wakes whoever waits on c without blocking.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// monitor finds files in the folder and queues them once stable, until ctx
// is done.
func (f *folder) monitor(ctx context.Context, fsw *fsnotify.Watcher) {
	if f.poll {
		f.log.Info("watching folder by polling", "poll_interval", f.rescan)
	} else {
		f.log.Info("watching folder")
	}
	f.refresh(fsw)
	check := f.clock.NewTicker(f.checkInterval)
	defer check.Stop()
	rescan := f.clock.NewTicker(f.rescan)
	defer rescan.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
			if rescanNow := f.takeSignals(fsw); rescanNow {
				f.refresh(fsw)
			}
		case <-check.Chan():
			f.enqueue(f.track.check(f.clock.Now(), func(name string) (fs.FileInfo, error) {
				return os.Lstat(filepath.Join(f.dir, name))
			}))
		case <-rescan.Chan():
			f.refresh(fsw)
		}
	}
}

// takeSignals applies the signals gathered since the last call and reports
// whether a rescan was asked for.
func (f *folder) takeSignals(fsw *fsnotify.Watcher) bool {
	f.mu.Lock()
	touched, rescanNow, lost := f.touched, f.rescanNow, f.lost
	f.touched, f.rescanNow, f.lost = make(map[string]struct{}), false, false
	for name := range touched {
		if f.ignored(name) {
			continue
		}
		if e := f.queued[name]; e != nil {
			e.dirty = true
			continue
		}
		f.track.touch(name)
	}
	f.mu.Unlock()
	if lost {
		if fsw != nil {
			_ = fsw.Remove(f.dir) // usually gone already with the folder
		}
		f.report(errors.New("folder was removed or renamed"))
	}
	return rescanNow
}

// refresh makes sure the folder is watched and scans it; problems are logged
// once and retried at the next rescan.
func (f *folder) refresh(fsw *fsnotify.Watcher) {
	if err := ensureSubfolders(f.dir); err != nil {
		f.report(err)
		return
	}
	var watchErr error
	if fsw != nil {
		// Adding a watched folder again is harmless, and needed after it
		// was replaced.
		watchErr = fsw.Add(f.dir)
	}
	if err := f.scan(); err != nil {
		f.report(err)
		return
	}
	if watchErr != nil {
		f.report(fmt.Errorf("no events, found by rescans only: %w", watchErr))
		return
	}
	if f.problem != "" {
		f.problem = ""
		f.log.Info("folder is watched again")
	}
}

// report logs a folder problem, once while it stays the same.
func (f *folder) report(err error) {
	if msg := err.Error(); msg != f.problem {
		f.problem = msg
		f.log.Error("cannot watch folder; retrying at each rescan", "rescan", f.rescan, "error", err)
	}
}

// scan tracks the regular files in the folder that are not tracked or
// queued yet, oldest first.
func (f *folder) scan() error {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return err
	}
	type found struct {
		name string
		mod  time.Time
	}
	var fresh []found
	for _, e := range entries {
		name := e.Name()
		if f.ignored(name) || !e.Type().IsRegular() || f.track.has(name) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // gone since ReadDir
		}
		fresh = append(fresh, found{name, fi.ModTime()})
	}
	slices.SortFunc(fresh, func(a, b found) int {
		return cmp.Or(a.mod.Compare(b.mod), strings.Compare(a.name, b.name))
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fr := range fresh {
		if f.queued[fr.name] == nil {
			f.track.touch(fr.name)
		}
	}
	return nil
}

// enqueue hands stable files to the worker.
func (f *folder) enqueue(cands []candidate) {
	if len(cands) == 0 {
		return
	}
	f.mu.Lock()
	for _, c := range cands {
		e := &entry{candidate: c}
		f.queue = append(f.queue, e)
		f.queued[c.name] = e
	}
	f.mu.Unlock()
	notify(f.ready)
}

// work handles the files a previous run left in .processing, then the
// queue, until ctx is done.
func (f *folder) work(ctx context.Context) {
	f.recoverLeftovers(ctx)
	for {
		e := f.next(ctx)
		if e == nil {
			return
		}
		lock, ok := f.claim(e)
		if ok {
			f.handle(ctx, e.name, lock, false)
		}
	}
}

// next waits for the next queued file; nil once ctx is done.
func (f *folder) next(ctx context.Context) *entry {
	for {
		if ctx.Err() != nil {
			return nil
		}
		f.mu.Lock()
		if len(f.queue) > 0 {
			e := f.queue[0]
			f.queue[0] = nil
			f.queue = f.queue[1:]
			f.mu.Unlock()
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
// handed back to the monitor.
func (f *folder) claim(e *entry) (*os.File, bool) {
	src := filepath.Join(f.dir, e.name)
	dst := filepath.Join(f.processing, e.name)
	log := f.log.With("file", e.name)

	lock, outcome := f.lockStable(src, e)
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
			log.Error("cannot claim file; retrying at the next rescan", "error", err)
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
)

// lockStable opens and locks the file at src and checks it is still the
// file found stable. Files that cannot be opened (no read permission, say)
// are claimed unlocked so the handler reports the problem in failed/.
func (f *folder) lockStable(src string, e *entry) (*os.File, claimOutcome) {
	f.mu.Lock()
	dirty := e.dirty
	f.mu.Unlock()
	if dirty {
		return nil, claimChanged
	}
	lock, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, claimGone
	}
	if err != nil {
		lock = nil
	} else {
		locked, err := tryLock(lock)
		if err == nil && !locked {
			_ = lock.Close()
			return nil, claimBusy
		}
	}
	cur, err := os.Lstat(src)
	if err != nil {
		return lock, claimGone
	}
	if lock != nil {
		// The lock may have been won only after another watcher handled
		// the file and a new one took its name.
		if held, err := lock.Stat(); err != nil || !os.SameFile(held, cur) {
			return lock, claimChanged
		}
	}
	if !cur.Mode().IsRegular() || cur.Size() != e.size || !cur.ModTime().Equal(e.mod) {
		return lock, claimChanged
	}
	return lock, claimOK
}

// recoverLeftovers handles the files a previous run left in .processing,
// oldest first, except those another watcher is handling right now.
func (f *folder) recoverLeftovers(ctx context.Context) {
	entries, err := os.ReadDir(f.processing)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) { // the monitor reports a missing folder
			f.log.Error("cannot recover files from "+ProcessingDir, "error", err)
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
		lock, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // another watcher finished it
		}
		if err != nil {
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

// handle hands a claimed file to the handler and moves it by the outcome,
// then releases lock.
func (f *folder) handle(ctx context.Context, name string, lock *os.File, recovered bool) {
	if lock != nil {
		defer lock.Close()
	}
	file := File{Dir: f.dir, Name: name, Path: filepath.Join(f.processing, name)}
	log := f.log.With("file", name)
	if recovered {
		log = log.With("recovered", true)
	}
	start := f.clock.Now()
	err := f.call(ctx, file)
	took := slog.Int64("duration_ms", f.clock.Since(start).Milliseconds())

	var partial *PartialError
	switch {
	case errors.As(err, &partial):
		// Handled, so archived even during shutdown: handling it again
		// would find it done and lose the report.
		report := strings.TrimRight(partial.Error(), "\n") + "\n"
		to, merr := moveFailed(file.Path, f.archive, name, report, f.clock.Now())
		if merr != nil {
			log.Error("file handled in part but not archived; it stays in "+ProcessingDir, took, "error", err, "move_error", merr)
			return
		}
		f.removeMarker(name, log)
		log.Warn("file handled in part", took, "archived_as", f.rel(to), "error", partial.Err)
	case err != nil && ctx.Err() != nil:
		log.Info("shutting down: file left in "+ProcessingDir+" for the next start", took, "error", err)
	case err == nil:
		to, merr := moveNoClobber(file.Path, f.archive, name, f.clock.Now())
		if merr != nil {
			log.Error("file handled but not archived; it stays in "+ProcessingDir, took, "error", merr)
			return
		}
		f.removeMarker(name, log)
		log.Info("file archived", took, "archived_as", f.rel(to))
	default:
		report := strings.TrimRight(err.Error(), "\n") + "\n"
		to, merr := moveFailed(file.Path, f.failed, name, report, f.clock.Now())
		attrs := []any{took, "error", err}
		var pe *panicError
		if errors.As(err, &pe) {
			attrs = append(attrs, "stack", pe.stack)
		}
		if merr != nil {
			log.Error("file failed and cannot be moved to "+FailedDir+"; it stays in "+ProcessingDir,
				append(attrs, "move_error", merr)...)
			return
		}
		f.removeMarker(name, log)
		log.Warn("file failed", append(attrs, "failed_as", f.rel(to))...)
	}
}

// rel is path relative to the folder, for logs.
func (f *folder) rel(path string) string {
	if r, err := filepath.Rel(f.dir, path); err == nil {
		return r
	}
	return path
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
