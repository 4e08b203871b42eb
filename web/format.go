package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

// utc renders a time as people and programs read it alike: RFC 3339 in UTC.
func utc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// relative says how far t is from now, coarsely: "in 4m", "3h12m ago",
// "now".
func relative(now, t time.Time) string {
	d := t.Sub(now)
	past := d < 0
	if past {
		d = -d
	}
	if d < time.Second {
		return "now"
	}
	if past {
		return coarse(d) + " ago"
	}
	return "in " + coarse(d)
}

// coarse formats a positive duration in its two largest units: "4m",
// "3h12m", "2d5h"; "0s" below a second.
func coarse(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		s := fmt.Sprintf("%dh", int(d/time.Hour))
		if m := int(d % time.Hour / time.Minute); m > 0 {
			s += fmt.Sprintf("%dm", m)
		}
		return s
	}
	s := fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	if h := int(d % (24 * time.Hour) / time.Hour); h > 0 {
		s += fmt.Sprintf("%dh", h)
	}
	return s
}

// perMinute formats a rate a minute: whole above 10, else to a tenth.
func perMinute(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

// fileURL links to a file's page.
func fileURL(id string) string { return "/files/" + url.PathEscape(id) }

// taskURL links to a task's page. Host and name are escaped apart so the
// key keeps its one readable slash; a slash inside the name is escaped.
func taskURL(key string) string {
	host, name, ok := task.SplitKey(key)
	if !ok {
		return "/tasks/" + url.PathEscape(key)
	}
	return "/tasks/" + url.PathEscape(host) + "/" + url.PathEscape(name)
}

// size renders a byte count for people.
func size(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
	}
}

// statusClass picks the badge style for a file, task or execution status.
func statusClass(status string) string {
	return "badge badge-" + strings.ToLower(status)
}

// orDash shows "—" for an empty value.
func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// prettyJSON indents a JSON document for reading; other text is returned
// as it is.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		return s
	}
	return buf.String()
}

// actionURL is the API route that applies verb to one task.
func actionURL(key, verb string) string {
	return "/api" + taskURL(key) + "/" + verb
}

// diffClass styles a line of a sync's diff by its kind: "+ …" added,
// "~ …" changed, "- …" removed (after the "row N: " a line may start
// with).
func diffClass(line string) string {
	if _, rest, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(line, "row ") {
		line = rest
	}
	switch {
	case strings.HasPrefix(line, "+"):
		return "diff-add"
	case strings.HasPrefix(line, "~"):
		return "diff-change"
	case strings.HasPrefix(line, "-"):
		return "diff-remove"
	}
	return ""
}

// pathParts cuts a word longer than a short path after each slash but
// those of "://", and a piece still that long after each dot too:
// "s3://bucket/2026/11/x.parquet" is "s3://bucket/", "2026/", "11/",
// "x.parquet". Shorter words come whole.
func pathParts(w string) []string {
	if len(w) <= shortWord {
		return []string{w}
	}
	var parts []string
	for _, p := range cutAfter(w, func(i int) bool {
		return w[i] == '/' && w[i+1] != '/' && (i == 0 || w[i-1] != ':' && w[i-1] != '/')
	}) {
		if len(p) <= shortWord {
			parts = append(parts, p)
			continue
		}
		parts = append(parts, cutAfter(p, func(i int) bool { return p[i] == '.' })...)
	}
	return parts
}

// shortWord is as long as a word of prose comes whole.
const shortWord = 24

// cutAfter cuts s after each byte i (but its last) that at says to.
func cutAfter(s string, at func(i int) bool) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s)-1; i++ {
		if at(i) {
			parts = append(parts, s[start:i+1])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}
