package watcher

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

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
		log.Warn("cannot remove the file's marker", "err", err)
	}
}

// rel is path relative to the folder, for logs.
func (f *folder) rel(path string) string {
	if r, err := filepath.Rel(f.dir, path); err == nil {
		return r
	}
	return path
}
