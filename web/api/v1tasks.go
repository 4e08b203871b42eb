package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/list"
)

// The task API of EventNative's synchronisation scheduler, under
// /api/v1/tasks, so that its callers work unchanged. Its words map onto
// jobdrop's: a source is a task's host, a collection its name, and one of
// its tasks (one run of a collection's synchronisation) is an execution,
// whose id is the fire id. Its statuses: SCHEDULED is an execution fired
// and not yet reported RUNNING; RUNNING, SUCCESS and FAILED are as
// recorded (an overdue execution stays RUNNING or SCHEDULED until it is
// reaped FAILED). Times are ISO 8601 in UTC to the millisecond; a time
// not known yet is "".

// seedTask is an execution in seed 004's task JSON.
type seedTask struct {
	// TaskID repeats ID: POST answers {"task_id": …}.
	TaskID     string `json:"task_id,omitempty"`
	ID         string `json:"id"`
	Source     string `json:"source"`
	Collection string `json:"collection"`
	// Priority is 0: jobdrop fires every task on time and has no
	// priorities.
	Priority   int    `json:"priority"`
	CreatedAt  string `json:"created_at"`
	StartedAt  string `json:"started_at"`
	FinishedAt string `json:"finished_at"`
	Status     string `json:"status"`
}

// Seed 004's task statuses.
const (
	seedScheduled = "SCHEDULED"
	seedRunning   = "RUNNING"
	seedFailed    = "FAILED"
	seedSuccess   = "SUCCESS"
)

// seedStatuses maps seed 004's statuses to the statuses recorded.
var seedStatuses = map[string]string{
	seedScheduled: storetype.ExecutionFired,
	seedRunning:   storetype.ExecutionRunning,
	seedFailed:    storetype.ExecutionFailed,
	seedSuccess:   storetype.ExecutionSuccess,
}

// v1Params are the filters of GET /api/v1/tasks.
var v1Params = []string{"source", "collection", "status", "start", "end"}

func seedTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(logTime)
}

// asSeedTask is e in seed 004's task JSON.
func asSeedTask(e storetype.Execution) seedTask {
	t := seedTask{ID: e.FireID, Source: e.Host, Collection: e.Name, CreatedAt: seedTime(e.FiredAt),
		StartedAt: seedTime(e.StartedAt), Status: seedScheduled}
	if e.FiredAt == nil {
		t.CreatedAt = seedTime(e.StatusAt)
	}
	switch e.Status {
	case storetype.ExecutionRunning:
		t.Status = seedRunning
	case storetype.ExecutionSuccess, storetype.ExecutionFailed:
		t.Status, t.FinishedAt = e.Status, seedTime(e.StatusAt)
	}
	return t
}

// seedFilter reads GET /api/v1/tasks's filters: source and collection
// (which needs source), status, and start and end bounding when the
// executions were created.
func (s *Server) seedFilter(q url.Values) (storetype.ExecutionFilter, error) {
	f := storetype.ExecutionFilter{Now: s.now(), Limit: list.MaxLimit}
	var err error
	if q.Get("limit") != "" || q.Get("cursor") != "" || q.Get("sort") != "" {
		if f.Sort, f.Cursor, f.Limit, err = s.lists.Page(q); err != nil {
			return f, err
		}
	}
	source, collection := q.Get("source"), q.Get("collection")
	switch {
	case collection != "" && source == "":
		return f, fmt.Errorf("collection %q: name its source too (?source=)", collection)
	case collection != "":
		f.Task = task.Key(source, collection)
	default:
		f.Host = source
	}
	if st := strings.ToUpper(q.Get("status")); st != "" {
		recorded, ok := seedStatuses[st]
		if !ok {
			return f, fmt.Errorf("status %q: want SCHEDULED, RUNNING, FAILED or SUCCESS", q.Get("status"))
		}
		f.Recorded = []string{recorded}
	}
	if f.From, err = list.Time(q, "start", false, f.Now); err != nil {
		return f, err
	}
	f.To, err = list.Time(q, "end", true, f.Now)
	return f, err
}

// v1ListTasks is GET /api/v1/tasks: {"tasks": [...]}, newest first, up
// to 1000 (?limit= asks for fewer; the Link header leads to the next
// page).
func (s *Server) v1ListTasks(w http.ResponseWriter, r *http.Request) {
	f, err := s.seedFilter(r.URL.Query())
	if err != nil {
		Error(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := s.src.Executions(r.Context(), f)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	tasks := make([]seedTask, 0, len(p.Rows))
	for _, e := range p.Rows {
		tasks = append(tasks, asSeedTask(e))
	}
	list.Headers(w, r, v1Params, p)
	s.writeJSON(w, r, map[string]any{"tasks": tasks})
}

// v1GetTask is GET /api/v1/tasks/{id}.
func (s *Server) v1GetTask(w http.ResponseWriter, r *http.Request) {
	e, err := s.src.ExecutionByFireID(r.Context(), r.PathValue("id"))
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, asSeedTask(e))
}

// v1TaskLogs is GET /api/v1/tasks/{id}/logs?start=&end=.
func (s *Server) v1TaskLogs(w http.ResponseWriter, r *http.Request) {
	s.getLogs(w, r, r.PathValue("id"))
}

// v1PostTask is POST /api/v1/tasks?source=&collection=: run the task now.
// It answers 201 with the new execution, which the engine fires at once
// (SCHEDULED until a worker reports it RUNNING); 200 with the execution
// under way when one of the task is RUNNING already, as the seed's
// double-checked lock would; 404 when there is no such task or it ended
// (deleted, or its last occurrence fired); 409 when it is paused: resume
// it first. Two requests at the same instant on two nodes may both fire
// it: the check reads each node's view, and no lock spans the nodes.
func (s *Server) v1PostTask(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.Operator) || !s.writable(w) {
		return
	}
	q := r.URL.Query()
	source, collection := strings.TrimSpace(q.Get("source")), strings.TrimSpace(q.Get("collection"))
	if source == "" || collection == "" {
		Error(w, http.StatusBadRequest, "want ?source=HOST&collection=NAME: the host and name of the task to run")
		return
	}
	key := task.Key(source, collection)
	t, err := s.src.TaskByKey(r.Context(), key)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	switch {
	case !t.Live():
		Error(w, http.StatusNotFound, "task "+key+" is "+t.Status)
		return
	case t.Paused:
		Error(w, http.StatusConflict, "task "+key+" is paused: resume it first")
		return
	}
	running, err := s.src.Executions(r.Context(), storetype.ExecutionFilter{Task: key, Recorded: []string{storetype.ExecutionRunning},
		Now: s.now(), Limit: 1})
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	if len(running.Rows) > 0 {
		st := asSeedTask(running.Rows[0])
		st.TaskID = st.ID
		s.writeJSON(w, r, st)
		return
	}
	id, err := s.cmd.Trigger(r.Context(), actor(r), source, collection)
	if err != nil {
		s.sendFailed(w, r, err)
		return
	}
	now := s.now()
	w.Header().Set("Location", "/api/v1/tasks/"+url.PathEscape(id))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	s.writeJSON(w, r, seedTask{TaskID: id, ID: id, Source: source, Collection: collection, CreatedAt: seedTime(&now), Status: seedScheduled})
}
