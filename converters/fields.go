package converters

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
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
	kindData
	kindDataKey // data.<key>: one data entry
	numKinds
)

// defaultColumns are the column names a file may use without any mapping,
// in the order error messages list them.
var defaultColumns = []string{"host", "name", "action", "topic", "start", "timeUnit", "time", "cron", "cronDialect", "rrule", "timezone", "end", "data"}

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

// maxErrors bounds the problems reported for one header or row, so a
// hostile file with a million columns cannot produce a gigantic report.
const maxErrors = 50

// columnNumber names a column that has no usable header by its position.
func columnNumber(i int) string { return "#" + strconv.Itoa(i+1) }

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

// Len is the number of columns of the header.
func (c *Columns) Len() int { return len(c.cols) }

// Row converts one row of text cells; see Cells.
func (c *Columns) Row(line int, cells []string) Row {
	return c.convert(line, len(cells), func(i int) Cell { return Cell{Text: cells[i]} })
}

// Cells converts one row: cells[i] is under the header's column i. A row
// may be shorter than the header (missing cells are empty, as Excel trims
// rows); a value beyond the last column is an error. line is the row's
// 1-based line or row number.
//
// Empty cells take the folder's defaults; an empty action is INSERT. The
// definition is then validated. Every problem of the row is reported, each
// a *RowError naming the file's own column, joined with errors.Join (a
// single one is returned as is); Row.Def is then partial.
func (c *Columns) Cells(line int, cells []Cell) Row {
	return c.convert(line, len(cells), func(i int) Cell { return cells[i] })
}

// rowErr is a row problem and the index of its column (-1 if none), so
// problems are reported in column order.
type rowErr struct {
	col int
	err *RowError
}

// rowBuilder holds the state of one row's conversion.
type rowBuilder struct {
	c    *Columns
	line int
	n    int
	cell func(int) Cell
	errs []rowErr
	// dropped counts the problems beyond maxErrors.
	dropped int
}

func (c *Columns) convert(line, n int, cell func(int) Cell) Row {
	b := &rowBuilder{c: c, line: line, n: n, cell: cell}
	var d task.Definition

	if cap(c.trimmed) < n {
		c.trimmed = make([]string, n)
	}
	c.trimmed = c.trimmed[:n]
	defer clear(c.trimmed)
	for i := range n {
		v := cell(i).Text
		c.trimmed[i] = strings.TrimSpace(v)
		switch {
		case i < len(c.cols) && c.cols[i].kind == kindIgnore && !c.cols[i].unnamed:
			// Mapped to "-": whatever it holds is not ours to judge.
		case !utf8.ValidString(v):
			b.fail(i, v, errors.New("is not valid UTF-8 text; "+notUTF8Hint))
		case c.trimmed[i] == "":
		case i >= len(c.cols):
			b.fail(i, v, fmt.Errorf("value beyond the last column (the header has %d columns)", len(c.cols)))
		case c.cols[i].unnamed:
			b.fail(i, v, errors.New("value under a column with no header; name the column or remove the value"))
		}
	}

	d.Host = b.text(kindHost, c.defaults.Host)
	d.Name = b.text(kindName, "")
	d.Action = task.Action(strings.ToUpper(b.text(kindAction, c.defaults.Action)))
	if d.Action == "" {
		d.Action = task.Insert
	}
	d.Topic = b.text(kindTopic, c.defaults.Topic)
	d.Cron = b.text(kindCron, "")
	warnings := b.cronDialect(&d)
	d.Rrule = b.text(kindRrule, "")

	d.Timezone = b.text(kindTimezone, c.defaults.Timezone)
	loc := c.zone
	if d.Timezone != c.defaults.Timezone {
		loc = task.Location(d.Timezone)
		if loc == nil {
			b.failKind(kindTimezone, d.Timezone, errors.New("must be an IANA time zone such as Europe/Paris"))
		}
	}

	d.Frequency = b.frequency()
	d.Start = b.time(kindStart, loc)
	d.End = b.time(kindEnd, loc)
	d.Data = b.data()

	// The time zone is checked above, through the cache: validating a copy
	// without it spares a read of the zone file for every row.
	check := d
	if loc != nil {
		check.Timezone = ""
	}
	for _, fe := range task.FieldErrors(check.Validate()) {
		k := fieldKind(fe.Field)
		i := c.at[k]
		if k == kindIgnore || i < 0 {
			b.failField(fe.Field, fe.Value, errors.New(fe.Reason))
			continue
		}
		if !b.failed(i) {
			// The cell as written is what a person searches the file for
			// (" insret", not "INSRET"; a date, not epoch milliseconds).
			v, _ := b.raw(k)
			if v == "" {
				v = fe.Value
			}
			b.fail(i, v, errors.New(fe.Reason))
		}
	}
	return Row{Line: line, Def: d, Err: b.err(), Warnings: warnings}
}

// cronDialect writes on d the dialect its cron expression is read in: the
// row's cronDialect cell, else the folder's cron_dialect, else the one
// auto picks from the expression. The task keeps it, so a later preview,
// the console and the engine read the expression alike. When neither the
// row nor the folder said which and the expression means something else in
// another dialect, it returns the warning that says so.
func (b *rowBuilder) cronDialect(d *task.Definition) []string {
	dialect := b.c.dialect
	if v, i := b.raw(kindCronDialect); v != "" && !b.failed(i) {
		stated, err := task.ParseDialect(v)
		if err != nil {
			b.fail(i, v, errors.New("must be unix, quartz, spring, systemd or auto"))
			return nil
		}
		if stated != task.DialectAuto {
			dialect = stated
		}
	}
	if d.Cron == "" {
		return nil
	}
	if dialect != task.DialectAuto {
		d.CronDialect = dialect
		return nil
	}
	d.CronDialect = task.DetectDialect(d.Cron)
	if w := task.CronAmbiguity(d.Cron); w != "" {
		return []string{fmt.Sprintf("%s: row %d: column %s: %s", b.c.file, b.line, b.label(kindCron), w)}
	}
	return nil
}

// fieldKind maps a task.FieldError field to the column kind that feeds it.
func fieldKind(field string) kind {
	switch field {
	case "frequency.timeUnit":
		return kindTimeUnit
	case "frequency.time":
		return kindTime
	}
	k, _, err := parseTarget(field)
	if err != nil || k == kindDataKey {
		return kindIgnore
	}
	return k
}

// label is the file's name for the column of kind k, or the default name
// when the file has no such column.
func (b *rowBuilder) label(k kind) string {
	if i := b.c.at[k]; i >= 0 {
		return b.c.cols[i].name
	}
	return k.String()
}

// raw is the trimmed text of the column of kind k, and its index (-1 when
// the file has no such column).
func (b *rowBuilder) raw(k kind) (string, int) {
	i := b.c.at[k]
	if i < 0 || i >= b.n {
		return "", i
	}
	return b.c.trimmed[i], i
}

// text is the column's text, or def when the cell is empty.
func (b *rowBuilder) text(k kind, def string) string {
	if v, i := b.raw(k); v != "" && !b.failed(i) {
		return v
	}
	return def
}

func (b *rowBuilder) fail(i int, value string, err error) {
	if len(b.errs) >= maxErrors {
		b.dropped++
		return
	}
	name := columnNumber(i)
	if i < len(b.c.cols) && b.c.cols[i].name != "" {
		name = b.c.cols[i].name
	}
	b.errs = append(b.errs, rowErr{i, &RowError{File: b.c.file, Row: b.line, Column: name, Value: clip(strings.TrimSpace(value)), Err: err}})
}

// failKind reports a problem in the column of kind k, or under its default
// name when the file has no such column.
func (b *rowBuilder) failKind(k kind, value string, err error) {
	if i := b.c.at[k]; i >= 0 {
		b.fail(i, value, err)
		return
	}
	b.failField(k.String(), value, err)
}

// failField reports a problem of a field no column of the file feeds.
func (b *rowBuilder) failField(field, value string, err error) {
	if len(b.errs) >= maxErrors {
		b.dropped++
		return
	}
	b.errs = append(b.errs, rowErr{-1, &RowError{File: b.c.file, Row: b.line, Column: field, Value: clip(value), Err: err}})
}

// failed reports whether column i already has a problem in this row, so
// one bad cell is reported once.
func (b *rowBuilder) failed(i int) bool {
	if i < 0 {
		return false
	}
	for _, e := range b.errs {
		if e.col == i {
			return true
		}
	}
	return false
}

func (b *rowBuilder) err() error {
	if b.dropped > 0 {
		b.errs = append(b.errs, rowErr{-1, &RowError{File: b.c.file, Row: b.line, Err: fmt.Errorf("%d more problems in this row not shown", b.dropped)}})
	}
	switch len(b.errs) {
	case 0:
		return nil
	case 1:
		return b.errs[0].err
	}
	slices.SortStableFunc(b.errs, func(x, y rowErr) int {
		xi, yi := x.col, y.col
		if xi < 0 {
			xi = len(b.c.cols) + b.n
		}
		if yi < 0 {
			yi = len(b.c.cols) + b.n
		}
		return xi - yi
	})
	errs := make([]error, len(b.errs))
	for i, e := range b.errs {
		errs[i] = e.err
	}
	return errors.Join(errs...)
}

// frequency reads timeUnit and time: both or neither.
func (b *rowBuilder) frequency() *task.Frequency {
	unitText, ui := b.raw(kindTimeUnit)
	timeText, ti := b.raw(kindTime)
	if b.failed(ui) || b.failed(ti) {
		return nil
	}
	switch {
	case unitText == "" && timeText == "":
		return nil
	case unitText == "":
		b.failKind(kindTimeUnit, "", fmt.Errorf("is required when %s is set", b.label(kindTime)))
		return nil
	case timeText == "":
		b.failKind(kindTime, "", fmt.Errorf("is required when %s is set", b.label(kindTimeUnit)))
		return nil
	}
	f := &task.Frequency{}
	ok := true
	if u, err := task.ParseTimeUnit(unitText); err != nil {
		b.fail(ui, unitText, errors.New("must be one of MILLISECONDS, SECONDS, MINUTES, HOURS, DAYS (singular or plural, any case)"))
		ok = false
	} else {
		f.TimeUnit = u
	}
	if n, err := strconv.ParseInt(timeText, 10, 32); err != nil || n <= 0 || !allDigits(timeText) {
		b.fail(ti, timeText, errors.New("must be a positive whole number (at most 2147483647)"))
		ok = false
	} else {
		f.Time = int32(n)
	}
	if !ok {
		return nil
	}
	return f
}

// timeFormats is what start and end accept, for error messages.
const timeFormats = "want RFC 3339 (2026-03-01T08:00:00+01:00), epoch milliseconds (1772348400000), or YYYY-MM-DD HH:MM[:SS] in the row's time zone"

// minEpochMillis rejects small epoch values: 1e11 ms is March 1973, so a
// smaller number is almost certainly epoch seconds, which would otherwise
// silently schedule the task in January 1970.
const minEpochMillis = 100_000_000_000

// time reads a start or end column. loc is the row's time zone for local
// times; nil when the row's zone is itself invalid (already reported).
func (b *rowBuilder) time(k kind, loc *time.Location) *int64 {
	i := b.c.at[k]
	if i < 0 || i >= b.n || b.failed(i) {
		return nil
	}
	cell := b.cell(i)
	if !cell.Time.IsZero() {
		t := cell.Time
		if cell.Local {
			if loc == nil {
				return nil
			}
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc)
		}
		return task.Ptr(t.UnixMilli())
	}
	text := strings.TrimSpace(cell.Text)
	if text == "" {
		return nil
	}
	ms, err := parseTime(text, loc)
	if errors.Is(err, errNoZone) {
		return nil
	}
	if err != nil {
		b.fail(i, text, err)
		return nil
	}
	return &ms
}

// errNoZone says a local time cannot be placed because the row's time zone
// is invalid; that is reported on the timezone column alone.
var errNoZone = errors.New("no time zone")

// localLayouts are the accepted times without an offset.
var localLayouts = []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"}

// parseTime reads a start or end value as epoch milliseconds: RFC 3339, all
// digits (epoch milliseconds), or a local date and time in loc.
func parseTime(s string, loc *time.Location) (int64, error) {
	if allDigits(s) {
		ms, err := strconv.ParseInt(s, 10, 64)
		switch {
		case err != nil:
			return 0, errors.New("epoch milliseconds out of range")
		case ms < minEpochMillis:
			return 0, errors.New("epoch milliseconds before 1973: epoch seconds? multiply by 1000")
		}
		return ms, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UnixMilli(), nil
	}
	in := loc
	if in == nil {
		in = time.UTC
	}
	for _, layout := range localLayouts {
		t, err := time.ParseInLocation(layout, s, in)
		if err != nil {
			continue
		}
		if loc == nil {
			return 0, errNoZone
		}
		return t.UnixMilli(), nil
	}
	return 0, errors.New(timeFormats)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// data merges the data column (a JSON object) and the data.<key> columns.
// A key given by both with different values is an error: neither value
// can be assumed to be the one meant.
func (b *rowBuilder) data() map[string]string {
	var out map[string]string
	var fromObject map[string]bool
	if text, i := b.raw(kindData); text != "" && !b.failed(i) {
		m, err := parseData(text)
		if err != nil {
			b.fail(i, text, err)
		} else if m != nil {
			out = m
			fromObject = make(map[string]bool, len(m))
			for k := range m {
				fromObject[k] = true
			}
		}
	}
	for i, col := range b.c.cols {
		if col.kind != kindDataKey || i >= b.n || b.failed(i) {
			continue
		}
		v := b.c.trimmed[i]
		if v == "" {
			continue
		}
		if prev, ok := out[col.key]; ok && fromObject[col.key] && prev != v {
			b.fail(i, v, fmt.Errorf("key %q is also set by column %s to %q", col.key, b.label(kindData), clip(prev)))
			continue
		}
		if out == nil {
			out = make(map[string]string, b.c.dataKeys)
		}
		out[col.key] = v
	}
	return out
}

// parseData reads a JSON object. Values must be strings; numbers and
// booleans are taken as written ({"retries": 3} gives "3"), since a person
// writing JSON by hand rarely quotes them.
func parseData(s string) (map[string]string, error) {
	if m, ok := parseFlatData(s); ok {
		return m, nil
	}
	const want = `must be a JSON object of strings such as {"team":"ops"}`
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("%s: %v at offset %d", want, syn, syn.Offset)
		}
		return nil, fmt.Errorf("%s", want)
	}
	if m == nil {
		return nil, fmt.Errorf("%s, not null", want)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: text after the object", want)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			out[k] = v.String()
		case bool:
			out[k] = strconv.FormatBool(v)
		default:
			return nil, fmt.Errorf("%s: the value of %q is not a string, number or boolean", want, k)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// parseFlatData is parseData of the common object: valid, not empty,
// every key plain and every value a plain string, a number or a boolean.
// ok is false for anything else, which parseData reads with encoding/json.
func parseFlatData(s string) (map[string]string, bool) {
	var small [8]field
	fields, ok := scanObject([]byte(s), small[:0])
	if !ok || len(fields) == 0 {
		return nil, false
	}
	out := make(map[string]string, len(fields))
	for _, f := range fields {
		switch c := f.value[0]; {
		case c == '"':
			v, ok := plainString(f.value)
			if !ok {
				return nil, false
			}
			out[f.name] = v
		case c == 't' || c == 'f' || c == '-' || '0' <= c && c <= '9':
			out[f.name] = string(f.value) // a number as written
		default:
			return nil, false
		}
	}
	return out, true
}

// clip shortens a value for an error message, so a huge cell does not make
// a huge report.
func clip(s string) string {
	const limit = 80
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// blank reports whether every cell is empty or whitespace; blank rows are
// skipped by every format.
func blank(cells []string) bool {
	for _, c := range cells {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

// RowErrors flattens a row or file error into its *RowError values.
func RowErrors(err error) []*RowError {
	var out []*RowError
	var walk func(error)
	walk = func(err error) {
		if re, ok := err.(*RowError); ok {
			out = append(out, re)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// notUTF8Hint says what to do with text that is not UTF-8: most often a
// CSV file saved by Excel on Windows.
const notUTF8Hint = "save the file as UTF-8, or set the folder's csv.encoding " +
	"(windows-1252 for a CSV saved by Excel on Windows)"
