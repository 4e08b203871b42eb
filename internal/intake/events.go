package intake

import (
	"context"
	"path/filepath"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/watcher"
)

// ArrivalWait bounds the wait for an arrival event: for a "converting"
// event before a file is injected anyway (the console would show it late,
// nothing more), and for the record of where a file was moved.
const ArrivalWait = 10 * time.Second

// FileSeen records that a file was received.
func (in *Intake) FileSeen(dir, name string) {
	in.arrive(context.Background(), dir, name, record.ActionFileReceived, "", nil)
}

// FileGone records that a received file left the folder untaken.
func (in *Intake) FileGone(dir, name string) {
	in.arrive(context.Background(), dir, name, record.ActionFileWithdrawn,
		"left the folder before it was taken (deleted or renamed away)", nil)
}

// FileRefused records why an entry of a watched folder was not taken.
func (in *Intake) FileRefused(dir, name string, err *watcher.RefusedError) {
	in.arrive(context.Background(), dir, name, record.ActionFileFailed, err.Error(), nil)
	if in.refused != nil {
		in.refused()
	}
}

// arrive records an event of the arrival of the file name in dir. The
// console shows the name as watcher.DisplayName has it: only refused names
// differ from the name itself.
func (in *Intake) arrive(ctx context.Context, dir, name, action, detail string, done func(error)) {
	shown := watcher.DisplayName(name)
	outcome := record.OutcomeOK
	if action == record.ActionFileFailed {
		outcome = record.OutcomeRejected
	}
	arr := record.Arrival{ID: record.ArrivalID(dir, name), File: shown, Folder: dir}
	in.notices.Arrive(ctx, in.node, action, outcome, detail, arr, func(err error) {
		if err != nil {
			in.log.Warn("cannot record the file's arrival", "file", name, "dir", dir, "action", action, "err", err)
		}
		if done != nil {
			done(err)
		}
	})
}

// FileMoved records where the file of a batch went, so that the console
// serves this file and its report even when an earlier file holds its
// name. It waits for the brokers (within ArrivalWait), so that the record
// is made before jobdrop stops.
func (in *Intake) FileMoved(f watcher.File, path string) {
	in.mu.Lock()
	b, ok := in.batches[f.Path]
	delete(in.batches, f.Path)
	delete(in.uploads, filepath.Join(filepath.Clean(f.Dir), f.Name))
	in.mu.Unlock()
	if !ok {
		return // failed before its content was read: no batch to find it by
	}
	ctx, cancel := context.WithTimeout(context.Background(), ArrivalWait)
	defer cancel()
	done := make(chan struct{})
	in.notices.Moved(ctx, in.node, b, path, func(err error) {
		if err != nil {
			in.log.Warn("cannot record where the file went", "file", f.Name, "dir", f.Dir, "path", path, "err", err)
		}
		close(done)
	})
	<-done
}
