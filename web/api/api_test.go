package api

import (
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

func TestDecodeLogsTakesEachShapeAWorkerPosts(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, body, worker string
		lines              int
		err                string
	}{
		{name: "one entry", body: `{"message": "started"}`, lines: 1},
		{name: "a list", body: `[{"message": "a"}, {"message": "b", "level": "error", "time": 1764158400000}]`, lines: 2},
		{name: "with its worker", body: `{"worker": "w1", "logs": [{"message": "a", "time": "2026-11-26T11:00:00Z"}]}`, worker: "w1", lines: 1},
		{name: "no message", body: `{"level": "info"}`, err: "entry 1: message: required"},
		{name: "unknown level", body: `{"message": "a", "level": "debug"}`, err: `level "debug"`},
		{name: "unknown field", body: `{"message": "a", "colour": "red"}`, err: "unknown field"},
		{name: "empty list", body: `[]`, err: "no log entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			worker, lines, err := decodeLogs([]byte(tc.body), now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || worker != tc.worker || len(lines) != tc.lines {
				t.Fatalf("got %q, %d lines, %v; want %q, %d lines", worker, len(lines), err, tc.worker, tc.lines)
			}
		})
	}
}

func TestBulkEventsURLLeadsToThePerTaskEvents(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 1, 0, time.UTC)
	a := storetype.AuditEvent{Action: bulkPrefix + "pause", Actor: "otto", At: at, Object: "/tasks?host=acme",
		Detail: "3 tasks selected, 3 sent" + bulkSince + "2026-11-26T12:00:00Z"}
	got := BulkEventsURL(a)
	for _, want := range []string{"actor=otto", "action=" + record.ActionTaskPaused, "from=2026-11-26T12%3A00%3A00Z", "sort=oldest"} {
		if !strings.Contains(got, want) {
			t.Errorf("BulkEventsURL = %s: lacks %s", got, want)
		}
	}
	if BulkListURL(a) != "/tasks?host=acme" {
		t.Errorf("BulkListURL = %q", BulkListURL(a))
	}
	if BulkEventsURL(storetype.AuditEvent{Action: record.ActionLogin}) != "" {
		t.Error("a login has per-task events")
	}
}
