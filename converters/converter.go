package converters

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

// Converter reads one job list file.
type Converter interface {
	// Convert reads the file at path and calls emit once per data row, in
	// file order: with the row's definition and a nil error, or with a
	// *RowError for a row that cannot become a valid command. Blank rows are
	// skipped. An error from emit stops the conversion and is returned; any
	// other returned error concerns the file as a whole (unreadable, wrong
	// format, over a limit).
	Convert(ctx context.Context, path string, opts Options, emit func(Row) error) error
}

// Row is one converted row.
type Row struct {
	// Line is the 1-based row number a person would look for in the file:
	// the line of a CSV record (header included), the row of a sheet, the
	// element of a JSON array, the line of a JSON Lines or crontab file,
	// the line of an XML trigger. Rows come in file order; in XML, where
	// one line may hold more than one trigger, two rows may share a line.
	Line int
	Def  task.Definition
	// Err is a *RowError when the row is invalid; Def is then partial.
	Err error
	// Warnings say what is valid but doubtful in the row, such as a cron
	// expression another dialect would read otherwise. They do not reject
	// the row; they reach the file's report.
	Warnings []string
}

// Options tell a converter how a folder's files are laid out.
type Options struct {
	// Defaults fill fields a file leaves empty.
	Defaults Defaults `yaml:"defaults"`
	// Mapping renames columns: file column name → default column name
	// (host, name, action, topic, start, timeUnit, time, cron,
	// cronDialect, rrule, timezone, end, data, data.<key>). Matching ignores case
	// and surrounding spaces.
	Mapping map[string]string `yaml:"mapping"`
	// CronDialect says how the folder's cron expressions are read: unix,
	// quartz, spring, systemd or auto (the default: Quartz for 7 fields or
	// a "?", systemd for a ":", "~" or "..", unix otherwise). A row's cronDialect column overrides it. Stating it
	// also silences the warning on expressions that read differently in
	// two dialects.
	CronDialect string `yaml:"cron_dialect"`
	// CSV, XLSX, Crontab and Exec tune the converter of that name; the
	// others ignore them.
	CSV     CSVOptions     `yaml:"csv"`
	XLSX    XLSXOptions    `yaml:"xlsx"`
	Crontab CrontabOptions `yaml:"crontab"`
	Exec    ExecOptions    `yaml:"exec"`
}

// Defaults are values used where a row leaves a field empty.
type Defaults struct {
	Host   string `yaml:"host"`
	Topic  string `yaml:"topic"`
	Action string `yaml:"action"`
	// Timezone is the IANA zone of local times such as "2026-03-01 08:00"
	// and of cron expressions. Defaults to UTC.
	Timezone string `yaml:"timezone"`
}

// Location is the time zone of Defaults.Timezone (UTC when empty).
func (d Defaults) Location() (*time.Location, error) {
	if d.Timezone == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(d.Timezone)
	if err != nil {
		return nil, fmt.Errorf("timezone %q: %w", d.Timezone, err)
	}
	return loc, nil
}

// RowError names the file, row, column and value of a bad row and what was
// expected.
type RowError struct {
	File   string
	Row    int
	Column string
	Value  string
	Err    error
}

func (e *RowError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Row > 0 {
		fmt.Fprintf(&b, ": row %d", e.Row)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ": column %s", e.Column)
	}
	if e.Value != "" {
		fmt.Fprintf(&b, ": value %q", e.Value)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *RowError) Unwrap() error { return e.Err }

// Registry maps file names to converters. It is built explicitly in main.
type Registry struct {
	byName  map[string]Converter
	entries []entry
}

type entry struct {
	pattern string
	name    string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: map[string]Converter{}} }

// Register adds a converter under name, chosen for files matching any of
// the default patterns (filepath.Match syntax, matched case-insensitively
// against the base name).
func (r *Registry) Register(name string, c Converter, patterns ...string) {
	r.byName[name] = c
	for _, p := range patterns {
		r.entries = append(r.entries, entry{strings.ToLower(p), name})
	}
}

// Named returns the converter registered under name.
func (r *Registry) Named(name string) (Converter, error) {
	c, ok := r.byName[name]
	if !ok {
		return nil, fmt.Errorf("unknown converter %q (have %s)", name, strings.Join(r.Names(), ", "))
	}
	return c, nil
}

// Names lists the registered converter names, sorted.
func (r *Registry) Names() []string {
	var names []string
	for n := range r.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// For picks the converter for a file by its name, or says none fits.
func (r *Registry) For(path string) (string, Converter, error) {
	base := strings.ToLower(filepath.Base(path))
	for _, e := range r.entries {
		if ok, _ := filepath.Match(e.pattern, base); ok {
			return e.name, r.byName[e.name], nil
		}
	}
	var pats []string
	for _, e := range r.entries {
		pats = append(pats, e.pattern)
	}
	return "", nil, fmt.Errorf("no converter for %q (known patterns: %s)", filepath.Base(path), strings.Join(pats, ", "))
}

// readerConverter is the ConvertReader of a format read from a stream.
type readerConverter func(ctx context.Context, file string, r io.Reader, opts Options, emit func(Row) error) error

// convertFile opens path and hands it to a stream converter under its base
// name.
func convertFile(ctx context.Context, path string, opts Options, emit func(Row) error, conv readerConverter) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return conv(ctx, filepath.Base(path), f, opts, emit)
}
