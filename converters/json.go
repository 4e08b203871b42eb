package converters

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// JSON reads job lists in JSON: an array of objects, or JSON Lines (one
// object per line), told apart by the first character of the file. Each
// object is one task; its field names are the columns (see Columns), so
// the folder's mapping and defaults apply as to a CSV header. data may be
// an object, frequency the nested {"timeUnit", "time"} object, start and
// end epoch milliseconds as numbers: a light-scheduler TaskDefinition
// converts unchanged. after may be an array of names, retry an object
// (task.Retry's), and delay and timeout a number of milliseconds, beside
// the text a cell holds. The extensions window, misfire and active are
// read as the task package defines them.
//
// The file is read one object at a time. Row numbers are the element's
// position (1-based) in an array, the line in JSON Lines.
//
// The zero value is ready to use.
type JSON struct {
	// MaxRecordBytes bounds one object. Defaults to DefaultMaxRecordBytes.
	MaxRecordBytes int
}

var _ Converter = JSON{}

// Convert reads the JSON file at path; see Converter.
func (j JSON) Convert(ctx context.Context, path string, opts Options, emit func(Row) error) error {
	return convertFile(ctx, path, opts, emit, j.ConvertReader)
}

// jsonExpected says what a JSON job list looks like.
const jsonExpected = `expected a JSON array of task objects ([{"host": …, "name": …}, …]) or JSON Lines (one object per line)`

// ConvertReader reads JSON from r as Convert does; file is the name used
// in errors.
func (j JSON) ConvertReader(ctx context.Context, file string, r io.Reader, opts Options, emit func(Row) error) error {
	// Folder settings are checked once, so they are one file error.
	if _, err := NewColumns(file, 0, []string{"host", "name", "topic"}, opts); err != nil {
		return err
	}
	max := int64(j.MaxRecordBytes)
	if max <= 0 {
		max = DefaultMaxRecordBytes
	}
	br := bufio.NewReaderSize(r, 64<<10)
	if b, _ := br.Peek(len(utf8BOM)); bytes.Equal(b, utf8BOM) {
		_, _ = br.Discard(len(utf8BOM))
	}
	first, err := firstNonSpace(br)
	switch {
	case err == io.EOF:
		return fmt.Errorf("%s: %w: the file is empty; %s", file, ErrNoRows, jsonExpected)
	case err != nil:
		return fmt.Errorf("%s: %w", file, err)
	}
	var n int
	switch first {
	case '[':
		n, err = newJSONRows(file, opts).array(ctx, br, max, emit)
	case '{':
		n, err = jsonLines(ctx, file, opts, br, max, emit)
	default:
		return fmt.Errorf("%s: starts with %q: %s", file, first, jsonExpected)
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: %w: no task objects in the file", file, ErrNoRows)
	}
	return nil
}

// firstNonSpace peeks at the first byte that is not JSON white space.
func firstNonSpace(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b, br.UnreadByte()
	}
}

// jsonRows converts the objects of one file.
type jsonRows struct {
	file    string
	opts    Options
	mapping map[string]string
	// cache holds the Columns of each set of field names seen, as the
	// objects of one file mostly share theirs.
	cache map[string]*Columns
	// names and freqNames (frequency objects') intern field names; known
	// caches what each name feeds.
	names, freqNames *fieldNames
	known            map[string]classifiedField
	// lastHeader and lastCols are the last row's header and Columns.
	lastHeader []string
	lastCols   *Columns
	// fields, header, cells and sig are reused from row to row.
	fields []field
	header []string
	cells  []Cell
	sig    []byte
}

func newJSONRows(file string, opts Options) *jsonRows {
	c := &jsonRows{file: file, opts: opts, cache: map[string]*Columns{}, names: newFieldNames(), freqNames: newFieldNames(), known: map[string]classifiedField{}}
	c.mapping, _ = normalizeMapping(opts.Mapping)
	return c
}

// array reads a JSON array one element at a time.
func (c *jsonRows) array(ctx context.Context, br *bufio.Reader, max int64, emit func(Row) error) (int, error) {
	limit := &recordLimit{r: br, max: max}
	dec := json.NewDecoder(limit)
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // the [ seen by firstNonSpace
		return 0, fmt.Errorf("%s: %w", c.file, err)
	}
	n := 0
	fail := func(elem int, err error) error {
		if errors.Is(err, errRecordTooLong) {
			return fmt.Errorf("%s: element %d is longer than %d bytes; is this a job list?", c.file, elem, max)
		}
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return fmt.Errorf("%s: element %d: invalid JSON at byte %d: %v", c.file, elem, syn.Offset, syn)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: element %d: the file ends inside the array (truncated?)", c.file, elem)
		}
		return fmt.Errorf("%s: element %d: %w", c.file, elem, err)
	}
	for elem := 1; ; elem++ {
		if elem%64 == 0 {
			if err := ctx.Err(); err != nil {
				return n, fmt.Errorf("%s: %w", c.file, err)
			}
		}
		limit.mark = dec.InputOffset()
		if !dec.More() {
			break
		}
		fields, err := readObject(dec)
		if err != nil {
			var notObj *notObjectError
			if !errors.As(err, &notObj) {
				return n, fail(elem, err)
			}
			n++
			if err := emit(Row{Line: elem, Err: &RowError{File: c.file, Row: elem, Value: clip(notObj.got), Err: errors.New("is not an object; " + jsonExpected)}}); err != nil {
				return n, err
			}
			continue
		}
		n++
		if err := emit(c.row(elem, fields)); err != nil {
			return n, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return n, fail(0, err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		return n, fmt.Errorf("%s: unexpected %v after the array: one array per file", c.file, tok)
	}
	return n, nil
}

// decodeLine reads a line of JSON Lines, text, with encoding/json: what
// scanObject does not read, or to say what is wrong with it.
func decodeLine(text []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	fields, err := readObject(dec)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("text after the object; put one object per line")
		}
	}
	return fields, err
}

// line converts one line of JSON Lines, text (which it may keep no part
// of); blank says the line is blank, so no row.
func (c *jsonRows) line(line int, text []byte) (_ Row, blank bool) {
	text = bytes.TrimSpace(text)
	if len(text) == 0 {
		return Row{}, true
	}
	// One string holds the line: every value of the row is part of it.
	if fields, ok := scanObjectNames(text, string(text), c.fields[:0], c.names); ok {
		c.fields = fields
		row := c.row(line, fields)
		clear(fields)
		return row, false
	}
	fields, err := decodeLine(text)
	if err == nil {
		return c.row(line, fields), false
	}
	var syn *json.SyntaxError
	var notObj *notObjectError
	switch {
	case errors.As(err, &syn):
		err = fmt.Errorf("invalid JSON at character %d: %v", syn.Offset, syn)
	case errors.As(err, &notObj):
		err = errors.New("is not an object; put one task object per line")
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = errors.New("the object is not closed on its line; put one whole object per line")
	}
	return Row{Line: line, Err: &RowError{File: c.file, Row: line, Value: clip(string(text)), Err: err}}, false
}

// readLine reads one line, failing past max bytes. The line is valid
// until the next read of br.
func readLine(br *bufio.Reader, max int64) ([]byte, error) {
	frag, err := br.ReadSlice('\n')
	switch {
	case int64(len(frag)) > max:
		return nil, errRecordTooLong
	case err == nil || err == io.EOF && len(frag) > 0:
		return frag, nil
	case err != bufio.ErrBufferFull:
		return nil, err
	}
	line := append([]byte(nil), frag...)
	for {
		frag, err := br.ReadSlice('\n')
		if int64(len(line)+len(frag)) > max {
			return nil, errRecordTooLong
		}
		line = append(line, frag...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) > 0:
			return line, nil
		case err != nil:
			return nil, err
		}
		return line, nil
	}
}
