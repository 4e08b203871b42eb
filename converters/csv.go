package converters

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DefaultMaxRecordBytes is the default bound on one CSV record.
const DefaultMaxRecordBytes = 1 << 20

// CSV reads comma-separated job lists: a header row naming the columns
// (see Columns), then one row per task. It accepts what spreadsheets and
// scripts write: UTF-8 with or without a byte order mark, UTF-16 with one
// (or as Options.CSV.Encoding says, Windows-1252 too), CRLF or LF line ends,
// quoted values holding commas, quotes ("") and newlines, and ";" or tab
// as the separator when the header row uses one of them instead of ","
// (Options.CSV.Delimiter forces one). encoding/csv has no other quote
// character than ", so none can be configured; Options.CSV.LazyQuotes
// accepts stray quotes.
// Blank rows are skipped. The file is read one record at a time, so its
// size is not bounded by memory.
//
// The zero value is ready to use.
type CSV struct {
	// MaxRecordBytes bounds one record, quoted newlines included, so a file
	// that is not CSV (or an unclosed quote) cannot exhaust memory. Defaults
	// to DefaultMaxRecordBytes.
	MaxRecordBytes int
}

var _ Converter = CSV{}

// Convert reads the CSV file at path; see Converter.
func (c CSV) Convert(ctx context.Context, path string, opts Options, emit func(Row) error) error {
	return convertFile(ctx, path, opts, emit, c.ConvertReader)
}

// errRecordTooLong stops the csv reader when one record exceeds the bound.
var errRecordTooLong = errors.New("record too long")

// utf8BOM is the byte order mark some editors put at the start of UTF-8.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// ConvertReader reads CSV from r as Convert does; file is the name used in
// errors. It serves callers that hold the content rather than a path (an
// upload, a test).
func (c CSV) ConvertReader(ctx context.Context, file string, r io.Reader, opts Options, emit func(Row) error) error {
	comma, err := opts.CSV.delimiter()
	if err != nil {
		return fmt.Errorf("%s: csv.delimiter %w", file, err)
	}
	br, err := decodeText(r, opts.CSV.Encoding)
	if err != nil {
		return fmt.Errorf("%s: csv.encoding %w", file, err)
	}
	if comma == 0 {
		comma = sniffComma(br)
	}
	limit := &recordLimit{r: br, max: int64(c.MaxRecordBytes)}
	if limit.max <= 0 {
		limit.max = DefaultMaxRecordBytes
	}
	cr := csv.NewReader(limit)
	cr.Comma = comma
	cr.LazyQuotes = opts.CSV.LazyQuotes
	cr.FieldsPerRecord = -1 // checked here, to say which row and by how much
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true // so `a, "b"` is a quoted value, not a bare quote

	// lastLine is the start line of the last record read, to place errors
	// that have no record of their own.
	lastLine := 0
	tooLong := func() error {
		return fmt.Errorf("%s: after line %d: a record is longer than %d bytes; is this a CSV file? (an unclosed quote also makes the rest of the file one record)", file, lastLine, limit.max)
	}

	var cols *Columns
	for cols == nil {
		rec, err := cr.Read()
		switch {
		case err == io.EOF:
			return fmt.Errorf("%s: %w: the file is empty; expected a header row naming the columns (%s), then one row per task", file, ErrNoRows, strings.Join(DefaultColumns(), ", "))
		case errors.Is(err, errRecordTooLong):
			return tooLong()
		case err != nil:
			return fmt.Errorf("%s: header: %w", file, describeCSVError(err))
		}
		limit.mark = cr.InputOffset()
		if blank(rec) {
			continue
		}
		lastLine, _ = cr.FieldPos(0)
		if cols, err = NewColumns(file, lastLine, rec, opts); err != nil {
			return err
		}
	}

	// The reader and the header go on in fill; the rows are converted on
	// several goroutines (convertBlocks).
	fill := func(b *records) error {
		b.lines, b.errs, b.fields, b.ends = b.lines[:0], b.errs[:0], b.fields[:0], b.ends[:0]
		for len(b.lines) < rowsPerBlock {
			before := cr.InputOffset()
			rec, err := cr.Read()
			if err == io.EOF {
				return io.EOF
			}
			var pe *csv.ParseError
			switch {
			case errors.Is(err, errRecordTooLong):
				return tooLong()
			case errors.As(err, &pe):
				// The reader resumes after the bad record, so later rows
				// are still checked and reported.
				if cr.InputOffset() == before {
					return fmt.Errorf("%s: row %d: %w", file, pe.StartLine, describeCSVError(pe))
				}
				lastLine = pe.StartLine
				b.lines = append(b.lines, pe.StartLine)
				b.errs = append(b.errs, &RowError{File: file, Row: pe.StartLine, Err: describeCSVError(pe)})
			case err != nil:
				return fmt.Errorf("%s: %w", file, err)
			case blank(rec):
				limit.mark = cr.InputOffset()
				continue
			default:
				lastLine, _ = cr.FieldPos(0)
				b.lines = append(b.lines, lastLine)
				b.errs = append(b.errs, nil)
			}
			b.fields = append(b.fields, rec...)
			b.ends = append(b.ends, len(b.fields))
			limit.mark = cr.InputOffset()
		}
		return nil
	}
	newConvert := func() func(*records, []Row) []Row {
		cols := cols.worker()
		return func(b *records, rows []Row) []Row {
			start := 0
			for i, line := range b.lines {
				rec := b.fields[start:b.ends[i]]
				start = b.ends[i]
				switch {
				case b.errs[i] != nil:
					rows = append(rows, Row{Line: line, Err: b.errs[i]})
				case len(rec) != cols.Len():
					hint := ""
					if len(rec) > cols.Len() {
						hint = "; a value holding the separator must be in double quotes"
					}
					rows = append(rows, Row{Line: line, Err: &RowError{File: file, Row: line,
						Err: fmt.Errorf("has %d fields, the header has %d%s", len(rec), cols.Len(), hint)}})
				default:
					rows = append(rows, cols.Row(line, rec))
				}
			}
			return rows
		}
	}
	rows, err := convertBlocks(ctx, file, fill, newConvert, emit)
	if err != nil {
		return err
	}
	if rows == 0 {
		return fmt.Errorf("%s: %w: the file has a header row but no task rows", file, ErrNoRows)
	}
	return nil
}

// records is a block of CSV records as read.
type records struct {
	lines  []int    // the line each record starts at
	errs   []error  // each record's syntax error, or nil
	fields []string // the fields of the records, one after another
	ends   []int    // where each record's fields end in fields
}

// describeCSVError says what a csv syntax error means and how to fix it.
func describeCSVError(err error) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return err
	}
	at := fmt.Sprintf("character %d", pe.Column)
	if pe.Line != pe.StartLine {
		at = fmt.Sprintf("line %d, character %d", pe.Line, pe.Column)
	}
	switch {
	case errors.Is(pe.Err, csv.ErrBareQuote):
		return fmt.Errorf(`%s: a " inside a value that does not start with one; put the whole value in double quotes and double the quotes inside it ("")`, at)
	case errors.Is(pe.Err, csv.ErrQuote) && pe.Line != pe.StartLine:
		return fmt.Errorf(`%s: a quoted value is not closed, or has text after its closing "; an open quote takes in the rows after it; double the quotes inside a quoted value ("")`, at)
	case errors.Is(pe.Err, csv.ErrQuote):
		return fmt.Errorf(`%s: text after the closing " of a quoted value, or a quote never closed; double the quotes inside a quoted value ("")`, at)
	}
	return fmt.Errorf("%s: %w", at, pe.Err)
}

// sniffComma picks the separator the header row uses: ",", or ";" or tab
// when one of those appears more often outside quotes (what spreadsheets
// write in locales where "," is the decimal mark).
func sniffComma(br *bufio.Reader) rune {
	b, _ := br.Peek(br.Size())
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	counts := map[byte]int{}
	quoted := false
	for _, c := range b {
		switch {
		case c == '"':
			quoted = !quoted
		case !quoted && (c == ',' || c == ';' || c == '\t'):
			counts[c]++
		}
	}
	best := byte(',')
	for _, c := range []byte{';', '\t'} {
		if counts[c] > counts[best] {
			best = c
		}
	}
	return rune(best)
}

// recordLimit fails reads once the csv reader has consumed more than max
// bytes past the end of the last record (mark), which bounds the memory a
// single record can take.
type recordLimit struct {
	r       io.Reader
	n, mark int64
	max     int64
}

func (l *recordLimit) Read(p []byte) (int, error) {
	if l.n-l.mark > l.max {
		return 0, errRecordTooLong
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}
