package converters

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jobdrop/jobdrop/task"
)

// JSON reads job lists in JSON: an array of objects, or JSON Lines (one
// object per line), told apart by the first character of the file. Each
// object is one task; its field names are the columns (see Columns), so
// the folder's mapping and defaults apply as to a CSV header. data may be
// an object, frequency the nested {"timeUnit", "time"} object, start and
// end epoch milliseconds as numbers: a light-scheduler TaskDefinition
// converts unchanged. The extensions window, misfire, active and timeout
// are read as the task package defines them.
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
	conv := &jsonRows{file: file, opts: opts, cache: map[string]*Columns{}, names: map[string]string{}, known: map[string]classifiedField{}}
	conv.mapping, _ = normalizeMapping(opts.Mapping)
	var n int
	switch first {
	case '[':
		n, err = conv.array(ctx, br, max, emit)
	case '{':
		n, err = conv.lines(ctx, br, max, emit)
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
	// names interns field names; known caches what each name feeds.
	names map[string]string
	known map[string]classifiedField
	// fields, header, cells and sig are reused from row to row.
	fields []field
	header []string
	cells  []Cell
	sig    []byte
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

// lines reads JSON Lines: one object per line, blank lines skipped. A line
// that is not an object is a row error, and the next line is read.
func (c *jsonRows) lines(ctx context.Context, br *bufio.Reader, max int64, emit func(Row) error) (int, error) {
	n := 0
	for line := 1; ; line++ {
		if line%64 == 0 {
			if err := ctx.Err(); err != nil {
				return n, fmt.Errorf("%s: %w", c.file, err)
			}
		}
		text, err := readLine(br, max)
		if errors.Is(err, errRecordTooLong) {
			return n, fmt.Errorf("%s: line %d is longer than %d bytes; is this a JSON Lines file?", c.file, line, max)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("%s: %w", c.file, err)
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		if fields, ok := scanObjectNames(text, c.fields[:0], c.names); ok {
			c.fields = fields
			n++
			row := c.row(line, fields)
			clear(fields)
			if err := emit(row); err != nil {
				return n, err
			}
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.UseNumber()
		fields, err := readObject(dec)
		if err == nil {
			if _, terr := dec.Token(); terr != io.EOF {
				err = errors.New("text after the object; put one object per line")
			}
		}
		n++
		row := Row{Line: line}
		if err != nil {
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
			row.Err = &RowError{File: c.file, Row: line, Value: clip(string(text)), Err: err}
		} else {
			row = c.row(line, fields)
		}
		if err := emit(row); err != nil {
			return n, err
		}
	}
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

// field is one name and value of an object, in file order.
type field struct {
	name  string
	value json.RawMessage
}

// notObjectError is an array element or line that is valid JSON but not
// an object.
type notObjectError struct{ got string }

func (e *notObjectError) Error() string { return "not an object" }

// readObject reads one object from dec, keeping its fields in order.
func readObject(dec *json.Decoder) ([]field, error) {
	var first json.RawMessage
	if err := dec.Decode(&first); err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(first); len(t) == 0 || t[0] != '{' {
		return nil, &notObjectError{string(t)}
	}
	inner := json.NewDecoder(bytes.NewReader(first))
	inner.UseNumber()
	if _, err := inner.Token(); err != nil {
		return nil, err
	}
	var fields []field
	for inner.More() {
		tok, err := inner.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := inner.Decode(&v); err != nil {
			return nil, err
		}
		fields = append(fields, field{tok.(string), v})
	}
	return fields, nil
}

// extension fields are read into the definition directly: they are not
// columns of the tabular formats.
var extensionFields = []string{"window", "misfire", "active", "timeout"}

// jsonOnlyFields are the fields a JSON job list knows beside the default
// columns.
var jsonOnlyFields = append([]string{"frequency"}, extensionFields...)

// row converts one object.
func (c *jsonRows) row(line int, fields []field) Row {
	header, cells := c.header[:0], c.cells[:0]
	defer func() {
		clear(cells)
		c.header, c.cells = header[:0], cells[:0]
	}()
	var errs []error
	var ext *task.Definition // the extensions, once one is met
	var extSet map[string]bool
	fail := func(name, value string, err error) {
		errs = append(errs, &RowError{File: c.file, Row: line, Column: name, Value: clip(value), Err: err})
	}
	for _, f := range fields {
		raw := bytes.TrimSpace(f.value)
		target, class := c.classify(f.name)
		switch class {
		case fieldExtension:
			if ext == nil {
				ext = &task.Definition{}
			}
			if err := decodeExtension(strings.ToLower(target), raw, ext); err != nil {
				fail(f.name, string(raw), err)
			}
			if extSet == nil {
				extSet = map[string]bool{}
			}
			extSet[strings.ToLower(target)] = true
			continue
		case fieldFrequency:
			unit, every, err := frequencyObject(raw, c.names)
			if err != nil {
				fail(f.name, string(raw), err)
				continue
			}
			if unit != "" || every != "" {
				header = append(header, "timeUnit", "time")
				cells = append(cells, Cell{Text: unit}, Cell{Text: every})
			}
			continue
		case fieldIgnored:
			continue
		case fieldUnknown:
			// Said here rather than by the columns, which know nothing of
			// the fields only JSON has, and before the value is read: the
			// name is what is wrong.
			fail(f.name, "", unknownColumn(f.name, jsonOnlyFields...))
			continue
		}
		text, err := scalarText(raw, class == fieldData)
		if err != nil {
			fail(f.name, string(raw), err)
			continue
		}
		header = append(header, f.name)
		cells = append(cells, Cell{Text: text})
	}
	if len(errs) > 0 {
		return Row{Line: line, Err: joinRowErrors(errs)}
	}

	c.sig = c.sig[:0]
	for i, h := range header {
		if i > 0 {
			c.sig = append(c.sig, 0)
		}
		c.sig = append(c.sig, h...)
	}
	cols, ok := c.cache[string(c.sig)]
	if !ok {
		var err error
		if cols, err = NewColumns(c.file, line, header, c.opts); err != nil {
			return Row{Line: line, Err: err}
		}
		if len(c.cache) < 64 {
			c.cache[string(c.sig)] = cols
		}
	}
	row := cols.Cells(line, cells)
	if len(extSet) == 0 || row.Err != nil {
		return row
	}
	row.Def.Window, row.Def.Misfire, row.Def.Active, row.Def.Timeout = ext.Window, ext.Misfire, ext.Active, ext.Timeout
	for _, fe := range task.FieldErrors(row.Def.Validate()) {
		errs = append(errs, &RowError{File: c.file, Row: line, Column: fe.Field, Value: clip(fe.Value), Err: errors.New(fe.Reason)})
	}
	if len(errs) > 0 {
		row.Err = joinRowErrors(errs)
	}
	return row
}

// fieldClass is what a field of a JSON object feeds.
type fieldClass uint8

const (
	fieldColumn fieldClass = iota
	fieldData              // the data column: an object is welcome
	fieldExtension
	fieldFrequency
	fieldIgnored
	fieldUnknown
)

// classifiedField is a field name's target after the folder's mapping and
// what it feeds.
type classifiedField struct {
	target string
	class  fieldClass
}

// classify says what the field name feeds, after the folder's mapping,
// once per name of the file.
func (c *jsonRows) classify(name string) (string, fieldClass) {
	if k, ok := c.known[name]; ok {
		return k.target, k.class
	}
	target := name
	if to, ok := c.mapping[strings.ToLower(strings.TrimSpace(name))]; ok {
		target = to
	}
	class := fieldColumn
	switch {
	case isExtension(target):
		class = fieldExtension
	case strings.EqualFold(target, "frequency"):
		class = fieldFrequency
	case strings.TrimSpace(target) == ignore:
		class = fieldIgnored
	default:
		if _, _, err := parseTarget(target); err != nil {
			class = fieldUnknown
		} else if strings.EqualFold(target, "data") {
			class = fieldData
		}
	}
	if len(c.known) < maxNames {
		c.known[name] = classifiedField{target, class}
	}
	return target, class
}

func joinRowErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

func isExtension(name string) bool {
	for _, e := range extensionFields {
		if strings.EqualFold(name, e) {
			return true
		}
	}
	return false
}

// decodeExtension reads window, misfire, active or timeout into d.
func decodeExtension(name string, raw []byte, d *task.Definition) error {
	if string(raw) == "null" {
		return nil
	}
	strict := func(v any, want string) error {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("must be %s", want)
		}
		return nil
	}
	switch name {
	case "window":
		return strict(&d.Window, `an object such as {"from": "08:00", "to": "18:00", "days": ["MON", "FRI"]}`)
	case "misfire":
		var s string
		err := strict(&s, "FIRE_ONCE, FIRE_ALL or SKIP")
		d.Misfire = task.Misfire(strings.ToUpper(strings.TrimSpace(s)))
		return err
	case "active":
		return strict(&d.Active, "true or false")
	case "timeout":
		return strict(&d.Timeout, "a whole number of milliseconds")
	}
	return nil
}

// frequencyObject reads light-scheduler's {"timeUnit": …, "time": …}.
// names, when not nil, interns the field names read (see scanObjectNames).
func frequencyObject(raw []byte, names map[string]string) (unit, every string, err error) {
	const want = `must be an object {"timeUnit": "MINUTES", "time": 5} or null`
	if string(raw) == "null" {
		return "", "", nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return "", "", errors.New(want)
	}
	var small [4]field
	if fields, ok := scanObjectNames(raw, small[:0], names); ok {
		for _, f := range fields {
			text, err := scalarText(f.value, false)
			switch {
			case err != nil:
				ok = false
			case strings.EqualFold(f.name, "timeUnit"):
				unit = text
			case strings.EqualFold(f.name, "time"):
				every = text
			default:
				ok = false
			}
		}
		if ok && unit != "" && every != "" {
			return unit, every, nil
		}
		unit, every = "", ""
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", "", errors.New(want)
	}
	for k, v := range m {
		text, err := scalarText(bytes.TrimSpace(v), false)
		switch {
		case err != nil:
			return "", "", fmt.Errorf("%s: %s %w", want, k, err)
		case strings.EqualFold(k, "timeUnit"):
			unit = text
		case strings.EqualFold(k, "time"):
			every = text
		default:
			return "", "", fmt.Errorf("%s: unknown field %q", want, k)
		}
	}
	if unit == "" || every == "" {
		return "", "", fmt.Errorf("%s: both timeUnit and time are needed", want)
	}
	return unit, every, nil
}

// scalarText is the cell text of a JSON value: a string as is, a number
// as written, a boolean as true or false, null as empty. An object is
// taken as its JSON text where object is true (the data field).
func scalarText(raw []byte, object bool) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	switch raw[0] {
	case '"':
		if s, ok := plainString(raw); ok {
			return s, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	case 'n':
		return "", nil
	case '{':
		if object {
			return string(raw), nil
		}
	case '[':
	default:
		return string(raw), nil
	}
	if object {
		return "", errors.New(`must be a JSON object of strings such as {"team":"ops"}`)
	}
	return "", errors.New("must be a string, number or boolean, not an object or array")
}
