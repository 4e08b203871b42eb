package injector

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/jobdrop/jobdrop/internal/record"
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
	buf = record.AppendJSONString(buf, d.Host)
	buf = append(buf, `,"name":`...)
	buf = record.AppendJSONString(buf, d.Name)
	buf = append(buf, `,"action":`...)
	buf = record.AppendJSONString(buf, string(d.Action))
	buf = append(buf, `,"frequency":`...)
	if f := d.Frequency; f == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, `{"timeUnit":`...)
		buf = record.AppendJSONString(buf, string(f.TimeUnit))
		buf = append(buf, `,"time":`...)
		buf = strconv.AppendInt(buf, int64(f.Time), 10)
		buf = append(buf, '}')
	}
	buf = append(buf, `,"topic":`...)
	buf = record.AppendJSONString(buf, d.Topic)
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
		buf = record.AppendJSONString(buf, d.Cron)
	}
	if d.CronDialect != "" {
		buf = append(buf, `,"cronDialect":`...)
		buf = record.AppendJSONString(buf, string(d.CronDialect))
	}
	if d.Rrule != "" {
		buf = append(buf, `,"rrule":`...)
		buf = record.AppendJSONString(buf, d.Rrule)
	}
	if d.Timezone != "" {
		buf = append(buf, `,"timezone":`...)
		buf = record.AppendJSONString(buf, d.Timezone)
	}
	if d.End != nil {
		buf = append(buf, `,"end":`...)
		buf = strconv.AppendInt(buf, *d.End, 10)
	}
	if d.Misfire != "" {
		buf = append(buf, `,"misfire":`...)
		buf = record.AppendJSONString(buf, string(d.Misfire))
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
			buf = record.AppendJSONString(buf, a)
		}
		buf = append(buf, ']')
	}
	if d.On != "" {
		buf = append(buf, `,"on":`...)
		buf = record.AppendJSONString(buf, string(d.On))
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
			buf = record.AppendJSONString(buf, k)
			buf = append(buf, ':')
			buf = record.AppendJSONString(buf, v)
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
		buf = record.AppendJSONString(buf, k)
		buf = append(buf, ':')
		buf = record.AppendJSONString(buf, m[k])
	}
	return append(buf, '}')
}
