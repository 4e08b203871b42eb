package converters

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// dataMaps holds the data maps given back by Row.Recycle, empty, for the
// rows converted after theirs.
var dataMaps sync.Pool

// newData returns an empty data map: one given back if there is one.
func newData(hint int) map[string]string {
	if m, ok := dataMaps.Get().(map[string]string); ok {
		return m
	}
	return make(map[string]string, hint)
}

// Recycle gives the row's data map back to the converters, which fill it
// again for a later row, and leaves Def.Data nil. A caller that is done
// with a row, its command encoded and nothing holding the map, calls it so
// that a file of a million rows costs a few thousand maps rather than a
// million.
func (r *Row) Recycle() {
	recycleData(r.Def.Data)
	r.Def.Data = nil
}

func recycleData(m map[string]string) {
	if m != nil {
		clear(m)
		dataMaps.Put(m)
	}
}

// data merges the data column (a JSON object) and the data.<key> columns.
// A key given by both with different values is an error: neither value
// can be assumed to be the one meant.
func (b *rowBuilder) data() map[string]string {
	var out map[string]string
	if text, i := b.raw(kindData); text != "" && !b.failed(i) {
		m, err := parseData(text)
		if err != nil {
			b.fail(i, text, err)
		} else if m != nil {
			out = m
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
		// A key no two columns give: one in out is the object's.
		if prev, ok := out[col.key]; ok && prev != v {
			b.fail(i, v, fmt.Errorf("key %q is also set by column %s to %q", col.key, b.label(kindData), clip(prev)))
			continue
		}
		if out == nil {
			out = newData(b.c.dataKeys)
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
	fields, ok := scanObjectString(s, small[:0])
	if !ok || len(fields) == 0 {
		return nil, false
	}
	out := newData(len(fields))
	for _, f := range fields {
		switch c := f.value[0]; {
		case c == '"':
			v, ok := plainString(f.value, f.text)
			if !ok {
				recycleData(out)
				return nil, false
			}
			out[f.name] = v
		case c == 't' || c == 'f' || c == '-' || '0' <= c && c <= '9':
			out[f.name] = f.text // a number as written
		default:
			recycleData(out)
			return nil, false
		}
	}
	return out, true
}
