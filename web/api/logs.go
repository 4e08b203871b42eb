package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/field"
	"github.com/jobdrop/jobdrop/web/list"
)

// maxLogLines bounds the lines of one POST of log lines.
const maxLogLines = 1000

// logTime is how log lines and seed-004 tasks say a time: ISO 8601 in
// UTC, to the millisecond.
const logTime = "2006-01-02T15:04:05.000Z"

// logEntry is one log line as the API takes and answers it, in seed
// 004's shape: {time, message, level}.
type logEntry struct {
	Time    string `json:"time"`
	Message string `json:"message"`
	Level   string `json:"level"`
	Worker  string `json:"worker,omitempty"`
}

// logPost is an entry posted: its time may be an ISO string, epoch
// milliseconds, or left out (now).
type logPost struct {
	Time    json.RawMessage `json:"time"`
	Message *string         `json:"message"`
	Level   string          `json:"level"`
}

// logBatch is the posted body that names its worker: {"worker": …,
// "logs": [entries]}.
type logBatch struct {
	Worker string    `json:"worker"`
	Logs   []logPost `json:"logs"`
}

const logBodyWant = `want one entry {"time": ISO 8601 or epoch ms (optional), "message": "…", "level": "info" or "error"}, a list of them, or {"worker": "…", "logs": [entries]}`

// decodeLogs reads the body of POST /api/executions/{fireId}/logs.
func decodeLogs(body []byte, now time.Time) (worker string, lines []record.LogLine, err error) {
	body = bytes.TrimSpace(body)
	var posts []logPost
	strict := func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return err
		}
		if dec.More() {
			return errors.New("more than one JSON value")
		}
		return nil
	}
	switch {
	case bytes.HasPrefix(body, []byte("[")):
		err = strict(&posts)
	case bytes.Contains(body, []byte(`"logs"`)):
		var b logBatch
		err = strict(&b)
		worker, posts = b.Worker, b.Logs
	default:
		var p logPost
		err = strict(&p)
		posts = []logPost{p}
	}
	if err != nil {
		return "", nil, fmt.Errorf("body: %s: %v", logBodyWant, err)
	}
	if len(posts) == 0 {
		return "", nil, errors.New("body: no log entry: " + logBodyWant)
	}
	if len(posts) > maxLogLines {
		return "", nil, fmt.Errorf("body: %d entries: at most %d in one request", len(posts), maxLogLines)
	}
	for i, p := range posts {
		at := "entry " + strconv.Itoa(i+1)
		if p.Message == nil {
			return "", nil, fmt.Errorf("%s: message: required", at)
		}
		level := strings.ToLower(strings.TrimSpace(p.Level))
		switch level {
		case "":
			level = record.LevelInfo
		case record.LevelInfo, record.LevelError:
		default:
			return "", nil, fmt.Errorf("%s: level %q: want info or error", at, p.Level)
		}
		t, err := entryTime(p.Time, now)
		if err != nil {
			return "", nil, fmt.Errorf("%s: time: %w", at, err)
		}
		lines = append(lines, record.LogLine{At: t.UnixMilli(), Level: level, Message: cleanLog(*p.Message)})
	}
	return worker, lines, nil
}

// entryTime reads a posted entry's time.
func entryTime(raw json.RawMessage, now time.Time) (time.Time, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return now, nil
	}
	var ms int64
	if json.Unmarshal(raw, &ms) == nil {
		return time.UnixMilli(ms), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return time.Time{}, errors.New("want an ISO 8601 string or epoch milliseconds")
	}
	if s == "" {
		return now, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want ISO 8601 with a zone, such as 2026-11-25T10:15:00.000Z", s)
	}
	return t, nil
}

// cleanLog keeps a log message readable: no control characters but tabs
// and line breaks, and no invalid UTF-8.
func cleanLog(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < ' ' && r != '\t' && r != '\n' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// postLogs appends a worker's lines to an execution's log, through the
// status topic; the recorder stores them, as it does lines a worker
// writes to the topic itself.
func (s *Server) postLogs(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.Operator) || !s.writable(w) {
		return
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r.Body); err != nil {
		Error(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	worker, lines, err := decodeLogs(buf.Bytes(), s.now())
	if err != nil {
		Error(w, http.StatusBadRequest, err.Error())
		return
	}
	fireID := r.PathValue("fireId")
	if _, err := s.src.ExecutionByFireID(r.Context(), fireID); err != nil {
		s.apiFail(w, r, err)
		return
	}
	worker = field.Clean(worker, field.MaxName)
	if worker == "" {
		worker = actor(r)
	}
	if err := s.cmd.AppendLogs(r.Context(), record.Status{FireID: fireID, Worker: worker, At: s.now().UnixMilli(), Logs: lines}); err != nil {
		s.sendFailed(w, r, err)
		return
	}
	s.writeJSON(w, r, map[string]any{"fireId": fireID, "appended": len(lines)})
}

// logAnswer is an execution's log as the API answers it: seed 004's
// {"logs": [...]}, and how many of its oldest lines were dropped.
type logAnswer struct {
	Logs    []logEntry `json:"logs"`
	Dropped int        `json:"dropped,omitempty"`
}

// getLogs answers an execution's log, the lines of ?start= to ?end= when
// given. A log that dropped its oldest lines opens with a line that says
// how many.
func (s *Server) getLogs(w http.ResponseWriter, r *http.Request, fireID string) {
	q := r.URL.Query()
	from, err := list.Time(q, "start", false, s.now())
	if err == nil {
		var to time.Time
		to, err = list.Time(q, "end", true, s.now())
		if err == nil {
			s.answerLogs(w, r, fireID, from, to)
			return
		}
	}
	Error(w, http.StatusBadRequest, err.Error())
}

func (s *Server) answerLogs(w http.ResponseWriter, r *http.Request, fireID string, from, to time.Time) {
	if _, err := s.src.ExecutionByFireID(r.Context(), fireID); err != nil {
		s.apiFail(w, r, err)
		return
	}
	log, err := s.src.ExecutionLog(r.Context(), fireID, from, to, 0)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	a := logAnswer{Logs: []logEntry{}, Dropped: log.Dropped}
	if log.Dropped > 0 && len(log.Lines) > 0 {
		a.Logs = append(a.Logs, logEntry{Time: log.Lines[0].At.UTC().Format(logTime), Level: record.LevelInfo, Message: DroppedNote(log.Dropped)})
	}
	for _, l := range log.Lines {
		a.Logs = append(a.Logs, logEntry{Time: l.At.UTC().Format(logTime), Message: l.Message, Level: l.Level, Worker: l.Worker})
	}
	s.writeJSON(w, r, a)
}

// DroppedNote says, as a log line, how many of a log's oldest lines
// were dropped.
func DroppedNote(n int) string {
	lines := "lines"
	if n == 1 {
		lines = "line"
	}
	return fmt.Sprintf("[%d earlier %s dropped: an execution keeps the newest of its log, up to its size cap]", n, lines)
}

// apiExecutionLogs is GET /api/executions/{fireId}/logs.
func (s *Server) apiExecutionLogs(w http.ResponseWriter, r *http.Request) {
	s.getLogs(w, r, r.PathValue("fireId"))
}
