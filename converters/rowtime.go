package converters

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// timeFormats is what start and end accept, for error messages.
const timeFormats = "want RFC 3339 (2026-03-01T08:00:00+01:00), epoch milliseconds (1772348400000), or YYYY-MM-DD HH:MM[:SS] in the row's time zone"

// minEpochMillis rejects small epoch values: 1e11 ms is March 1973, so a
// smaller number is almost certainly epoch seconds, which would otherwise
// silently schedule the task in January 1970.
const minEpochMillis = 100_000_000_000

// time reads a start or end column. loc is the row's time zone for local
// times; nil when the row's zone is itself invalid (already reported).
func (b *rowBuilder) time(k kind, loc *time.Location) *int64 {
	i := b.c.at[k]
	if i < 0 || i >= b.n || b.failed(i) {
		return nil
	}
	cell := b.cells[i]
	if !cell.Time.IsZero() {
		t := cell.Time
		if cell.Local {
			if loc == nil {
				return nil
			}
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc)
		}
		p := b.c.millis.new()
		*p = t.UnixMilli()
		return p
	}
	text := strings.TrimSpace(cell.Text)
	if text == "" {
		return nil
	}
	ms, err := parseTime(text, loc)
	if errors.Is(err, errNoZone) {
		return nil
	}
	if err != nil {
		b.fail(i, text, err)
		return nil
	}
	p := b.c.millis.new()
	*p = ms
	return p
}

// errNoZone says a local time cannot be placed because the row's time zone
// is invalid; that is reported on the timezone column alone.
var errNoZone = errors.New("no time zone")

// localLayouts are the accepted times without an offset.
var localLayouts = []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"}

// parseTime reads a start or end value as epoch milliseconds: RFC 3339, all
// digits (epoch milliseconds), or a local date and time in loc.
func parseTime(s string, loc *time.Location) (int64, error) {
	if allDigits(s) {
		ms, err := strconv.ParseInt(s, 10, 64)
		switch {
		case err != nil:
			return 0, errors.New("epoch milliseconds out of range")
		case ms < minEpochMillis:
			return 0, errors.New("epoch milliseconds before 1973: epoch seconds? multiply by 1000")
		}
		return ms, nil
	}
	if zoned(s) {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	in := loc
	if in == nil {
		in = time.UTC
	}
	for _, layout := range localLayouts {
		t, err := time.ParseInLocation(layout, s, in)
		if err != nil {
			continue
		}
		if loc == nil {
			return 0, errNoZone
		}
		return t.UnixMilli(), nil
	}
	return 0, errors.New(timeFormats)
}

// zoned reports whether s ends as an RFC 3339 time must: with Z or an
// offset such as +02:00. A local time is then not parsed as one first,
// which fails at a cost.
func zoned(s string) bool {
	n := len(s)
	return n > 0 && (s[n-1] == 'Z' || s[n-1] == 'z') || n >= 6 && (s[n-6] == '+' || s[n-6] == '-')
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
