package watcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

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
		f.log.Error("cannot watch folder; retrying at each rescan", "rescan", f.rescan, "err", err)
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
	f.log.Warn("subfolder is not watched: files inside it are not taken", "file", name, "err", err)
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
