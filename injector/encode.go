package injector

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/jobdrop/jobdrop/task"
)

// appendDefinition appends the JSON of d to buf: the very bytes
// json.Marshal(d) gives (field order, omitempty, sorted data keys, the
// escaping of <, >, &, U+2028, U+2029 and invalid UTF-8), without
// reflection. A definition with a window, a message or a retry policy,
// rare in files, is encoded by encoding/json.
func appendDefinition(buf []byte, d *task.Definition) []byte {
	if d.Window != nil || d.Message != nil || d.Retry != nil {
		v, err := json.Marshal(d)
		if err != nil {
			return append(buf, "null"...)
		}
		return append(buf, v...)
	}
	buf = append(buf, `{"host":`...)
	buf = appendString(buf, d.Host)
	buf = append(buf, `,"name":`...)
	buf = appendString(buf, d.Name)
	buf = append(buf, `,"action":`...)
	buf = appendString(buf, string(d.Action))
	buf = append(buf, `,"frequency":`...)
	if f := d.Frequency; f == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, `{"timeUnit":`...)
		buf = appendString(buf, string(f.TimeUnit))
		buf = append(buf, `,"time":`...)
		buf = strconv.AppendInt(buf, int64(f.Time), 10)
		buf = append(buf, '}')
	}
	buf = append(buf, `,"topic":`...)
	buf = appendString(buf, d.Topic)
	buf = append(buf, `,"start":`...)
	if d.Start == nil {
		buf = append(buf, "null"...)
	} else {
		buf = strconv.AppendInt(buf, *d.Start, 10)
	}
	buf = append(buf, `,"data":`...)
	buf = appendData(buf, d.Data)
	if d.Cron != "" {
		buf = append(buf, `,"cron":`...)
		buf = appendString(buf, d.Cron)
	}
	if d.CronDialect != "" {
		buf = append(buf, `,"cronDialect":`...)
		buf = appendString(buf, string(d.CronDialect))
	}
	if d.Rrule != "" {
		buf = append(buf, `,"rrule":`...)
		buf = appendString(buf, d.Rrule)
	}
	if d.Timezone != "" {
		buf = append(buf, `,"timezone":`...)
		buf = appendString(buf, d.Timezone)
	}
	if d.End != nil {
		buf = append(buf, `,"end":`...)
		buf = strconv.AppendInt(buf, *d.End, 10)
	}
	if d.Misfire != "" {
		buf = append(buf, `,"misfire":`...)
		buf = appendString(buf, string(d.Misfire))
	}
	if d.Active != nil {
		buf = append(buf, `,"active":`...)
		buf = strconv.AppendBool(buf, *d.Active)
	}
	if d.Timeout != 0 {
		buf = append(buf, `,"timeout":`...)
		buf = strconv.AppendInt(buf, d.Timeout, 10)
	}
	if len(d.After) > 0 {
		buf = append(buf, `,"after":[`...)
		for i, a := range d.After {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, a)
		}
		buf = append(buf, ']')
	}
	if d.On != "" {
		buf = append(buf, `,"on":`...)
		buf = appendString(buf, string(d.On))
	}
	if d.Delay != 0 {
		buf = append(buf, `,"delay":`...)
		buf = strconv.AppendInt(buf, d.Delay, 10)
	}
	return append(buf, '}')
}

// appendData appends a data map as encoding/json does: null when nil, the
// keys sorted.
func appendData(buf []byte, m map[string]string) []byte {
	if m == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '{')
	if len(m) == 1 {
		for k, v := range m {
			buf = appendString(buf, k)
			buf = append(buf, ':')
			buf = appendString(buf, v)
		}
		return append(buf, '}')
	}
	var small [8]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, k)
		buf = append(buf, ':')
		buf = appendString(buf, m[k])
	}
	return append(buf, '}')
}

const hexDigits = "0123456789abcdef"

// safeASCII marks the ASCII bytes encoding/json writes as they are, with
// its HTML escaping on: not a control character, ", \, <, > or &.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safeASCII[b] {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '\\', '"':
				buf = append(buf, '\\', b)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
