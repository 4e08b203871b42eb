package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/arrival"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/watcher"
	"github.com/jobdrop/jobdrop/web"
)

// newRegistry lists the converters jobdrop ships, with the file names each
// one takes by default.
func newRegistry() *converters.Registry {
	r := converters.NewRegistry()
	r.Register("csv", converters.CSV{}, "*.csv", "*.tsv", "*.txt")
	r.Register("xlsx", converters.XLSX{}, "*.xlsx", "*.xlsm")
	r.Register("json", converters.JSON{}, "*.json", "*.jsonl", "*.ndjson")
	r.Register("crontab", converters.Crontab{}, "crontab", "*.cron", "*.crontab")
	// XML goes by its root element: Quartz's job scheduling data or a
	// Windows Task Scheduler task; a folder may also name either.
	r.Register("xml", converters.XML{}, "*.xml")
	r.Register("quartz", converters.QuartzXML{})
	r.Register("windows", converters.WinTask{})
	r.Register("kubernetes", converters.Kubernetes{}, "*.yaml", "*.yml")
	// A .timer reads the .service beside it; an archive holds both.
	r.Register("systemd", converters.Systemd{}, "*.timer", "*.tar", "*.tar.gz", "*.tgz", "*.zip")
	// No pattern: a folder opts in with converter: exec and exec.program.
	r.Register("exec", converters.Exec{})
	return r
}

// pipeline hands claimed files to the injector with their folder's
// converter and options, and records each file's arrival as it goes:
// received when first seen, converting once taken, failed when it failed
// before its content could be recorded; and, once the watcher moved a file
// of a batch, where it went.
type pipeline struct {
	inj     *injector.Injector
	notices *arrival.Notices
	reg     *converters.Registry
	folders map[string]Folder
	node    string
	log     *slog.Logger
	// refused is told of each entry of a folder the watcher refused.
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
	_ watcher.Handler      = (*pipeline)(nil)
	_ watcher.Observer     = (*pipeline)(nil)
	_ watcher.MoveObserver = (*pipeline)(nil)
	_ web.Uploader         = (*pipeline)(nil)
)

func newPipeline(inj *injector.Injector, notices *arrival.Notices, reg *converters.Registry, folders []Folder, node string, refused func(), log *slog.Logger) *pipeline {
	p := &pipeline{inj: inj, notices: notices, reg: reg, folders: map[string]Folder{}, node: node, refused: refused, log: log.With("component", "pipeline"),
		batches: map[string]record.Batch{}, uploads: map[string]string{}}
	for _, f := range folders {
		p.folders[filepath.Clean(f.Dir)] = f
	}
	return p
}

// arrivalWait bounds the wait for a "converting" event before a file is
// injected anyway: the console would show it late, nothing more.
const arrivalWait = 10 * time.Second

// FileSeen records that a file was received.
func (p *pipeline) FileSeen(dir, name string) {
	p.arrive(context.Background(), dir, name, record.ActionFileReceived, "", nil)
}

// FileGone records that a received file left the folder untaken.
func (p *pipeline) FileGone(dir, name string) {
	p.arrive(context.Background(), dir, name, record.ActionFileWithdrawn,
		"left the folder before it was taken (deleted or renamed away)", nil)
}

// FileRefused records why an entry of a watched folder was not taken.
func (p *pipeline) FileRefused(dir, name string, err *watcher.RefusedError) {
	p.arrive(context.Background(), dir, name, record.ActionFileFailed, err.Error(), nil)
	if p.refused != nil {
		p.refused()
	}
}

// arrive records an event of the arrival of the file name in dir. The
// console shows the name as watcher.DisplayName has it: only refused names
// differ from the name itself.
func (p *pipeline) arrive(ctx context.Context, dir, name, action, detail string, done func(error)) {
	shown := watcher.DisplayName(name)
	outcome := record.OutcomeOK
	if action == record.ActionFileFailed {
		outcome = record.OutcomeRejected
	}
	arr := record.Arrival{ID: record.ArrivalID(dir, name), File: shown, Folder: dir}
	p.notices.Arrive(ctx, p.node, action, outcome, detail, arr, func(err error) {
		if err != nil {
			p.log.Warn("cannot record the file's arrival", "file", name, "dir", dir, "action", action, "error", err)
		}
		if done != nil {
			done(err)
		}
	})
}

// FileMoved records where the file of a batch went, so that the console
// serves this file and its report even when an earlier file holds its
// name. It waits for the brokers (within arrivalWait), so that the record
// is made before jobdrop stops.
func (p *pipeline) FileMoved(f watcher.File, path string) {
	p.mu.Lock()
	b, ok := p.batches[f.Path]
	delete(p.batches, f.Path)
	delete(p.uploads, filepath.Join(filepath.Clean(f.Dir), f.Name))
	p.mu.Unlock()
	if !ok {
		return // failed before its content was read: no batch to find it by
	}
	ctx, cancel := context.WithTimeout(context.Background(), arrivalWait)
	defer cancel()
	done := make(chan struct{})
	p.notices.Moved(ctx, p.node, b, path, func(err error) {
		if err != nil {
			p.log.Warn("cannot record where the file went", "file", f.Name, "dir", f.Dir, "path", path, "error", err)
		}
		close(done)
	})
	<-done
}

// maxUploads bounds the uploads remembered: past it, they are all
// forgotten (taken by another node, most likely) and injected as the
// watcher's.
const maxUploads = 1000

// Uploading remembers that actor drops the file at path, so that its
// batch is audited under actor.
func (p *pipeline) Uploading(path, actor string) (undo func()) {
	path = filepath.Clean(path)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.uploads) >= maxUploads {
		clear(p.uploads)
	}
	p.uploads[path] = actor
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.uploads, path)
	}
}

// uploader is who uploaded the file name of folder dir, if it came
// through the console. It is forgotten once the file is moved away.
func (p *pipeline) uploader(dir, name string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.uploads[filepath.Join(filepath.Clean(dir), name)]
}

// HandleFile injects one claimed file.
func (p *pipeline) HandleFile(ctx context.Context, f watcher.File) error {
	p.mu.Lock()
	delete(p.batches, f.Path) // a leftover of a handling cut short
	p.mu.Unlock()
	// Recorded before the file's batch event, which it must precede.
	wctx, cancel := context.WithTimeout(ctx, arrivalWait)
	done := make(chan struct{})
	detail := ""
	if f.Recovered {
		detail = "taken again: jobdrop stopped while handling it"
	}
	p.arrive(wctx, f.Dir, f.Name, record.ActionFileConverting, detail, func(error) { close(done) })
	select {
	case <-done:
	case <-wctx.Done():
	}
	cancel()

	err := p.handle(ctx, f)
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
		p.arrive(context.WithoutCancel(ctx), f.Dir, f.Name, record.ActionFileFailed, err.Error(), nil)
	}
	return err
}

func (p *pipeline) handle(ctx context.Context, f watcher.File) error {
	folder := p.folders[filepath.Clean(f.Dir)]
	conv, err := converterFor(p.reg, folder, f.Name)
	if err != nil {
		return err
	}
	file := folder.file(f.Path, f.Name, f.Dir)
	file.Arrival = record.ArrivalID(f.Dir, f.Name)
	file.Progress = f.Progress
	file.Sync = folder.sync(conv)
	file.Actor = p.uploader(f.Dir, f.Name)
	res, err := p.inj.Inject(ctx, file, conv, folder.Options)
	if res.Batch.ID != "" {
		p.mu.Lock()
		p.batches[f.Path] = res.Batch
		p.mu.Unlock()
	}
	if err == nil && res.Report != nil {
		// Injected in part: archived beside the report of the rows left out.
		return &watcher.PartialError{Err: res.Report}
	}
	return err
}

// file is the injector's view of a file of this folder.
func (folder Folder) file(path, name, dir string) injector.File {
	return injector.File{Path: path, Name: name, Folder: dir, Policy: folder.Policy, MaxBytes: folder.MaxFileBytes}
}

// converterFor picks the folder's converter, or the one its patterns name
// for the file name, or the one the registry's own patterns pick.
func converterFor(reg *converters.Registry, folder Folder, name string) (converters.Converter, error) {
	named := folder.Converter
	if named == "" {
		base := strings.ToLower(filepath.Base(name))
		for _, p := range folder.Patterns {
			if ok, _ := path.Match(strings.ToLower(p.Pattern), base); ok {
				named = p.Converter
				break
			}
		}
	}
	if named != "" {
		c, err := reg.Named(named)
		if err != nil {
			return nil, fmt.Errorf("folder %s: %w", folder.Dir, err)
		}
		return c, nil
	}
	_, c, err := reg.For(name)
	return c, err
}

// folderFor finds the configured folder dir names; when dir is empty, the
// watched folder file lies in, or else the only watched folder, so that a
// file checked or injected by hand is read as a drop into the inbox would
// be; with several folders and none holding file, a folder with no
// options.
func folderFor(cfg Config, dir, file string) (Folder, error) {
	if dir == "" {
		// The folder the file lies in, if watched; else the only one.
		in, _ := filepath.Abs(filepath.Dir(file))
		for _, f := range cfg.Watch {
			if d, _ := filepath.Abs(f.Dir); d == in {
				return f, nil
			}
		}
		if len(cfg.Watch) == 1 {
			return cfg.Watch[0], nil
		}
		return Folder{}, nil
	}
	for _, f := range cfg.Watch {
		if filepath.Clean(f.Dir) == filepath.Clean(dir) {
			return f, nil
		}
	}
	return Folder{}, fmt.Errorf("--folder %s: not a watched folder of the configuration", dir)
}
