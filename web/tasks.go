package web

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// tasksModel is the task list, filtered by host, name, file, topic and
// state.
type tasksModel struct {
	Now        time.Time
	Status     string
	Filter     storetype.TaskFilter
	CanOperate bool
	Back       string
	Tasks      []storetype.Task
	// More is set when more tasks match than the list shows; MoreURL then
	// shows as many as the console can, when that is more.
	More    bool
	MoreURL string
}

// taskFilterParam reads the task list filters; status "paused" selects
// the active tasks that are paused.
func taskFilterParam(r *http.Request, limit int) (storetype.TaskFilter, string, error) {
	q := r.URL.Query()
	f := storetype.TaskFilter{Host: q.Get("host"), Name: q.Get("name"), Batch: q.Get("file"), Topic: q.Get("topic"), Limit: limit}
	status := q.Get("status")
	if status == "paused" {
		f.Paused = true
		return f, status, nil
	}
	st, err := taskStatusParam(r)
	f.Status = st
	return f, status, err
}

type tasksHandler struct{ s *Server }

// ServeHTTP renders the task list, filtered by ?status=, ?host=, ?name=,
// ?file= and ?topic=.
func (h tasksHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit, err := h.s.limitParam(r)
	if err != nil {
		h.s.badRequest(w, r, err.Error())
		return
	}
	// One more than shown, to tell whether there are more.
	f, status, err := taskFilterParam(r, limit+1)
	if err != nil {
		h.s.badRequest(w, r, err.Error())
		return
	}
	m := tasksModel{Now: h.s.now(), Status: status, Filter: f, CanOperate: h.s.canOperate(r), Back: r.URL.RequestURI()}
	if m.Tasks, err = h.s.src.Tasks(r.Context(), f); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if len(m.Tasks) > limit {
		m.Tasks, m.More = m.Tasks[:limit], true
		if limit < maxListLimit {
			q := r.URL.Query()
			q.Set("limit", strconv.Itoa(maxListLimit))
			m.MoreURL = "/tasks?" + q.Encode()
		}
	}
	h.s.page(w, r, http.StatusOK, "Tasks", "tasks", tasksView(m))
}

// canOperate reports whether the request's user may change tasks.
func (s *Server) canOperate(r *http.Request) bool {
	return s.cmd != nil && who(r.Context()).Role >= Operator
}

// canDefine reports whether the page may offer what creates or replaces
// definitions (applying a held file) to the user of r.
func (s *Server) canDefine(r *http.Request) bool {
	return s.cmd != nil && who(r.Context()).Role >= defineRole
}

// taskModel is one task's page: its state, its next fires and its latest
// executions.
type taskModel struct {
	Now        time.Time
	Task       storetype.Task
	NextFires  []time.Time
	CanOperate bool
	Back       string
	Executions []storetype.Execution
}

type taskHandler struct{ s *Server }

// ServeHTTP renders the page of the task /tasks/{host}/{name}.
func (h taskHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	m := taskModel{Now: h.s.now(), CanOperate: h.s.canOperate(r), Back: r.URL.RequestURI()}
	var err error
	if m.Task, err = h.s.src.TaskByKey(ctx, r.PathValue("key")); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Executions, err = h.s.src.ExecutionsByTask(ctx, m.Task.Key, h.s.cfg.ListLimit); err != nil {
		h.s.fail(w, r, err)
		return
	}
	m.NextFires = nextFires(m.Task, m.Now, h.s.cfg.PreviewFires)
	h.s.page(w, r, http.StatusOK, m.Task.Key, "tasks", taskView(m))
}

// nextFires previews a live task's next n fires from its stored
// definition and anchor, paused or not.
func nextFires(t storetype.Task, now time.Time, n int) []time.Time {
	if t.Status != storetype.TaskActive || t.Definition == "" || t.Anchor == nil {
		return nil
	}
	var d task.Definition
	if json.Unmarshal([]byte(t.Definition), &d) != nil {
		return nil
	}
	from := now.UnixMilli()
	if t.NextFire != nil {
		from = min(from, t.NextFire.UnixMilli()-1)
	}
	var out []time.Time
	for _, ms := range d.NextFires(t.Anchor.UnixMilli(), from, n) {
		out = append(out, task.Time(ms))
	}
	return out
}

// cronDialectOf is the dialect a stored definition's cron expression is
// read in (unix, quartz or spring), as the engine reads it; "" when the
// definition has no cron expression. The task page shows it, since the
// same expression fires on other days in another dialect.
func cronDialectOf(definition string) string {
	var d task.Definition
	if definition == "" || json.Unmarshal([]byte(definition), &d) != nil || d.Cron == "" {
		return ""
	}
	return string(d.Dialect())
}
