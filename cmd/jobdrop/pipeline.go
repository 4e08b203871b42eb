package main

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/watcher"
)

// newRegistry lists the converters jobdrop ships, with the file names each
// one takes by default.
func newRegistry() *converters.Registry {
	r := converters.NewRegistry()
	r.Register("csv", converters.CSV{}, "*.csv", "*.tsv", "*.txt")
	r.Register("xlsx", converters.XLSX{}, "*.xlsx", "*.xlsm")
	r.Register("json", converters.JSON{}, "*.json", "*.jsonl", "*.ndjson")
	r.Register("crontab", converters.Crontab{}, "crontab", "*.cron", "*.crontab")
	// No pattern: a folder opts in with converter: exec and exec.program.
	r.Register("exec", converters.Exec{})
	return r
}

// pipeline hands claimed files to the injector with their folder's
// converter and options.
type pipeline struct {
	inj     *injector.Injector
	reg     *converters.Registry
	folders map[string]Folder
}

var _ watcher.Handler = (*pipeline)(nil)

func newPipeline(inj *injector.Injector, reg *converters.Registry, folders []Folder) *pipeline {
	p := &pipeline{inj: inj, reg: reg, folders: map[string]Folder{}}
	for _, f := range folders {
		p.folders[filepath.Clean(f.Dir)] = f
	}
	return p
}

// HandleFile injects one claimed file.
func (p *pipeline) HandleFile(ctx context.Context, f watcher.File) error {
	folder := p.folders[filepath.Clean(f.Dir)]
	conv, err := converterFor(p.reg, folder, f.Name)
	if err != nil {
		return err
	}
	res, err := p.inj.Inject(ctx, folder.file(f.Path, f.Name, f.Dir), conv, folder.Options)
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

// folderFor finds the configured folder dir names, or a folder with no
// options when dir is empty.
func folderFor(cfg Config, dir string) (Folder, error) {
	if dir == "" {
		return Folder{}, nil
	}
	for _, f := range cfg.Watch {
		if filepath.Clean(f.Dir) == filepath.Clean(dir) {
			return f, nil
		}
	}
	return Folder{}, fmt.Errorf("--folder %s: not a watched folder of the configuration", dir)
}
