package main

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/intake"
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

// intakeFolder describes the watched folder dir of watch to the intake,
// reading its files with the converters of reg. A folder not configured
// reads as one with no options.
func intakeFolder(watch []Folder, reg *converters.Registry) func(dir string) (intake.Folder, bool) {
	folders := map[string]Folder{}
	for _, f := range watch {
		folders[filepath.Clean(f.Dir)] = f
	}
	return func(dir string) (intake.Folder, bool) {
		f, ok := folders[filepath.Clean(dir)]
		return f.intake(reg), ok
	}
}

// intake is the intake's view of the folder, reading its files with the
// converters of reg.
func (folder Folder) intake(reg *converters.Registry) intake.Folder {
	return intake.Folder{Dir: folder.Dir, Policy: folder.Policy, MaxFileBytes: folder.MaxFileBytes, Options: folder.Options,
		Converter: func(name string) (converters.Converter, error) { return converterFor(reg, folder, name) },
		Sync:      folder.sync}
}

// file is the injector's view of a file of this folder.
func (folder Folder) file(path, name, dir string) injector.File {
	return folder.intake(nil).File(path, name, dir)
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
