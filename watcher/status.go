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
}

// Status says what each folder is doing, in the configured order.
func (w *Watcher) Status() []FolderStatus {
	out := make([]FolderStatus, 0, len(w.folders))
	for _, f := range w.folders {
		f.mu.Lock()
		queued := len(f.queue)
		f.mu.Unlock()
		s := f.status.get()
		s.Dir, s.Queued = f.dir, queued
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
