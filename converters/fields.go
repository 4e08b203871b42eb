package converters

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jobdrop/jobdrop/internal/suggestion"
	"github.com/jobdrop/jobdrop/task"
)

// ErrNoRows is wrapped by the file error of a file that holds no task rows
// at all: empty, or a header alone. Such a file is most likely a mistake
// (an export that went wrong), so it is rejected rather than injected as
// an empty batch.
var ErrNoRows = errors.New("no rows")

// kind is what a file column feeds.
type kind uint8

// The kinds follow defaultColumns: kind k is defaultColumns[k-1].
const (
	kindIgnore kind = iota
	kindHost
	kindName
	kindAction
	kindTopic
	kindStart
	kindTimeUnit
	kindTime
	kindCron
	kindCronDialect
	kindRrule
	kindTimezone
	kindEnd
	kindAfter
	kindOn
	kindDelay
	kindRetry
	kindTimeout
	kindData
	kindDataKey // data.<key>: one data entry
	numKinds
)

// defaultColumns are the column names a file may use without any mapping,
// in the order error messages list them.
var defaultColumns = []string{"host", "name", "action", "topic", "start", "timeUnit", "time", "cron", "cronDialect", "rrule", "timezone", "end",
	"after", "on", "delay", "retry", "timeout", "data"}

// dataPrefix starts a column that holds one data entry.
const dataPrefix = "data."

// ignore is the mapping target that drops a column.
const ignore = "-"

// DefaultColumns lists the column names every tabular format understands
// without a mapping; "data.<key>" stands for the one-entry data columns.
func DefaultColumns() []string {
	return append(slices.Clone(defaultColumns), dataPrefix+"<key>")
}

// String is the default column name of a kind.
func (k kind) String() string {
	switch {
	case k == kindDataKey:
		return dataPrefix + "<key>"
	case k > kindIgnore && k < kindDataKey:
		return defaultColumns[k-1]
	}
	return ignore
}

// Cell is one cell of a row, for formats whose cells carry types. Text is
// what the cell says; Time, when not zero, is a date the format has already
// decoded (a native Excel date cell) and is used for start and end instead
// of parsing Text.
type Cell struct {
	Text string
	Time time.Time
	// Local says Time is a calendar date and clock reading with no zone of
	// its own (Excel dates are): its fields are read in the row's time zone,
	// like the text "2026-03-01 08:00". Otherwise Time is an instant.
	Local bool
	// Millis says Text is a number whose unit the format defines as
	// milliseconds: a JSON number under delay or timeout, as
	// light-scheduler's clients write durations. Elsewhere a duration is
	// text with its unit ("10m"), and a bare number is an error, since
	// nothing says whether it counts seconds or minutes.
	Millis bool
}

// column is one column of a file.
type column struct {
	// name is the header as written, without surrounding spaces; error
	// messages use it so people find the column they wrote.
	name string
	kind kind
	// key is the data key of a data.<key> column, in the header's case.
	key string
	// unnamed marks a column with an empty header: ignored, but a value
	// under it is an error rather than silently dropped.
	unnamed bool
}

// Columns maps the columns of one file to definition fields. It is built
// once from the header row (NewColumns), then turns each row's cells into a
// definition (Row, Cells). Every tabular format uses it, so CSV, Excel and
// JSON files follow the same column rules.
//
// A Columns is not safe for concurrent use.
type Columns struct {
	file string
	cols []column
	// at is the index of the column feeding each single-column kind, or -1.
	at       [numKinds]int
	defaults Defaults
	// zone is the location of Defaults.Timezone.
	zone *time.Location
	// dialect is the folder's cron dialect (Options.CronDialect); auto
	// when the folder does not state one.
	dialect task.Dialect
	// dataKeys counts the data.<key> columns.
	dataKeys int
	// trimmed holds the row being converted's cells without surrounding
	// spaces, read once.
	trimmed []string
	// texts holds the cells of a row of text (Row).
	texts []Cell
	// spare holds the recycled maps the rows' data fill.
	spare spareMaps
	// freqs and millis hand out the rows' frequencies and times.
	freqs  slab[task.Frequency]
	millis slab[int64]
}

// slab hands out values from blocks of them, so that the small parts of
// rows (a frequency, a start) cost an allocation a block, not one each.
// Its blocks grow from 8 values to rowsPerBlock, so that Columns made for
// few rows (a JSON file whose objects vary) hold little.
type slab[T any] struct {
	free []T
	size int // of the last block
}

func (s *slab[T]) new() *T {
	if len(s.free) == 0 {
		s.size = min(max(2*s.size, 8), rowsPerBlock)
		s.free = make([]T, s.size)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// NewColumns reads a header row. file is the base name of the file and line
// the header's 1-based line (0 when the format has no header line); both
// end up in errors.
//
// Header names match the default columns (DefaultColumns) ignoring case and
// surrounding spaces, after renaming by opts.Mapping (file column → default
// column or "-" to ignore it). A header that matches nothing is an error,
// so a typo never silently drops a column; so are duplicated columns, a
// missing name column, a missing host or topic column without a default,
// and a bad mapping or default. All of them are reported together, each a
// *RowError, joined with errors.Join. Columns with an empty header are
// ignored, as long as their cells are empty too.
func NewColumns(file string, line int, header []string, opts Options) (*Columns, error) {
	c := &Columns{file: file}
	for k := range c.at {
		c.at[k] = -1
	}
	var errs []error
	dropped := 0
	fail := func(col string, err error) {
		if len(errs) >= maxErrors {
			dropped++
			return
		}
		errs = append(errs, &RowError{File: file, Row: line, Column: col, Err: err})
	}

	// Folder settings first: they explain header errors that follow.
	mapping, merrs := normalizeMapping(opts.Mapping)
	var derrs []error
	c.defaults, c.zone, derrs = normalizeDefaults(opts.Defaults)
	dialect, err := task.ParseDialect(opts.CronDialect)
	if err != nil {
		derrs = append(derrs, fmt.Errorf("cron_dialect: %w", err))
	}
	c.dialect = dialect
	for _, err := range append(merrs, derrs...) {
		errs = append(errs, &RowError{File: file, Err: err})
	}

	seen := map[string]int{} // what a column feeds ("name", "data.Owner") → its index
	for i, h := range header {
		col := column{name: strings.TrimSpace(h)}
		switch target, mapped := mapping[strings.ToLower(col.name)]; {
		case !utf8.ValidString(col.name):
			fail(columnNumber(i), errors.New("header is not valid UTF-8 text; "+notUTF8Hint))
		case col.name == "":
			col.unnamed = true
		case mapped && (target == ignore || target == ""):
		default:
			if !mapped {
				target = col.name
			}
			k, key, err := parseTarget(target)
			if err != nil {
				fail(col.name, unknownColumn(col.name))
				break
			}
			col.kind, col.key = k, key
			feeds := k.String()
			if k == kindDataKey {
				feeds = dataPrefix + key
			}
			if prev, dup := seen[feeds]; dup {
				fail(col.name, fmt.Errorf("duplicate column: %q already gives %s; remove one or map it to %q to ignore it", c.cols[prev].name, feeds, ignore))
				break
			}
			seen[feeds] = i
			if k != kindDataKey {
				c.at[k] = i
			} else {
				c.dataKeys++
			}
		}
		c.cols = append(c.cols, col)
	}

	missing := func(k kind, why string) {
		if c.at[k] < 0 {
			fail(k.String(), fmt.Errorf("missing column%s: add a %s column, or map a column to it in the folder's mapping", why, k))
		}
	}
	missing(kindName, "")
	if c.defaults.Host == "" {
		missing(kindHost, " and no default host")
	}
	if c.defaults.Topic == "" {
		missing(kindTopic, " and no default topic")
	}
	if dropped > 0 {
		errs = append(errs, &RowError{File: file, Row: line, Err: fmt.Errorf("%d more problems in the header not shown", dropped)})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// normalizeMapping lowercases and trims the file column names of a mapping
// and checks that every target is a default column, a data.<key> column or
// "-". Two names that differ only in case must agree. A name with a bad
// target maps to "" so its column is not reported a second time.
func normalizeMapping(m map[string]string) (map[string]string, []error) {
	out := make(map[string]string, len(m))
	var errs []error
	for _, from := range slices.Sorted(maps.Keys(m)) {
		to := strings.TrimSpace(m[from])
		key := strings.ToLower(strings.TrimSpace(from))
		if to != ignore {
			if _, _, err := parseTarget(to); err != nil {
				errs = append(errs, fmt.Errorf("mapping %q: %w", from, err))
				to = ""
			}
		}
		if prev, ok := out[key]; ok && !strings.EqualFold(prev, to) {
			errs = append(errs, fmt.Errorf("mapping %q: maps to both %q and %q (names match ignoring case)", from, prev, to))
			continue
		}
		out[key] = to
	}
	return out, errs
}

// parseTarget resolves a default column name, in any case; cron_dialect,
// the folder option's spelling, names the cronDialect column too.
func parseTarget(s string) (kind, string, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "cron_dialect") {
		return kindCronDialect, "", nil
	}
	for i, name := range defaultColumns {
		if strings.EqualFold(s, name) {
			return kind(i + 1), "", nil
		}
	}
	if len(s) >= len(dataPrefix) && strings.EqualFold(s[:len(dataPrefix)], dataPrefix) {
		key := strings.TrimSpace(s[len(dataPrefix):])
		if key == "" {
			return 0, "", fmt.Errorf("target %q needs a key after %q, such as data.owner", s, dataPrefix)
		}
		return kindDataKey, key, nil
	}
	hint := ""
	if sug := suggest(s); sug != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", sug)
	}
	return 0, "", fmt.Errorf("unknown target column %q%s; known columns are %s, or %q to ignore the column", s, hint, strings.Join(DefaultColumns(), ", "), ignore)
}

// unknownColumn explains what to do with a header that matches nothing;
// more are the names a format knows beside the default columns.
func unknownColumn(name string, more ...string) error {
	hint := ""
	if s := suggest(name, more...); s != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", s)
	}
	return fmt.Errorf("unknown column%s; known columns are %s; rename it, map it to a known column in the folder's mapping, or map it to %q to ignore it",
		hint, strings.Join(append(DefaultColumns(), more...), ", "), ignore)
}

// suggest returns the default column (or one of more) closest to a
// misspelt name, if one is close enough to be what was meant.
func suggest(name string, more ...string) string {
	return suggestion.Closest(name, append(defaultColumns[:len(defaultColumns):len(defaultColumns)], more...)...)
}

// normalizeDefaults trims the defaults, uppercases the action and checks
// them once, so a bad folder setting is one file error rather than the same
// error on every row.
func normalizeDefaults(d Defaults) (Defaults, *time.Location, []error) {
	d = Defaults{
		Host:     strings.TrimSpace(d.Host),
		Topic:    strings.TrimSpace(d.Topic),
		Action:   strings.ToUpper(strings.TrimSpace(d.Action)),
		Timezone: strings.TrimSpace(d.Timezone),
	}
	probe := task.Definition{Host: d.Host, Name: "probe", Action: task.Action(d.Action), Topic: d.Topic, Timezone: d.Timezone}
	if probe.Host == "" {
		probe.Host = "probe"
	}
	if probe.Topic == "" {
		probe.Topic = "probe"
	}
	if probe.Action == "" {
		probe.Action = task.Insert
	}
	var errs []error
	for _, fe := range task.FieldErrors(probe.Validate()) {
		errs = append(errs, fmt.Errorf("default %s: %s (got %q)", fe.Field, fe.Reason, fe.Value))
	}
	loc, err := d.Location()
	if err != nil && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("default %w", err))
	}
	if loc == nil {
		loc = time.UTC
	}
	return d, loc, errs
}

// notUTF8Hint says what to do with text that is not UTF-8: most often a
// CSV file saved by Excel on Windows.
const notUTF8Hint = "save the file as UTF-8, or set the folder's csv.encoding " +
	"(windows-1252 for a CSV saved by Excel on Windows)"
