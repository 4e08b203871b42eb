package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/list"
)

// tasksSource is a Source that knows tasks by key, and nothing else.
type tasksSource struct {
	Source
	tasks map[string]storetype.Task
}

func (s tasksSource) TaskByKey(_ context.Context, key string) (storetype.Task, error) {
	t, ok := s.tasks[key]
	if !ok {
		return t, fmt.Errorf("task %s: %w", key, storetype.ErrNotFound)
	}
	return t, nil
}

// sentCommands is a Commander that keeps what it is sent.
type sentCommands struct {
	Commander
	sent []task.Definition
}

func (c *sentCommands) Send(_ context.Context, _ string, defs ...task.Definition) error {
	c.sent = append(c.sent, defs...)
	return nil
}

// allowAll is a Host that lets every request in.
type allowAll struct{ Host }

func (allowAll) Allow(http.ResponseWriter, *http.Request, auth.Role) bool { return true }

// TestSchedulersRefusesABrokenChain: POST /schedulers answers 400 naming
// each predecessor that is not a running task (none of that key, or one
// that ended) and the cycle a definition would close with the running
// tasks, as its other invalid fields; a chain of running tasks is sent.
func TestSchedulersRefusesABrokenChain(t *testing.T) {
	stored := func(status, name string, after ...string) storetype.Task {
		d := task.Definition{Host: "acme", Name: name, Action: task.Insert, Topic: "jobs", After: after}
		b, _ := json.Marshal(d)
		return storetype.Task{Key: d.Key(), Host: "acme", Name: name, Status: status, Definition: string(b)}
	}
	src := tasksSource{tasks: map[string]storetype.Task{
		"acme/extract":   stored(storetype.TaskActive, "extract"),
		"acme/paused":    stored(storetype.TaskPaused, "paused"),
		"acme/done":      stored(storetype.TaskCompleted, "done"),
		"acme/transform": stored(storetype.TaskActive, "transform", "report"),
		"acme/load":      stored(storetype.TaskActive, "load", "transform"),
	}}
	cmd := &sentCommands{}
	s, err := New(Config{Source: src, Commander: cmd, Host: allowAll{}, Lists: list.Reader{Clock: clockwork.NewFakeClock()},
		Topics: record.Topics{}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	for _, tc := range []struct {
		name   string
		after  string
		status int
		fields []fieldError
	}{
		{"running predecessors", `["extract", "paused"]`, http.StatusOK, nil},
		{"unknown and ended predecessors", `["extract", "missing", "other/x", "done"]`, http.StatusBadRequest, []fieldError{
			{Field: "after", Value: "missing", Reason: "predecessor acme/missing is not a running task"},
			{Field: "after", Value: "other/x", Reason: "predecessor other/x is not a running task"},
			{Field: "after", Value: "done", Reason: "predecessor acme/done is not a running task"},
		}},
		{"a cycle through running tasks", `["load"]`, http.StatusBadRequest, []fieldError{
			{Field: "after", Reason: "would close a cycle, acme/load → acme/report → acme/transform → acme/load: a task on a cycle waits for itself and never fires"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd.sent = nil
			body := `{"host":"acme","name":"report","topic":"jobs","after":` + tc.after + `,"on":"done","delay":60000,"retry":{"attempts":3}}`
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest("POST", "/schedulers", strings.NewReader(body)))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.status == http.StatusOK {
				if len(cmd.sent) != 1 || cmd.sent[0].Key() != "acme/report" || len(cmd.sent[0].After) != 2 {
					t.Errorf("sent %+v, want the chained definition", cmd.sent)
				}
				return
			}
			var answer struct {
				Error  string       `json:"error"`
				Fields []fieldError `json:"fields"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(answer.Error, "invalid task definition: after: ") || fmt.Sprint(answer.Fields) != fmt.Sprint(tc.fields) {
				t.Errorf("answer %+v, want fields %+v", answer, tc.fields)
			}
			if len(cmd.sent) != 0 {
				t.Errorf("a refused definition was sent: %+v", cmd.sent)
			}
		})
	}
}
