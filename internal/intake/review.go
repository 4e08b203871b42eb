package intake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/watcher"
	"github.com/jobdrop/jobdrop/web/api"
)

// Reviewer decides the held files of the folders this node watches: an
// operator's Apply injects one whatever it deletes, Reject fails it. The
// file is taken from held/ first (watcher.TakeHeld), so two operators, or
// two nodes of a shared folder, never decide one file twice.
type Reviewer struct {
	in *Intake
	// batch looks a batch up, with the paths its file was moved to.
	batch func(ctx context.Context, id string) (storetype.Batch, error)
	clock clockwork.Clock
}

var _ api.Reviewer = Reviewer{}

// Reviewer decides the held files of the intake's folders, looking their
// batches up with batch; clock is the clock of their reports.
func (in *Intake) Reviewer(batch func(ctx context.Context, id string) (storetype.Batch, error), clock clockwork.Clock) Reviewer {
	return Reviewer{in: in, batch: batch, clock: clock}
}

// take finds the held file of batch id in a watched folder's held/ and
// takes it.
func (r Reviewer) take(ctx context.Context, id string) (watcher.File, Folder, storetype.Batch, error) {
	b, err := r.batch(ctx, id)
	if err != nil {
		return watcher.File{}, Folder{}, b, err
	}
	if b.Status != storetype.BatchHeld {
		return watcher.File{}, Folder{}, b, fmt.Errorf("file %s is %s: %w", b.File, b.Status, api.ErrNotHeld)
	}
	for _, kept := range b.Kept {
		sub := filepath.Dir(kept)
		if filepath.Base(sub) != watcher.HeldDir {
			continue
		}
		folder, ok := r.in.folder(filepath.Dir(sub))
		if !ok {
			continue
		}
		f, err := watcher.TakeHeld(folder.Dir, filepath.Base(kept))
		if errors.Is(err, watcher.ErrNotHeld) {
			continue
		}
		f.Name = b.File // its source, whatever name held/ gave it
		return f, folder, b, err
	}
	// An operator may act before the file's move to held/ is recorded:
	// the file of the batch's name in its folder's held/ is the one when
	// its content is the batch's.
	if folder, ok := r.in.folder(b.Folder); ok && len(b.Kept) == 0 {
		if id, err := fileSHA256(filepath.Join(folder.Dir, watcher.HeldDir, b.File)); err == nil && id == b.ID {
			f, err := watcher.TakeHeld(folder.Dir, b.File)
			if err == nil || !errors.Is(err, watcher.ErrNotHeld) {
				return f, folder, b, err
			}
		}
	}
	return watcher.File{}, Folder{}, b, fmt.Errorf("file %s: %w in a folder this node watches", b.File, api.ErrNotHeld)
}

// fileSHA256 is the hex SHA-256 of the file at path: the id of the batch
// its content makes.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Apply injects the held file of batch id whatever it deletes.
func (r Reviewer) Apply(ctx context.Context, id, actor string) error {
	f, folder, _, err := r.take(ctx, id)
	if err != nil {
		return err
	}
	conv, err := folder.Converter(f.Name)
	if err != nil {
		return r.putBack(f, err)
	}
	file := folder.File(f.Path, f.Name, f.Dir)
	file.Actor = actor
	if folder.Sync != nil {
		file.Sync = folder.Sync(conv)
	}
	if file.Sync == nil {
		file.Sync = &injector.Sync{} // no longer a sync folder: still applied as reviewed
	}
	file.Sync.Reviewed = true
	res, err := r.in.inj.Inject(ctx, file, conv, folder.Options)
	var rej *injector.RejectedError
	switch {
	case errors.As(err, &rej):
		return r.settle(f, actor, res.Batch, rej.Error())
	case err != nil:
		return r.putBack(f, err)
	}
	return r.settle(f, actor, res.Batch, "")
}

// Reject moves the held file of batch id to failed/ beside the reason.
func (r Reviewer) Reject(ctx context.Context, id, actor, reason string) error {
	f, folder, b, err := r.take(ctx, id)
	if err != nil {
		return err
	}
	batch := record.Batch{ID: b.ID, File: b.File, Folder: b.Folder, Size: b.Size, Rows: b.Rows}
	file := folder.File(f.Path, f.Name, f.Dir)
	file.Actor = actor
	if err := r.in.inj.RejectHeld(ctx, file, batch, reason); err != nil {
		return r.putBack(f, err)
	}
	report := f.Name + ": rejected after review by " + actor
	if reason != "" {
		report += ": " + reason
	}
	return r.settle(f, actor, batch, report+"; nothing was injected")
}

// settle moves a decided file to archive/ (report empty) or failed/, and
// records where it went.
func (r Reviewer) settle(f watcher.File, actor string, b record.Batch, report string) error {
	to, err := watcher.Settle(f, report, r.clock.Now())
	if err != nil {
		return fmt.Errorf("decided, but %s could not be moved out of %s (it is handled again at the next start): %w",
			f.Name, watcher.ProcessingDir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ArrivalWait)
	defer cancel()
	done := make(chan error, 1)
	r.in.notices.Moved(ctx, actor, b, to, func(err error) { done <- err })
	if err := <-done; err != nil {
		r.in.log.Warn("cannot record where the file went", "file", f.Name, "path", to, "err", err)
	}
	return nil
}

// putBack returns a taken file to held/ when its decision could not be
// carried out, and says why.
func (r Reviewer) putBack(f watcher.File, cause error) error {
	if err := watcher.Hold(f); err != nil {
		return fmt.Errorf("%w; and the file could not go back to %s/ (it is handled again at the next start): %w", cause, watcher.HeldDir, err)
	}
	return cause
}
