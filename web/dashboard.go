package web

import (
	"net/http"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// dashboardModel is what the dashboard shows: counts, the latest files,
// the tasks due soonest and the latest executions.
type dashboardModel struct {
	Now        time.Time
	Summary    storetype.Summary
	Files      []fileRow
	Tasks      []storetype.Task
	Executions []storetype.Execution
	Hour       storetype.Activity
	Folders    []string
}

type dashboardHandler struct{ s *Server }

// ServeHTTP renders the dashboard.
func (h dashboardHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	limit := min(h.s.cfg.ListLimit, 20)
	m := dashboardModel{Now: h.s.now(), Folders: h.s.cfg.Folders}
	var err error
	if m.Hour, err = h.s.src.ActivitySince(ctx, m.Now.Add(-time.Hour)); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Summary, err = h.s.src.Summary(ctx); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Files, err = h.s.recentFiles(ctx, limit); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Tasks, err = h.s.src.Tasks(ctx, storetype.TaskFilter{Status: storetype.TaskActive, Limit: limit}); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Executions, err = h.s.src.RecentExecutions(ctx, limit); err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, "Dashboard", "dashboard", dashboardView(m))
}
