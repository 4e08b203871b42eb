package converters

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jobdrop/jobdrop/task"
)

// Len is the number of columns of the header.
func (c *Columns) Len() int { return len(c.cols) }

// worker returns Columns that convert rows as c does, on another
// goroutine than c's: they share the header, not the room a row is
// converted in.
func (c *Columns) worker() *Columns {
	w := *c
	w.trimmed, w.texts, w.spare = nil, nil, nil
	w.freqs, w.millis = slab[task.Frequency]{}, slab[int64]{}
	return &w
}

// Row converts one row of text cells; see Cells.
func (c *Columns) Row(line int, cells []string) Row {
	c.texts = slices.Grow(c.texts[:0], len(cells))[:len(cells)]
	for i, t := range cells {
		c.texts[i] = Cell{Text: t}
	}
	row := c.convert(line, c.texts)
	clear(c.texts)
	return row
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
	return c.convert(line, cells)
}

// rowBuilder holds the state of one row's conversion.
type rowBuilder struct {
	c     *Columns
	line  int
	n     int
	cells []Cell
	errs  []rowErr
	// dropped counts the problems beyond maxErrors.
	dropped int
}

func (c *Columns) convert(line int, cells []Cell) Row {
	n := len(cells)
	b := &rowBuilder{c: c, line: line, n: n, cells: cells}
	var d task.Definition

	if cap(c.trimmed) < n {
		c.trimmed = make([]string, n)
	}
	c.trimmed = c.trimmed[:n]
	defer clear(c.trimmed)
	for i := range n {
		v := cells[i].Text
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
	d.After = b.after()
	d.On = b.outcome()
	d.Delay = b.duration(kindDelay)
	d.Timeout = b.duration(kindTimeout)
	d.Retry = b.retry()

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
			reason := fe.Reason
			switch {
			case v == "":
				v = fe.Value
			case k == kindAfter && fe.Value != v && slices.Contains(d.After, fe.Value):
				// The cell names several tasks: say which one is wrong.
				reason = strconv.Quote(fe.Value) + " " + reason
			}
			b.fail(i, v, errors.New(reason))
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
	f := b.c.freqs.new()
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
