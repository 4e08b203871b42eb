package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/jonboulle/clockwork"
)

// Names of the subfolders every watched folder gets, and the suffix of error
// reports in failed/.
const (
	ProcessingDir = ".processing"
	ArchiveDir    = "archive"
	FailedDir     = "failed"
	ErrorsSuffix  = ".errors.txt"
	// HeldDir holds the files a Handler held for an operator's review
	// (HeldError), each beside NAME.held.txt (HeldSuffix) saying why.
	HeldDir    = "held"
	HeldSuffix = ".held.txt"
	// MarkerSuffix ends the name of the marker a sender writes after a
	// file, in folders with Folder.DoneMarker: jobs.csv.done for jobs.csv.
	MarkerSuffix = ".done"
)

// DefaultPollInterval is the time between two scans of a folder watched by
// polling only.
const DefaultPollInterval = 5 * time.Second

// File is a claimed file handed to a Handler.
type File struct {
	// Dir is the watched folder as configured, cleaned.
	Dir string
	// Name is the file's base name as dropped.
	Name string
	// Path is where the claimed file is now: Dir/.processing/Name.
	Path string
	// Recovered is set for a file found in .processing/ at start: the
	// last run stopped (or died) while handling it.
	Recovered bool

	// status and clock serve Progress.
	status *folderStatus
	clock  clockwork.Clock
	// held is the name in held/ of a file TakeHeld took.
	held string
}

// Progress is for the Handler to call whenever it makes headway with the
// file (a row read, a record written): a folder whose file makes none for
// a while is reported stalled (Watcher.Status). It is cheap and safe to
// call from any goroutine.
func (f File) Progress() {
	if f.status != nil {
		f.status.progress(f.clock.Now())
	}
}

// Handler processes claimed files. Files of one folder are handed over one
// at a time; files of different folders concurrently.
type Handler interface {
	// HandleFile processes the file at f.Path; it must not move or delete
	// it. A nil error moves the file to archive/; any other error moves it
	// to failed/ beside NAME.errors.txt holding the error's text (one line
	// per problem reads best) and is logged by the watcher, so HandleFile
	// need not log it. A panic counts as an error.
	//
	// A *PartialError moves the file to archive/ instead, beside
	// NAME.errors.txt holding its text: the file was handled, but some of
	// it was left out.
	//
	// A *HeldError moves the file to held/ instead, beside
	// NAME.held.txt holding its text: the file waits for an operator.
	//
	// A *RetryError says the file could not be handled for a reason
	// outside it (the brokers refuse writes, say): the file stays in
	// .processing/ and is handed over again after a wait that grows up
	// to Config.Rescan, until HandleFile returns anything else; the
	// folder's later files wait behind it.
	//
	// HandleFile must return soon after ctx is done. An error returned once
	// ctx is done leaves the file in .processing/, and the file is handed
	// over again at the next start: HandleFile must be idempotent.
	HandleFile(ctx context.Context, f File) error
}

// Observer is told of files before they are taken. A Handler that also
// implements it learns of each file the moment the watcher first sees it in
// its folder, long before the file is stable, of a file that went away
// before any watcher took it, and of entries the watcher refuses: what a
// console needs to show a file as received, or why it was not taken. Its
// methods are called from a folder's goroutines and must return at once.
type Observer interface {
	// FileSeen is called once per file found in the folder dir: the next
	// call for the same name comes after the file was handed over or
	// gone.
	FileSeen(dir, name string)
	// FileGone is called for a seen file that left the folder without
	// being taken by any watcher of the folder: it was deleted or renamed
	// away.
	FileGone(dir, name string)
	// FileRefused is called for an entry of the folder dir that is not
	// taken: a link, pipe, socket or device (moved to failed/ beside its
	// report), a file that cannot be read or whose name is refused (the
	// same), or a subfolder (left where it is, reported once while it is
	// there). Refused files are not announced by FileSeen first, unless
	// they turned out unreadable only when opened.
	FileRefused(dir, name string, err *RefusedError)
}

// MoveObserver is told where each handled file went. A Handler that also
// implements it learns the path a file was given in archive/ or failed/,
// which is not the dropped name when an earlier file holds that name there
// (jobs.20261122T101500Z.csv): what a console needs to serve the file of
// each drop. FileMoved is called after the move, from the goroutine that
// called HandleFile for the file, and must return soon.
type MoveObserver interface {
	// FileMoved says that the file f was moved to path, in f.Dir's
	// archive/ or failed/ subfolder. Its error report, if any, is
	// path + ErrorsSuffix.
	FileMoved(f File, path string)
}

// PartialError is what a Handler returns for a file it handled only in
// part, such as a job list whose valid rows were injected and whose invalid
// rows were left out: the file is archived, not failed, and
// NAME.errors.txt beside it in archive/ holds Err's text.
type PartialError struct {
	Err error
}

func (e *PartialError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *PartialError) Unwrap() error { return e.Err }

// HeldError is what a Handler returns for a file it will not handle
// without an operator's review: the file moves to held/ beside
// NAME.held.txt holding Err's text, and waits there until TakeHeld takes
// it for the operator's decision.
type HeldError struct {
	Err error
}

func (e *HeldError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *HeldError) Unwrap() error { return e.Err }

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, f File) error

// HandleFile calls fn(ctx, f).
func (fn HandlerFunc) HandleFile(ctx context.Context, f File) error { return fn(ctx, f) }

var _ Handler = HandlerFunc(nil)

// Folder is one watched folder.
type Folder struct {
	// Dir is the folder files are dropped into. Required. It and its
	// subfolders .processing, archive and failed are created by New when
	// missing.
	Dir string
	// Poll watches the folder by scanning it every PollInterval only, with
	// no file system events: for network shares (NFS, SMB) whose events
	// never arrive. Defaults to false: events, plus a scan every
	// Config.Rescan.
	Poll bool
	// PollInterval is the time between two scans of a Poll folder.
	// Defaults to DefaultPollInterval; ignored unless Poll is set.
	PollInterval time.Duration
	// MinAge is how old a file must be (by its modification time) before
	// it is taken, on top of being stable: for senders that pause longer
	// than the stability checks can see. Defaults to 0: stable is enough.
	MinAge time.Duration
	// DoneMarker takes a file NAME only once a marker file NAME.done
	// (MarkerSuffix) exists beside it, for senders that write the marker
	// after the file. Markers are never input themselves; a file's marker
	// is removed once the file is archived or failed. Defaults to false.
	DoneMarker bool
}

// Config configures a Watcher. Zero values take the documented defaults.
type Config struct {
	// Folders are the folders to watch. At least one is required; no two
	// may be the same folder, and none may lie inside another one's
	// .processing, archive or failed subfolder.
	Folders []Folder
	// StableChecks is how many checks in a row, CheckInterval apart, must
	// find a file's size and modification time unchanged before the file is
	// taken; the first check only records them. A file is therefore seen
	// unchanged for at least StableChecks×CheckInterval before it is taken
	// (a writer that pauses for less cannot have its file taken half
	// written), and any event on it starts the count again. Defaults to 2.
	StableChecks int
	// CheckInterval is the time between two checks. Defaults to 500ms.
	CheckInterval time.Duration
	// Rescan is the time between full scans of every folder, which catch
	// files whose events were missed and retry folders that could not be
	// watched. It is also the longest wait between two attempts at a file
	// that could not be handled or moved for a reason outside it (see
	// RetryError); the first wait is a second. Defaults to 30s.
	Rescan time.Duration
	// Clock drives the checks and rescans and stamps renamed files.
	// Defaults to the real clock.
	Clock clockwork.Clock
}

// Watcher watches folders and hands each stable file to a Handler. Build one
// with New and run it with Run.
type Watcher struct {
	cfg     Config
	folders []*folder
	byDir   map[string]*folder
	log     *slog.Logger
	running atomic.Bool
}

// New validates cfg, applies its defaults, and creates the folders and their
// subfolders where missing. A nil log discards log records.
func New(cfg Config, h Handler, log *slog.Logger) (*Watcher, error) {
	if h == nil {
		return nil, errors.New("watcher: nil handler")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "watcher")
	if cfg.StableChecks == 0 {
		cfg.StableChecks = 2
	}
	if cfg.CheckInterval == 0 {
		cfg.CheckInterval = 500 * time.Millisecond
	}
	if cfg.Rescan == 0 {
		cfg.Rescan = 30 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	switch {
	case cfg.StableChecks < 0:
		return nil, fmt.Errorf("watcher: stable checks %d: must be positive", cfg.StableChecks)
	case cfg.CheckInterval < 0:
		return nil, fmt.Errorf("watcher: check interval %s: must be positive", cfg.CheckInterval)
	case cfg.Rescan < 0:
		return nil, fmt.Errorf("watcher: rescan %s: must be positive", cfg.Rescan)
	case len(cfg.Folders) == 0:
		return nil, errors.New("watcher: no folders to watch")
	}

	abs := make([]string, len(cfg.Folders))
	for i := range cfg.Folders {
		fc := &cfg.Folders[i]
		if strings.TrimSpace(fc.Dir) == "" {
			return nil, fmt.Errorf("watcher: folder %d: empty dir", i+1)
		}
		if fc.PollInterval == 0 {
			fc.PollInterval = DefaultPollInterval
		}
		switch {
		case fc.PollInterval < 0:
			return nil, fmt.Errorf("watcher: folder %s: poll interval %s: must be positive", fc.Dir, fc.PollInterval)
		case fc.MinAge < 0:
			return nil, fmt.Errorf("watcher: folder %s: min age %s: must not be negative", fc.Dir, fc.MinAge)
		}
		a, err := filepath.Abs(fc.Dir)
		if err != nil {
			return nil, fmt.Errorf("watcher: folder %s: %w", fc.Dir, err)
		}
		abs[i] = a
	}
	for i, a := range abs {
		for j, b := range abs {
			if i == j {
				continue
			}
			if a == b {
				return nil, fmt.Errorf("watcher: folder %s: listed twice", cfg.Folders[j].Dir)
			}
			for _, sub := range []string{ProcessingDir, ArchiveDir, FailedDir, HeldDir} {
				s := filepath.Join(a, sub)
				if b == s || strings.HasPrefix(b, s+string(filepath.Separator)) {
					return nil, fmt.Errorf("watcher: folder %s: inside the %s folder of %s", cfg.Folders[j].Dir, sub, cfg.Folders[i].Dir)
				}
			}
		}
	}

	w := &Watcher{cfg: cfg, byDir: make(map[string]*folder), log: log}
	for i, fc := range cfg.Folders {
		dir := filepath.Clean(fc.Dir)
		if err := createLayout(dir); err != nil {
			return nil, fmt.Errorf("watcher: folder %s: %w", dir, err)
		}
		f := newFolder(dir, fc, h, log.With("dir", dir), cfg)
		for _, b := range abs {
			if filepath.Dir(b) == abs[i] {
				f.nested[filepath.Base(b)] = true // watched itself: not reported
			}
		}
		w.folders = append(w.folders, f)
		w.byDir[dir] = f
	}
	return w, nil
}

// createLayout creates dir and its subfolders where missing.
func createLayout(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return ensureSubfolders(dir)
}

// ensureSubfolders creates the subfolders of dir where missing, but not dir
// itself: a folder that vanished (an unmounted share, say) must not be
// replaced by an empty one.
func ensureSubfolders(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	for _, sub := range []string{ProcessingDir, ArchiveDir, FailedDir, HeldDir} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// Run watches the folders and handles their files until ctx is done, then
// waits for the handlers running at that moment to return, and returns nil.
// Folders proceed independently: each has its own queue, handled one file at
// a time in the order the files arrived, after the files a previous run left
// in .processing/. Run may be called once.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("watcher: already run")
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		w.log.Error("cannot receive folder events; new files are found by rescans only",
			"rescan", w.cfg.Rescan, "err", err)
		fsw = nil
	}

	var wg sync.WaitGroup
	if fsw != nil {
		wg.Go(func() { w.dispatch(ctx, fsw) })
		if renames := newMoveWatch(); renames != nil {
			for _, f := range w.folders {
				if !f.poll {
					f.renames = renames
				}
			}
			wg.Go(func() { renames.run(ctx) })
		}
	}
	for _, f := range w.folders {
		if f.poll {
			// Never added to fsw, so dispatch never sees its events.
			wg.Go(func() { f.monitor(ctx, nil) })
			wg.Go(func() { f.work(ctx) })
			continue
		}
		wg.Go(func() { f.monitor(ctx, fsw) })
		wg.Go(func() { f.work(ctx) })
	}
	wg.Wait()
	if fsw != nil {
		if err := fsw.Close(); err != nil {
			w.log.Warn("close folder events", "err", err)
		}
	}
	return nil
}

// dispatch routes events to the folders without ever waiting on one.
func (w *Watcher) dispatch(ctx context.Context, fsw *fsnotify.Watcher) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fsw.Events:
			if !ok {
				return
			}
			if f := w.byDir[ev.Name]; f != nil && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				f.signal(func() { f.lost = true })
			}
			if f := w.byDir[filepath.Dir(ev.Name)]; f != nil {
				name := filepath.Base(ev.Name)
				f.signal(func() { f.touched[name] = struct{}{} })
			}
		case err, ok := <-fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.log.Warn("folder events overflowed; rescanning all folders")
			} else {
				w.log.Warn("folder events failed; rescanning all folders", "err", err)
			}
			for _, f := range w.folders {
				f.signal(func() { f.rescanNow = true })
			}
		}
	}
}
