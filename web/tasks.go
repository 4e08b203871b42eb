package web

import (
	"net/http"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// tasksModel is the task list, filtered by status.
type tasksModel struct {
	Now    time.Time
	Status string
	Tasks  []storetype.Task
}

type tasksHandler struct{ s *Server }

// ServeHTTP renders the task list, filtered by ?status=.
func (h tasksHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status, err := taskStatusParam(r)
	if err != nil {
		h.s.badRequest(w, r, err.Error())
		return
	}
	m := tasksModel{Now: h.s.cfg.Now().UTC(), Status: status}
	if m.Tasks, err = h.s.src.Tasks(r.Context(), storetype.TaskFilter{Status: status, Limit: h.s.cfg.ListLimit}); err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, "Tasks", "tasks", tasksView(m))
}

// taskModel is one task's page: its state and its latest executions.
type taskModel struct {
	Now        time.Time
	Task       storetype.Task
	Executions []storetype.Execution
}

type taskHandler struct{ s *Server }

// ServeHTTP renders the page of the task /tasks/{host}/{name}.
func (h taskHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	m := taskModel{Now: h.s.cfg.Now().UTC()}
	var err error
	if m.Task, err = h.s.src.TaskByKey(ctx, r.PathValue("key")); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Executions, err = h.s.src.ExecutionsByTask(ctx, m.Task.Key, h.s.cfg.ListLimit); err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, m.Task.Key, "tasks", taskView(m))
}
