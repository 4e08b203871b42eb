package converters

// The fast reading of JSON job lists: most objects are flat, with plain
// strings, numbers and a small data object, and reading them with
// encoding/json's reflection and its decoder's scanner costs most of a
// row's conversion. scanObject reads such an object by hand; whatever it
// is not sure of (escaped field names, deep nesting, anything invalid)
// it leaves to encoding/json, which says what is wrong.

import "unsafe"

// maxScanDepth bounds the nesting scanObject follows before it leaves the
// object to encoding/json.
const maxScanDepth = 64

// scanObject reads text, one whole JSON object and nothing else but white
// space, into its fields in order, as readObject would. ok is false when
// the object is not plain enough or not valid: the caller then reads it
// with encoding/json.
func scanObject(text []byte, fields []field) (_ []field, ok bool) {
	return scanObjectNames(text, "", fields, nil)
}

// scanObjectString is scanObject of the text of s, whose fields' names
// and texts are parts of s: reading them allocates nothing.
func scanObjectString(s string, fields []field) (_ []field, ok bool) {
	// Only read, never written: the bytes stay s's.
	return scanObjectNames(unsafe.Slice(unsafe.StringData(s), len(s)), s, fields, nil)
}

// maxNames bounds the field names a fieldNames keeps.
const maxNames = 256

// fieldNames interns the field names of a file's objects, so that the
// names objects share are allocated once. The objects of a job list
// mostly name their fields in the same order: the names of the last
// object read are tried first, position by position, before the map.
type fieldNames struct {
	m    map[string]string
	last []string
}

func newFieldNames() *fieldNames { return &fieldNames{m: map[string]string{}} }

// intern is the k-th field name of an object, name; from src when it is
// not kept (src holds the object's text, or is empty).
func (n *fieldNames) intern(k int, name []byte, src string, at int) string {
	if n == nil {
		if src != "" {
			return src[at : at+len(name)]
		}
		return string(name)
	}
	if k < len(n.last) && n.last[k] == string(name) {
		return n.last[k]
	}
	s, ok := n.m[string(name)]
	if !ok {
		s = string(name)
		if len(n.m) < maxNames {
			n.m[s] = s
		}
	}
	n.last = append(n.last[:min(k, len(n.last))], s)
	return s
}

// scanObjectNames is scanObject taking field names from names (which
// may be nil). src, when not empty, holds the same bytes as
// text: each field's text is then its part of src, and a name not in
// names is too, so that the strings of an object cost one allocation, or
// none.
func scanObjectNames(text []byte, src string, fields []field, names *fieldNames) (_ []field, ok bool) {
	i := skipSpace(text, 0)
	if i >= len(text) || text[i] != '{' {
		return fields, false
	}
	i = skipSpace(text, i+1)
	if i < len(text) && text[i] == '}' {
		return fields, skipSpace(text, i+1) == len(text)
	}
	for {
		if i >= len(text) || text[i] != '"' {
			return fields, false
		}
		end, plain := scanString(text, i)
		if end < 0 || !plain {
			return fields, false
		}
		nameAt := i + 1
		name := text[nameAt : end-1]
		i = skipSpace(text, end)
		if i >= len(text) || text[i] != ':' {
			return fields, false
		}
		i = skipSpace(text, i+1)
		vend := scanValue(text, i, 0)
		if vend < 0 {
			return fields, false
		}
		f := field{name: names.intern(len(fields), name, src, nameAt), value: text[i:vend]}
		if src != "" {
			f.text = src[i:vend]
		}
		fields = append(fields, f)
		i = skipSpace(text, vend)
		if i >= len(text) {
			return fields, false
		}
		switch text[i] {
		case ',':
			i = skipSpace(text, i+1)
		case '}':
			return fields, skipSpace(text, i+1) == len(text)
		default:
			return fields, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString checks the JSON string starting at b[i] (a quote) and returns
// the index after its closing quote, or -1 when it is not valid. plain
// says it holds neither escapes nor bytes outside ASCII, so that its
// bytes between the quotes are its value.
func scanString(b []byte, i int) (end int, plain bool) {
	plain = true
	for i++; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, plain
		case c < 0x20:
			return -1, false
		case c >= 0x80:
			plain = false
		case c == '\\':
			plain = false
			i++
			if i >= len(b) {
				return -1, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1, false
					}
				}
				i += 4
			default:
				return -1, false
			}
		}
	}
	return -1, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanValue checks the JSON value starting at b[i] and returns the index
// after it, or -1 when it is not valid (or nested deeper than
// maxScanDepth).
func scanValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		end, _ := scanString(b, i)
		return end
	case c == '{' || c == '[':
		if depth >= maxScanDepth {
			return -1
		}
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == close {
			return i + 1
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1
				}
				if i, _ = scanString(b, i); i < 0 {
					return -1
				}
				if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
					return -1
				}
				i = skipSpace(b, i+1)
			}
			if i = scanValue(b, i, depth+1); i < 0 {
				return -1
			}
			if i = skipSpace(b, i); i >= len(b) {
				return -1
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case close:
				return i + 1
			default:
				return -1
			}
		}
	case c == '-' || '0' <= c && c <= '9':
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	}
	return -1
}

func scanLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// scanNumber checks a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = scanDigits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i = scanDigits(b, i+1); i < 0 {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = scanDigits(b, i); i < 0 {
			return -1
		}
	}
	return i
}

// scanDigits is the end of the run of digits at i, or -1 when there is
// none.
func scanDigits(b []byte, i int) int {
	start := i
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// plainString is the value of a JSON string token raw (quotes included)
// when it holds no escape and only ASCII, so its bytes are its value.
// text, when not empty, is raw as a string: the value is then part of it.
func plainString(raw []byte, text string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	end, plain := scanString(raw, 0)
	if end != len(raw) || !plain {
		return "", false
	}
	if text != "" {
		return text[1 : len(text)-1], true
	}
	return string(raw[1 : len(raw)-1]), true
}
