package watcher

import (
	"sync"
	"sync/atomic"
	"time"
)

// FolderStatus is what a watched folder is doing at one moment: what a
// node's readiness, its metrics and its console say of it.
type FolderStatus struct {
	// Dir is the folder as configured, cleaned.
	Dir string
	// Queued counts the stable files waiting for their turn.
	Queued int
	// File is the file being handled, in .processing/, since Since; empty
	// when the folder is idle.
	File  string
	Since time.Time
	// LastProgress is when the handler last said it made headway with
	// File (File.Progress); zero when it has not yet.
	LastProgress time.Time
	// Retrying says why File could not be handled or moved, for a reason
	// outside it (the brokers refuse writes, the disk is full), since
	// RetryingSince: the folder's later files wait behind it. Nil while
	// it is not retrying.
	Retrying      error
	RetryingSince time.Time
	// Problem says why the folder itself cannot be watched (it vanished,
	// say), or has no events and is found by rescans only; empty when
	// it is watched.
	Problem string
	// Rate is how many queued files the folder takes a second lately
	// (handled, or found gone or changed when their turn came): over
	// the last minute, or since it last set to work after an empty
	// queue if that was later, or over its last drainSamples files if
	// they came faster. 0 until a file was taken in that time.
	Rate float64
}

// Left estimates how long the folder takes to handle the files queued
// and the one it handles, at Rate; 0 when it has none, and false when it
// cannot tell yet (no file taken lately).
func (s FolderStatus) Left() (time.Duration, bool) {
	n := s.Queued
	if s.File != "" {
		n++
	}
	switch {
	case n == 0:
		return 0, true
	case s.Rate <= 0:
		return 0, false
	}
	return time.Duration(float64(n) / s.Rate * float64(time.Second)), true
}

// Status says what each folder is doing, in the configured order.
func (w *Watcher) Status() []FolderStatus {
	out := make([]FolderStatus, 0, len(w.folders))
	for _, f := range w.folders {
		f.mu.Lock()
		queued := len(f.queue)
		f.mu.Unlock()
		s := f.status.get()
		s.Dir, s.Queued, s.Rate = f.dir, queued, f.drain.rate(f.clock.Now())
		if at := f.status.lastProgress.Load(); at != 0 && s.File != "" {
			s.LastProgress = time.Unix(0, at)
		}
		out = append(out, s)
	}
	return out
}

// folderStatus is the part of FolderStatus the folder's goroutines keep.
type folderStatus struct {
	mu sync.Mutex
	s  FolderStatus
	// lastProgress is LastProgress in Unix nanoseconds: set at every row
	// of a large file, so it takes no lock.
	lastProgress atomic.Int64
}

func (fs *folderStatus) get() FolderStatus {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.s
}

func (fs *folderStatus) update(fn func(s *FolderStatus)) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fn(&fs.s)
}

// handling records the file the worker handles from now, or none.
func (fs *folderStatus) handling(name string, now time.Time) {
	fs.lastProgress.Store(0)
	fs.update(func(s *FolderStatus) {
		s.File, s.Since, s.Retrying, s.RetryingSince = name, now, nil, time.Time{}
	})
}

// retrying records why the current file waits, from the first failure of
// a series; nil ends the series.
func (fs *folderStatus) retrying(err error, now time.Time) {
	fs.update(func(s *FolderStatus) {
		if err != nil && s.Retrying == nil {
			s.RetryingSince = now
		}
		if err == nil {
			s.RetryingSince = time.Time{}
		}
		s.Retrying = err
	})
}

// problem records why the folder cannot be watched; "" when it is.
func (fs *folderStatus) problem(msg string) {
	fs.update(func(s *FolderStatus) { s.Problem = msg })
}

// progress records that the handler made headway now.
func (fs *folderStatus) progress(now time.Time) { fs.lastProgress.Store(now.UnixNano()) }

// drainSamples is how many of a folder's last taken files drainRate
// remembers: its memory stays the same however many files are queued.
const drainSamples = 64

// drainWindow is how far back drainRate looks.
const drainWindow = time.Minute

// drainRate tells how fast a folder takes the files of its queue, from
// when it took its last ones.
type drainRate struct {
	mu    sync.Mutex
	taken [drainSamples]time.Time // a ring, next is the oldest once full
	n     int
	next  int
	// since is when the folder last set to work after an empty queue.
	since time.Time
}

// started records that the folder set to work after an empty queue.
func (d *drainRate) started(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.since = now
}

// took records that the folder took a file of its queue.
func (d *drainRate) took(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.taken[d.next] = now
	d.next = (d.next + 1) % drainSamples
	d.n = min(d.n+1, drainSamples)
}

// rate is the files taken a second by now: see FolderStatus.Rate.
func (d *drainRate) rate(now time.Time) float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	from := now.Add(-drainWindow)
	if d.since.After(from) {
		from = d.since
	}
	n := 0
	for i := range d.n {
		if d.taken[i].After(from) {
			n++
		}
	}
	if n == drainSamples {
		// More came in the window than are remembered: the rate of the
		// last ones, from the oldest remembered.
		from, n = d.taken[d.next], drainSamples-1
	}
	if n == 0 || !now.After(from) {
		return 0
	}
	return float64(n) / now.Sub(from).Seconds()
}
