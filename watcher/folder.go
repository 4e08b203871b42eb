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
	movedIn   map[string]struct{} // of those, the names renamed into the folder
	rescanNow bool                // events were lost
	lost      bool                // the folder itself was removed or renamed
	queue     []*entry            // stable files in arrival order
	queued    map[string]*entry   // queue plus the file being claimed
	wake      chan struct{}       // monitor: signals pending
	ready     chan struct{}       // worker: queue not empty

	// renames hears of files renamed into the folder; nil when polled.
	renames *moveWatch

	// Owned by the monitor.
	track   *tracker
	problem string // last problem logged; "" while the folder is fine
	// status is what the folder does now, for Watcher.Status.
	status folderStatus
	// observer, when the handler is one, and the names it was told of.
	observer Observer
	seen     map[string]struct{}
	// moves is the handler when it is a MoveObserver.
	moves MoveObserver
	// subfolders reported as not watched, while they are there.
	subfolders map[string]struct{}
	// nested names the subfolders that are watched folders themselves.
	nested map[string]bool
	// drain tells how fast the worker takes queued files.
	drain drainRate
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
		movedIn:       make(map[string]struct{}),
		queued:        make(map[string]*entry),
		wake:          make(chan struct{}, 1),
		ready:         make(chan struct{}, 1),
		track:         newTracker(cfg.StableChecks, cfg.CheckInterval),
		seen:          make(map[string]struct{}),
		subfolders:    make(map[string]struct{}),
		nested:        make(map[string]bool),
	}
	f.observer, _ = h.(Observer)
	f.moves, _ = h.(MoveObserver)
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
			stable, gone := f.track.check(f.clock.Now(), func(name string) (fs.FileInfo, error) {
				return os.Lstat(filepath.Join(f.dir, name))
			})
			f.gone(gone)
			f.enqueue(stable)
		case <-rescan.Chan():
			f.refresh(fsw)
		}
	}
}

// takeSignals applies the signals gathered since the last call and reports
// whether a rescan was asked for.
func (f *folder) takeSignals(fsw *fsnotify.Watcher) bool {
	f.mu.Lock()
	touched, movedIn, rescanNow, lost := f.touched, f.movedIn, f.rescanNow, f.lost
	f.touched, f.movedIn, f.rescanNow, f.lost = make(map[string]struct{}), make(map[string]struct{}), false, false
	var fresh, tracked []string
	for name := range touched {
		if f.ignored(name) {
			continue
		}
		if e := f.queued[name]; e != nil {
			e.dirty = true
			continue
		}
		f.track.touch(name)
		tracked = append(tracked, name)
		if _, ok := f.seen[name]; !ok {
			fresh = append(fresh, name)
		}
	}
	f.mu.Unlock()
	defer f.takeArrivals(tracked, movedIn)
	for _, name := range fresh {
		// An event may name a file already gone, or a folder: only a
		// regular file is announced. The tracker drops the others.
		fi, err := os.Lstat(filepath.Join(f.dir, name))
		switch {
		case err != nil:
		case fi.Mode().IsRegular():
			f.announce(name)
		case fi.IsDir():
			f.subfolder(name)
		}
	}
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
		f.status.problem(err.Error())
		return
	}
	var watchErr error
	if fsw != nil {
		// Adding a watched folder again is harmless, and needed after it
		// was replaced.
		watchErr = fsw.Add(f.dir)
		f.renames.add(f)
	}
	if err := f.scan(); err != nil {
		f.report(err)
		f.status.problem(err.Error())
		return
	}
	f.status.problem("")
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

// scan tracks the entries in the folder that are not tracked or queued
// yet, oldest first: regular files, and the entries the worker refuses
// (links, pipes, sockets, devices). Subfolders are reported, once.
func (f *folder) scan() error {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return err
	}
	type found struct {
		name    string
		mod     time.Time
		regular bool
	}
	var fresh []found
	subfolders := make(map[string]struct{})
	for _, e := range entries {
		name := e.Name()
		if f.ignored(name) {
			continue
		}
		if e.IsDir() {
			subfolders[name] = struct{}{}
			f.subfolder(name)
			continue
		}
		if f.track.has(name) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // gone since ReadDir
		}
		fresh = append(fresh, found{name, fi.ModTime(), fi.Mode().IsRegular()})
	}
	for name := range f.subfolders {
		if _, ok := subfolders[name]; !ok {
			delete(f.subfolders, name) // reported again should it come back
		}
	}
	slices.SortFunc(fresh, func(a, b found) int {
		return cmp.Or(a.mod.Compare(b.mod), strings.Compare(a.name, b.name))
	})
	f.mu.Lock()
	var announce []string
	for _, fr := range fresh {
		if f.queued[fr.name] == nil {
			f.track.touch(fr.name)
			if fr.regular {
				announce = append(announce, fr.name)
			}
		}
	}
	f.mu.Unlock()
	for _, name := range announce {
		f.announce(name)
	}
	f.takeArrivals(announce, nil)
	return nil
}

// takeArrivals queues at once the files among names that came whole, by
// a rename (movedIn) or a link into the folder: they have nothing to wait
// for.
func (f *folder) takeArrivals(names []string, movedIn map[string]struct{}) {
	if len(names) == 0 {
		return
	}
	f.enqueue(f.track.arrivals(names, movedIn, f.clock.Now(), func(name string) (fs.FileInfo, error) {
		return os.Lstat(filepath.Join(f.dir, name))
	}))
}

// subfolder reports a subfolder of the folder, once while it is there:
// files inside it are not taken. The folder's own subfolders and watched
// folders are not reported.
func (f *folder) subfolder(name string) {
	if _, ok := f.subfolders[name]; ok || name == ArchiveDir || name == FailedDir || name == HeldDir || f.nested[name] {
		return
	}
	f.subfolders[name] = struct{}{}
	err := &RefusedError{Name: name, Reason: typeProblem("", fs.ModeDir)}
	f.log.Warn("subfolder is not watched: files inside it are not taken", "file", name, "error", err)
	if f.observer != nil {
		f.observer.FileRefused(f.dir, name, err)
	}
}

// announce tells the observer of a file first seen, once until the file is
// handed over or gone. A file whose name is refused is not announced: it
// is refused as soon as it is stable.
func (f *folder) announce(name string) {
	if f.observer == nil || nameProblem(name) != "" {
		return
	}
	if _, ok := f.seen[name]; ok {
		return
	}
	f.seen[name] = struct{}{}
	f.observer.FileSeen(f.dir, name)
}

// gone tells the observer of seen files that left the folder untaken. A
// file another watcher of a shared folder took is in .processing/ now, and
// is not gone: that watcher reports it.
func (f *folder) gone(names []string) {
	for _, name := range names {
		if _, ok := f.seen[name]; !ok {
			continue
		}
		delete(f.seen, name)
		if _, err := os.Lstat(filepath.Join(f.processing, name)); err == nil {
			continue
		}
		f.observer.FileGone(f.dir, name)
	}
}

// enqueue hands stable files to the worker.
func (f *folder) enqueue(cands []candidate) {
	if len(cands) == 0 {
		return
	}
	f.mu.Lock()
	for _, c := range cands {
		delete(f.seen, c.name) // the handler hears of it next
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
		log.Info("shutting down: the refused entry is left in the folder", "error", refused)
	case gone:
		log.Debug("refused entry vanished before it was moved, probably by another watcher")
	default:
		log.Warn("entry refused", "error", refused, "failed_as", f.rel(to))
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
		log.Info("shutting down: file left in "+ProcessingDir+" for the next start", took, "error", err)
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
		log.Info("shutting down: file handled but left in "+ProcessingDir+" for the next start", took, "error", err)
		return
	}
	f.removeMarker(name, log)
	f.moved(file, to)
	switch {
	case held != nil:
		log.Warn("file held for review", took, "held_as", f.rel(to), "reason", brief(held.Err))
	case partial != nil:
		log.Warn("file handled in part", took, "archived_as", f.rel(to), "error", brief(partial.Err))
	case err == nil:
		log.Info("file archived", took, "archived_as", f.rel(to))
	default:
		attrs := []any{took, "error", brief(err), "failed_as", f.rel(to)}
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
