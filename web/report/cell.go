package report

import (
	"strconv"
	"time"
)

// Cell is one value of a report: text, a number or a time. CSV writes
// each as text; a sheet writes numbers and times as such, so that they
// sort, sum and filter as numbers and dates. The zero Cell is empty.
type Cell struct {
	s   string
	n   float64
	num bool
	t   time.Time
	// secs writes t to the second in CSV, rather than to the nanosecond.
	secs bool
}

// Text is a cell of text.
func Text(s string) Cell { return Cell{s: s} }

// Number is a cell of a whole number.
func Number(n int64) Cell { return Cell{n: float64(n), num: true} }

// Decimal is a cell of a number with a fraction.
func Decimal(f float64) Cell { return Cell{n: f, num: true} }

// When is a cell of a time; When(nil) is an empty cell.
func When(t *time.Time) Cell {
	if t == nil {
		return Cell{}
	}
	return Cell{t: *t}
}

// WhenSecs is When, written to the second in CSV.
func WhenSecs(t *time.Time) Cell {
	c := When(t)
	c.secs = true
	return c
}

// isTime reports whether c is a time.
func (c Cell) isTime() bool { return !c.t.IsZero() }

// String is c as CSV writes it: times in RFC 3339 in loc.
func (c Cell) String(loc *time.Location) string {
	switch {
	case c.num:
		return strconv.FormatFloat(c.n, 'f', -1, 64)
	case c.isTime() && c.secs:
		return c.t.In(loc).Format(time.RFC3339)
	case c.isTime():
		return c.t.In(loc).Format(time.RFC3339Nano)
	}
	return c.s
}
