package main

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/injector"
)

// Folder is one watched folder.
type Folder struct {
	Dir string `yaml:"dir"`
	// Converter forces one converter for every file; empty picks one by
	// file name.
	Converter string `yaml:"converter"`
	// Patterns pick the converter by file name, tried in order before the
	// converters' own patterns.
	Patterns []Pattern `yaml:"patterns"`
	// Policy is what becomes of a file with invalid rows: "reject" (the
	// default) or "good-rows".
	Policy injector.Policy `yaml:"policy"`
	// MaxFileBytes rejects larger files unread. 0: 1 GiB; -1: no limit.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// Poll scans the folder every PollInterval instead of waiting for
	// file system events, which network shares never send.
	Poll         bool          `yaml:"poll"`
	PollInterval time.Duration `yaml:"poll_interval"`
	// MinAge holds a file back until its modification time is this old.
	MinAge time.Duration `yaml:"min_age"`
	// DoneMarker takes NAME only once NAME.done exists; the marker is
	// removed after the file is handled.
	DoneMarker bool `yaml:"done_marker"`
	// Sync makes each file the whole truth of its source (SyncScope):
	// rows new or changed since the last version are inserted or
	// updated, the tasks it no longer holds deleted. Unset: on for files
	// the crontab converter reads, off for the others.
	Sync *bool `yaml:"sync"`
	// SyncScope is what a file replaces: "file" (the default), the tasks
	// earlier files of the same name in this folder created; or "host",
	// the tasks any file of this folder created for the hosts it names.
	SyncScope string `yaml:"sync_scope"`
	// SyncMaxRemove is the largest share, in percent, of its source's
	// tasks a version may delete; one that would delete more, or all of
	// them, is held for an operator's Apply or Reject. Defaults to 50.
	SyncMaxRemove      *int `yaml:"sync_max_remove"`
	converters.Options `yaml:",inline"`
}

// sync is the sync policy of a file of the folder read by conv; nil when
// the folder does not sync it.
func (f Folder) sync(conv converters.Converter) *injector.Sync {
	_, crontab := conv.(converters.Crontab)
	if f.Sync == nil && !crontab || f.Sync != nil && !*f.Sync {
		return nil
	}
	share := 50
	if f.SyncMaxRemove != nil {
		share = *f.SyncMaxRemove
	}
	return &injector.Sync{ByHost: f.SyncScope == "host", MaxRemove: float64(share) / 100}
}

// Pattern maps file names to a converter.
type Pattern struct {
	// Pattern is matched against the file's base name, ignoring case, with
	// path.Match syntax: "*.txt", "export-??.dat".
	Pattern string `yaml:"pattern"`
	// Converter is the registered name of the converter ("csv", …).
	Converter string `yaml:"converter"`
}

// validate checks the folder's file handling options; at names the folder
// in messages.
func (f Folder) validate(at string) error {
	var errs []error
	reg := newRegistry()
	if f.Converter != "" {
		if _, err := reg.Named(f.Converter); err != nil {
			errs = append(errs, fmt.Errorf("%s.converter: %w", at, err))
		}
	}
	for j, p := range f.Patterns {
		if strings.TrimSpace(p.Pattern) == "" {
			errs = append(errs, fmt.Errorf("%s.patterns[%d].pattern: must not be empty", at, j))
		} else if _, err := path.Match(p.Pattern, ""); err != nil {
			errs = append(errs, fmt.Errorf("%s.patterns[%d].pattern: %q: %w", at, j, p.Pattern, err))
		}
		if _, err := reg.Named(p.Converter); err != nil {
			errs = append(errs, fmt.Errorf("%s.patterns[%d].converter: %w", at, j, err))
		}
	}
	if !f.Policy.Valid() {
		errs = append(errs, fmt.Errorf("%s.policy: %q is not %s or %s", at, f.Policy, injector.PolicyReject, injector.PolicyGoodRows))
	}
	if f.MaxFileBytes < -1 {
		errs = append(errs, fmt.Errorf("%s.max_file_bytes: %d: want a number of bytes, 0 for 1 GiB or -1 for no limit", at, f.MaxFileBytes))
	}
	if f.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("%s.poll_interval: %s: must not be negative", at, f.PollInterval))
	}
	if f.MinAge < 0 {
		errs = append(errs, fmt.Errorf("%s.min_age: %s: must not be negative", at, f.MinAge))
	}
	if f.SyncScope != "" && f.SyncScope != "file" && f.SyncScope != "host" {
		errs = append(errs, fmt.Errorf("%s.sync_scope: %q is not file or host", at, f.SyncScope))
	}
	if m := f.SyncMaxRemove; m != nil && (*m < 0 || *m > 100) {
		errs = append(errs, fmt.Errorf("%s.sync_max_remove: %d: want a percentage, 0 to 100", at, *m))
	}
	return errors.Join(errs...)
}
