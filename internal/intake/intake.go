package intake

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/arrival"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/watcher"
)

// Folder is what intake needs of a watched folder.
type Folder struct {
	Dir string
	// Policy and MaxFileBytes are the injector's File.Policy and
	// File.MaxBytes for the folder's files.
	Policy       injector.Policy
	MaxFileBytes int64
	// Options are the folder's converter options.
	Options converters.Options
	// Converter picks the converter of the file name. Required.
	Converter func(name string) (converters.Converter, error)
	// Sync is the sync policy of a file read by conv, nil when the
	// folder does not sync it. Nil: the folder syncs nothing.
	Sync func(conv converters.Converter) *injector.Sync
}

// File is the injector's view of the file name at path in folder dir.
func (f Folder) File(path, name, dir string) injector.File {
	return injector.File{Path: path, Name: name, Folder: dir, Policy: f.Policy, MaxBytes: f.MaxFileBytes}
}

// Config configures an Intake.
type Config struct {
	// Injector injects the files. Required.
	Injector *injector.Injector
	// Notices records the files' arrivals and moves. Required.
	Notices *arrival.Notices
	// Folder describes the watched folder dir, and reports whether it is
	// one: a folder not watched reads as one with no options. Required.
	Folder func(dir string) (Folder, bool)
	// Node is the actor of the arrival events.
	Node string
	// Refused, if set, is told of each entry of a folder the watcher
	// refused.
	Refused func()
}

// Intake hands claimed files to the injector with their folder's
// converter and options, and records each file's arrival as it goes:
// received when first seen, converting once taken, failed when it failed
// before its content could be recorded; and, once the watcher moved a file
// of a batch, where it went.
type Intake struct {
	inj     *injector.Injector
	notices *arrival.Notices
	folder  func(dir string) (Folder, bool)
	node    string
	log     *slog.Logger
	refused func()

	mu      sync.Mutex
	batches map[string]record.Batch // by the path of a file handled and not moved yet
	// uploads are who dropped files through the console, by the file's
	// path in its folder, until the watcher hands it over. A file another
	// node takes, or one taken after a restart, is injected as the
	// watcher's; the console's upload event still names the user.
	uploads map[string]string
}

var (
	_ watcher.Handler      = (*Intake)(nil)
	_ watcher.Observer     = (*Intake)(nil)
	_ watcher.MoveObserver = (*Intake)(nil)
)

// New makes an Intake of cfg.
func New(cfg Config, log *slog.Logger) (*Intake, error) {
	if cfg.Injector == nil || cfg.Notices == nil || cfg.Folder == nil {
		return nil, errors.New("intake: Injector, Notices and Folder are required")
	}
	return &Intake{inj: cfg.Injector, notices: cfg.Notices, folder: cfg.Folder, node: cfg.Node,
		refused: cfg.Refused, log: log.With("component", "pipeline"),
		batches: map[string]record.Batch{}, uploads: map[string]string{}}, nil
}

// HandleFile injects one claimed file.
func (in *Intake) HandleFile(ctx context.Context, f watcher.File) error {
	in.mu.Lock()
	delete(in.batches, f.Path) // a leftover of a handling cut short
	in.mu.Unlock()
	// Recorded before the file's batch event, which it must precede.
	wctx, cancel := context.WithTimeout(ctx, ArrivalWait)
	done := make(chan struct{})
	detail := ""
	if f.Recovered {
		detail = "taken again: jobdrop stopped while handling it"
	}
	in.arrive(wctx, f.Dir, f.Name, record.ActionFileConverting, detail, func(error) { close(done) })
	select {
	case <-done:
	case <-wctx.Done():
	}
	cancel()

	err := in.handle(ctx, f)
	if errors.Is(err, injector.ErrUnavailable) && ctx.Err() == nil {
		// Not the file's fault: it waits in .processing/ and is tried
		// again, so its arrival stays "converting".
		return &watcher.RetryError{Err: err}
	}
	var rej *injector.RejectedError
	var held *injector.HeldError
	if errors.As(err, &held) {
		// Recorded as held: it waits in held/ for an operator.
		return &watcher.HeldError{Err: err}
	}
	if err != nil && ctx.Err() == nil && !errors.As(err, &rej) {
		// Nothing of the file was recorded: say why on its arrival.
		in.arrive(context.WithoutCancel(ctx), f.Dir, f.Name, record.ActionFileFailed, err.Error(), nil)
	}
	return err
}

func (in *Intake) handle(ctx context.Context, f watcher.File) error {
	folder, _ := in.folder(f.Dir)
	conv, err := folder.Converter(f.Name)
	if err != nil {
		return err
	}
	file := folder.File(f.Path, f.Name, f.Dir)
	file.Arrival = record.ArrivalID(f.Dir, f.Name)
	file.Progress = f.Progress
	if folder.Sync != nil {
		file.Sync = folder.Sync(conv)
	}
	file.Actor = in.uploader(f.Dir, f.Name)
	res, err := in.inj.Inject(ctx, file, conv, folder.Options)
	if res.Batch.ID != "" {
		in.mu.Lock()
		in.batches[f.Path] = res.Batch
		in.mu.Unlock()
	}
	if err == nil && res.Report != nil {
		// Injected in part: archived beside the report of the rows left out.
		return &watcher.PartialError{Err: res.Report}
	}
	return err
}
