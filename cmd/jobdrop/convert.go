package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/task"
)

// previewed is a converted definition with its next fire times, in UTC
// and, for a task with a time zone, in its zone too: the times its old
// scheduler showed.
type previewed struct {
	task.Definition
	NextFires      []string `json:"nextFires,omitempty"`
	NextFiresLocal []string `json:"nextFiresLocal,omitempty"`
}

// convert is the dry run: definitions as JSON lines on stdout (each with
// the cron dialect it is read in), row errors and warnings on stderr, exit
// status 1 when any row is invalid. The chains of the file are checked
// once every row is read: a row whose predecessor is not in the file is
// reported then (its definition was printed already), and so is a
// cycle. With no task store, a predecessor outside the file is left
// unchecked, since it may run already: a warning says so, with the name
// of the file it may have meant.
func convert(ctx context.Context, cfg Config, path, dir string, preview int, from string, stdout, stderr io.Writer) error {
	if err := regularFile(path); err != nil {
		return err
	}
	folder, err := folderFor(cfg, dir, path)
	if err != nil {
		return err
	}
	conv, err := converterFor(newRegistry(), folder, path)
	if err != nil {
		return err
	}
	now := time.Now()
	if from != "" {
		if now, err = time.Parse(time.RFC3339, from); err != nil {
			return fmt.Errorf("--from %q: want an RFC 3339 time such as 2026-03-01T08:00:00Z", from)
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	bad := 0
	check := injector.NewRowCheck(filepath.Base(path), cfg.Topics)
	chains := injector.NewChainCheck(filepath.Base(path))
	err = conv.Convert(ctx, path, folder.Options, func(r converters.Row) error {
		// A warning is said, not held against the file: the exit status
		// stays that of the rows.
		for _, w := range r.Warnings {
			fmt.Fprintln(stderr, "warning:", w)
		}
		if r.Err == nil {
			r.Err = check.Check(r)
		}
		chains.Row(&r, r.Err == nil)
		if r.Err != nil {
			bad++
			for _, e := range converters.RowErrors(r.Err) {
				fmt.Fprintln(stderr, e)
			}
			return nil
		}
		out := previewed{Definition: r.Def}
		if out.Cron != "" && out.CronDialect == "" {
			// Say the dialect the expression is read in, even when the
			// converter left it to auto (an exec plugin, say).
			out.CronDialect = r.Def.Dialect()
		}
		if preview > 0 {
			var zone *time.Location
			if tz := r.Def.Timezone; tz != "" && tz != "UTC" {
				zone = task.Location(tz) // valid: the row passed its checks
			}
			for _, ms := range r.Def.Fires(now.UnixMilli(), preview) {
				out.NextFires = append(out.NextFires, task.Time(ms).Format(time.RFC3339))
				if zone != nil {
					out.NextFiresLocal = append(out.NextFiresLocal, task.Time(ms).In(zone).Format(time.RFC3339))
				}
			}
		}
		return enc.Encode(out)
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError(1)
	}
	probs, err := chains.Check(ctx, nil, false)
	if err != nil {
		return err
	}
	// What no task store could tell: said, not held against the file.
	for _, w := range probs.Unchecked {
		fmt.Fprintln(stderr, "warning:", w)
	}
	rows := map[int]bool{}
	for _, e := range probs.Rows {
		fmt.Fprintln(stderr, e)
		rows[e.Row] = true
	}
	bad += len(rows)
	if probs.Cycle != nil {
		fmt.Fprintln(stderr, probs.Cycle)
		if bad == 0 {
			return exitError(1)
		}
	}
	if bad > 0 {
		if bad == 1 {
			fmt.Fprintln(stderr, "1 invalid row")
		} else {
			fmt.Fprintf(stderr, "%d invalid rows\n", bad)
		}
		return exitError(1)
	}
	return nil
}
