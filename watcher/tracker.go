package watcher

import (
	"cmp"
	"io/fs"
	"slices"
	"time"
)

// tracker decides when the files of one folder have stopped changing. It is
// driven by its owner: touch on every event or newly found file, check once
// per CheckInterval. It does no I/O of its own and is not safe for
// concurrent use.
type tracker struct {
	need int // unchanged checks required
	// quiet is how long a file must have been seen unchanged: need
	// intervals. Counting checks alone is not enough, as a late tick can
	// be followed closely by the next one.
	quiet time.Duration
	seq   uint64
	files map[string]*tracked
	// minAge is how old a stable file's modification time must be.
	minAge time.Duration
	// ready, when set, must also hold for a stable file to be taken;
	// until it does, the file stays tracked.
	ready func(name string) bool
}

// tracked is what a tracker knows about one file.
type tracked struct {
	seq      uint64 // arrival order
	observed bool   // size, mod and since hold a baseline
	size     int64
	mod      time.Time
	since    time.Time // when the baseline was observed
	same     int       // checks in a row that found the baseline unchanged
}

// candidate is a file that has stopped changing, or an entry that is not
// a regular file and so has nothing to wait for.
type candidate struct {
	name string
	mode fs.FileMode // type bits only
	size int64
	mod  time.Time
	seq  uint64
}

func newTracker(need int, interval time.Duration) *tracker {
	return &tracker{need: need, quiet: time.Duration(need) * interval, files: make(map[string]*tracked)}
}

// has reports whether name is being tracked.
func (t *tracker) has(name string) bool {
	_, ok := t.files[name]
	return ok
}

// touch starts tracking name, or restarts its count if it is tracked: the
// next check takes a fresh baseline. A name keeps the arrival order of its
// first touch.
func (t *tracker) touch(name string) {
	if s, ok := t.files[name]; ok {
		s.observed, s.same = false, 0
		return
	}
	t.seq++
	t.files[name] = &tracked{seq: t.seq}
}

// arrivals returns, in arrival order, the tracked files among names that
// came whole (renamed into the folder, as movedIn says, or as arrivedWhole
// sees) and need no stability checks, with their age and readiness still
// required; those are no longer tracked. The others are left to check.
func (t *tracker) arrivals(names []string, movedIn map[string]struct{}, now time.Time, stat func(name string) (fs.FileInfo, error)) (out []candidate) {
	for _, name := range names {
		s, ok := t.files[name]
		if !ok || s.observed {
			continue
		}
		fi, err := stat(name)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if _, moved := movedIn[name]; !moved && !arrivedWhole(fi) || t.minAge > 0 && now.Sub(fi.ModTime()) < t.minAge || (t.ready != nil && !t.ready(name)) {
			continue
		}
		out = append(out, candidate{name: name, size: fi.Size(), mod: fi.ModTime(), seq: s.seq})
		delete(t.files, name)
	}
	slices.SortFunc(out, func(a, b candidate) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// check observes every tracked file with stat at time now and returns, in
// arrival order, the files whose size and modification time were unchanged
// on need checks in a row after their baseline, and for need intervals;
// those are no longer tracked. Entries that are neither regular files nor
// folders (links, pipes, sockets, devices) are returned at once: they are
// refused, and there is nothing to wait for. Names that are gone or are
// folders now are dropped, and returned as gone.
func (t *tracker) check(now time.Time, stat func(name string) (fs.FileInfo, error)) (out []candidate, gone []string) {
	for name, s := range t.files {
		fi, err := stat(name)
		if err != nil || fi.Mode().IsDir() {
			delete(t.files, name)
			gone = append(gone, name)
			continue
		}
		if !fi.Mode().IsRegular() {
			out = append(out, candidate{name: name, mode: fi.Mode().Type(), seq: s.seq})
			delete(t.files, name)
			continue
		}
		if s.observed && fi.Size() == s.size && fi.ModTime().Equal(s.mod) {
			s.same++
		} else {
			s.observed, s.size, s.mod, s.since, s.same = true, fi.Size(), fi.ModTime(), now, 0
		}
		if s.same >= t.need && now.Sub(s.since) >= t.quiet && now.Sub(s.mod) >= t.minAge &&
			(t.ready == nil || t.ready(name)) {
			out = append(out, candidate{name: name, size: s.size, mod: s.mod, seq: s.seq})
			delete(t.files, name)
		}
	}
	slices.SortFunc(out, func(a, b candidate) int { return cmp.Compare(a.seq, b.seq) })
	return out, gone
}
