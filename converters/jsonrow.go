package converters

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jobdrop/jobdrop/task"
)

// field is one name and value of an object, in file order.
type field struct {
	name  string
	value json.RawMessage
	// text is value as a string sharing the memory of the object's text,
	// when it was read with one (scanObjectNames' src); else empty.
	text string
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
		fields = append(fields, field{name: tok.(string), value: v})
	}
	return fields, nil
}

// extension fields are read into the definition directly: they are not
// columns of the tabular formats.
var extensionFields = []string{"window", "misfire", "active"}

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
		raw, text := bytes.TrimSpace(f.value), f.text
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
			unit, every, err := frequencyObject(raw, text, c.freqNames)
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
		cell, err := jsonCell(raw, text, class)
		if err != nil {
			fail(f.name, string(raw), err)
			continue
		}
		header = append(header, f.name)
		cells = append(cells, cell)
	}
	if len(errs) > 0 {
		return Row{Line: line, Err: joinRowErrors(errs)}
	}

	cols, err := c.columns(line, header)
	if err != nil {
		return Row{Line: line, Err: err}
	}
	row := cols.Cells(line, cells)
	if len(extSet) == 0 || row.Err != nil {
		return row
	}
	row.Def.Window, row.Def.Misfire, row.Def.Active = ext.Window, ext.Misfire, ext.Active
	for _, fe := range task.FieldErrors(row.Def.Validate()) {
		errs = append(errs, &RowError{File: c.file, Row: line, Column: fe.Field, Value: clip(fe.Value), Err: errors.New(fe.Reason)})
	}
	if len(errs) > 0 {
		row.Err = joinRowErrors(errs)
	}
	return row
}

// columns are the Columns of a row whose fields are header: the last
// row's when it had the same, else those of the file's earlier rows with
// the same, else new.
func (c *jsonRows) columns(line int, header []string) (*Columns, error) {
	if c.lastCols != nil && slices.Equal(header, c.lastHeader) {
		return c.lastCols, nil
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
			return nil, err
		}
		if len(c.cache) < 64 {
			c.cache[string(c.sig)] = cols
		}
	}
	c.lastCols, c.lastHeader = cols, append(c.lastHeader[:0], header...)
	return cols, nil
}

// fieldClass is what a field of a JSON object feeds.
type fieldClass uint8

const (
	fieldColumn   fieldClass = iota
	fieldData                // the data column: an object is welcome
	fieldAfter               // an array of names is welcome
	fieldRetry               // a retry object is welcome
	fieldDuration            // delay or timeout: a number counts milliseconds
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
		switch k, _, err := parseTarget(target); {
		case err != nil:
			class = fieldUnknown
		case k == kindData:
			class = fieldData
		case k == kindAfter:
			class = fieldAfter
		case k == kindRetry:
			class = fieldRetry
		case k == kindDelay || k == kindTimeout:
			class = fieldDuration
		}
	}
	if len(c.known) < maxNames {
		c.known[name] = classifiedField{target, class}
	}
	return target, class
}

func isExtension(name string) bool {
	for _, e := range extensionFields {
		if strings.EqualFold(name, e) {
			return true
		}
	}
	return false
}

// decodeExtension reads window, misfire or active into d.
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
	}
	return nil
}

// frequencyObject reads light-scheduler's {"timeUnit": …, "time": …};
// text is raw as a string, or empty (see scanObjectNames' src). names,
// when not nil, interns the field names read.
func frequencyObject(raw []byte, text string, names *fieldNames) (unit, every string, err error) {
	const want = `must be an object {"timeUnit": "MINUTES", "time": 5} or null`
	if string(raw) == "null" {
		return "", "", nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return "", "", errors.New(want)
	}
	var small [4]field
	if fields, ok := scanObjectNames(raw, text, small[:0], names); ok {
		for _, f := range fields {
			text, err := scalarText(f.value, f.text, false)
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
		text, err := scalarText(bytes.TrimSpace(v), "", false)
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

// jsonCell is the cell of a field's JSON value raw, whose string is text
// or, when text is empty, allocated (see scalarText): the
// after field also takes an array of names and the retry field an object,
// both as their JSON text, which the columns read; a number under delay
// or timeout counts milliseconds, as timeout always has in JSON job
// lists.
func jsonCell(raw []byte, text string, class fieldClass) (Cell, error) {
	if len(raw) > 0 {
		switch c := raw[0]; {
		case class == fieldAfter && c == '[':
			return Cell{Text: textOf(raw, text)}, nil
		case class == fieldRetry && c == '{':
			return Cell{Text: textOf(raw, text)}, nil
		case class == fieldDuration && (c == '-' || '0' <= c && c <= '9'):
			return Cell{Text: textOf(raw, text), Millis: true}, nil
		}
	}
	text, err := scalarText(raw, text, class == fieldData)
	if err == nil && class == fieldDuration && len(raw) > 0 && raw[0] == '"' && looksNumeric(strings.TrimSpace(text)) {
		err = errors.New("is a number in a string, without a unit; write milliseconds as a JSON number (600000), or a duration such as 90s, 10m, 1h30m or 1d")
	}
	if err != nil && class == fieldAfter {
		err = errors.New(`must be an array of task names such as ["extract", "load"], or names separated by commas`)
	}
	if err != nil && class == fieldRetry {
		err = errors.New(`must be an object such as {"attempts": 3, "delay": 600000}, or a string such as "3 every 10m"`)
	}
	return Cell{Text: text}, err
}

// scalarText is the cell text of a JSON value: a string as is, a number
// as written, a boolean as true or false, null as empty. An object is
// taken as its JSON text where object is true (the data field). text is
// raw as a string, or empty (see scanObjectNames' src).
func scalarText(raw []byte, text string, object bool) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	switch raw[0] {
	case '"':
		if s, ok := plainString(raw, text); ok {
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
			return textOf(raw, text), nil
		}
	case '[':
	default:
		return textOf(raw, text), nil
	}
	if object {
		return "", errors.New(`must be a JSON object of strings such as {"team":"ops"}`)
	}
	return "", errors.New("must be a string, number or boolean, not an object or array")
}

// textOf is raw as a string: text when it is not empty (the same bytes),
// else a copy.
func textOf(raw []byte, text string) string {
	if text != "" {
		return text
	}
	return string(raw)
}
