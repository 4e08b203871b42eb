package converters

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxErrors bounds the problems reported for one header or row, so a
// hostile file with a million columns cannot produce a gigantic report.
const maxErrors = 50

// columnNumber names a column that has no usable header by its position.
func columnNumber(i int) string { return "#" + strconv.Itoa(i+1) }

// rowErr is a row problem and the index of its column (-1 if none), so
// problems are reported in column order.
type rowErr struct {
	col int
	err *RowError
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

// joinRowErrors joins the problems of one row; a single one is returned
// as is, so callers can match it without unwrapping.
func joinRowErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
