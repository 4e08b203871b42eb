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

// recycled holds the data maps RecycleData gave back, empty, a batch a
// call, for the rows converted after theirs.
var recycled struct {
	sync.Mutex
	batches [][]map[string]string
}

// maxRecycled bounds the batches recycled holds: about as many maps as
// the rows converted ahead of their use hold.
const maxRecycled = 64

// maxRecycledKeys bounds the keys a recycled map has held: an emptied map
// keeps the room of its keys, and a file of large data objects would
// leave the stash holding it for good.
const maxRecycledKeys = 16

// RecycleData gives the data maps of rows back to the converters, which
// fill them again for later rows, and leaves each row's Def.Data nil. A
// caller done with rows, their commands encoded and nothing holding their
// maps, calls it so that a file of a million rows costs a few thousand
// maps rather than a million.
func RecycleData(rows []Row) {
	var batch []map[string]string
	for i := range rows {
		m := rows[i].Def.Data
		rows[i].Def.Data = nil
		if m == nil || len(m) > maxRecycledKeys {
			continue
		}
		if batch == nil {
			batch = make([]map[string]string, 0, len(rows)-i)
		}
		clear(m)
		batch = append(batch, m)
	}
	if len(batch) == 0 {
		return
	}
	recycled.Lock()
	if len(recycled.batches) < maxRecycled {
		recycled.batches = append(recycled.batches, batch)
	}
	recycled.Unlock()
}

// spareMaps are the empty data maps a converter took from recycled.
type spareMaps []map[string]string

// get returns an empty data map, a recycled one if there is one.
func (s *spareMaps) get(hint int) map[string]string {
	if s == nil {
		return make(map[string]string, hint)
	}
	if len(*s) == 0 {
		recycled.Lock()
		if n := len(recycled.batches); n > 0 {
			*s = recycled.batches[n-1]
			recycled.batches[n-1] = nil
			recycled.batches = recycled.batches[:n-1]
		}
		recycled.Unlock()
	}
	n := len(*s)
	if n == 0 {
		return make(map[string]string, hint)
	}
	m := (*s)[n-1]
	(*s)[n-1] = nil
	*s = (*s)[:n-1]
	return m
}

// put gives back a map get returned that is not used after all.
func (s *spareMaps) put(m map[string]string) {
	if s != nil && len(m) <= maxRecycledKeys {
		clear(m)
		*s = append(*s, m)
	}
}

// data merges the data column (a JSON object) and the data.<key> columns.
// A key given by both with different values is an error: neither value
// can be assumed to be the one meant.
func (b *rowBuilder) data() map[string]string {
	var out map[string]string
	if text, i := b.raw(kindData); text != "" && !b.failed(i) {
		m, err := parseData(text, &b.c.spare)
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
			out = b.c.spare.get(b.c.dataKeys)
		}
		out[col.key] = v
	}
	return out
}

// parseData reads a JSON object. Values must be strings; numbers and
// booleans are taken as written ({"retries": 3} gives "3"), since a person
// writing JSON by hand rarely quotes them. The common object fills a map
// of spare (nil: a new one).
func parseData(s string, spare *spareMaps) (map[string]string, error) {
	if m, ok := parseFlatData(s, spare); ok {
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
func parseFlatData(s string, spare *spareMaps) (map[string]string, bool) {
	var small [8]field
	fields, ok := scanObjectString(s, small[:0])
	if !ok || len(fields) == 0 {
		return nil, false
	}
	out := spare.get(len(fields))
	for _, f := range fields {
		switch c := f.value[0]; {
		case c == '"':
			v, ok := plainString(f.value, f.text)
			if !ok {
				spare.put(out)
				return nil, false
			}
			out[f.name] = v
		case c == 't' || c == 'f' || c == '-' || '0' <= c && c <= '9':
			out[f.name] = f.text // a number as written
		default:
			spare.put(out)
			return nil, false
		}
	}
	return out, true
}
