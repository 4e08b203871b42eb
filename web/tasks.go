package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/list"
)

// tasksModel is the task list, filtered by state, host, name, file,
// topic and next fire.
type tasksModel struct {
	Now        time.Time
	Query      url.Values
	Filter     storetype.TaskFilter
	CanOperate bool
	Back       string
	Tasks      []storetype.Task
	Pager      list.Pager
}

type tasksHandler struct{ s *Server }

// ServeHTTP renders a page of the tasks its filters select: status, host,
// name, file, topic, from and to (of the next fire).
func (h tasksHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if canonical(w, r, list.TaskParams) {
		return
	}
	f, err := h.s.lists.Tasks(r.URL.Query())
	if err != nil {
		h.s.badRequest(w, r, err.Error())
		return
	}
	m := tasksModel{Now: h.s.now(), Query: list.Query(r.URL.Query(), list.TaskParams), Filter: f, CanOperate: h.s.canOperate(r), Back: r.URL.RequestURI()}
	p, err := h.s.src.Tasks(r.Context(), f)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	m.Tasks, m.Pager = p.Rows, list.PagerOf(r, list.TaskParams, p, "tasks")
	h.s.page(w, r, http.StatusOK, "Tasks", "tasks", tasksView(m))
}

// canOperate reports whether the request's user may change tasks.
func (s *Server) canOperate(r *http.Request) bool {
	return s.cmd != nil && auth.Who(r.Context()).Role >= auth.Operator
}

// canDefine reports whether the page may offer what creates or replaces
// definitions (applying a held file) to the user of r.
func (s *Server) canDefine(r *http.Request) bool {
	return s.cmd != nil && auth.Who(r.Context()).Role >= auth.DefineRole
}

// taskModel is one task's page: its state, its next fires and its latest
// executions.
type taskModel struct {
	Now        time.Time
	Task       storetype.Task
	NextFires  []time.Time
	CanOperate bool
	Back       string
	Executions storetype.Page[storetype.Execution]
	// Chain is its place in its chains.
	Chain taskChainModel
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
	if m.Executions, err = h.s.src.Executions(ctx, storetype.ExecutionFilter{Task: m.Task.Key, Now: m.Now, Limit: h.s.cfg.ListLimit}); err != nil {
		h.s.fail(w, r, err)
		return
	}
	links, err := h.s.src.TaskChain(ctx, m.Task.Key, h.s.cfg.ListLimit)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	var latest *storetype.Execution
	if len(m.Executions.Rows) > 0 {
		latest = &m.Executions.Rows[0]
	}
	m.Chain = newTaskChain(m.Now, m.Task, latest, links, m.CanOperate, m.Back)
	m.NextFires = nextFires(m.Task, m.Now, h.s.cfg.PreviewFires)
	h.s.page(w, r, http.StatusOK, m.Task.Key, "tasks", taskView(m))
}

// nextFires previews a live task's next n fires from its stored
// definition and anchor, paused or not.
func nextFires(t storetype.Task, now time.Time, n int) []time.Time {
	if !t.Live() || t.Definition == "" || t.Anchor == nil {
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
// read in (unix, quartz, spring or systemd), as the engine reads it; "" when the
// definition has no cron expression. The task page shows it, since the
// same expression fires on other days in another dialect.
func cronDialectOf(definition string) string {
	var d task.Definition
	if definition == "" || json.Unmarshal([]byte(definition), &d) != nil || d.Cron == "" {
		return ""
	}
	return string(d.Dialect())
}
