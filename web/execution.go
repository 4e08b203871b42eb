package web

import (
	"net/http"
	"net/url"
	"time"

	"github.com/a-h/templ"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// pageLogLines is the newest lines of its log an execution's page shows,
// so that a page refreshed at every line stays quick; the API answers
// them all.
const pageLogLines = 500

// executionModel is one execution's page: what was recorded of it, and
// its log.
type executionModel struct {
	Now time.Time
	E   storetype.Execution
	Log storetype.ExecutionLog
	// Run is its run's attempts, what released it and what its run
	// released.
	Run storetype.ExecutionRun
}

type executionHandler struct{ s *Server }

// ServeHTTP renders one execution and its log, which refreshes live as
// workers append to it.
func (h executionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("fireId")
	e, err := h.s.src.ExecutionByFireID(r.Context(), id)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	log, err := h.s.src.ExecutionLog(r.Context(), id, time.Time{}, time.Time{}, pageLogLines)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	run, err := h.s.src.ExecutionRun(r.Context(), id, h.s.cfg.ListLimit)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, "Execution "+shortID(id), "executions", executionView(executionModel{Now: h.s.now(), E: e, Log: log, Run: run}))
}

// executionURL is the page of the execution fireID.
func executionURL(fireID string) templ.SafeURL {
	return templ.SafeURL("/executions/" + url.PathEscape(fireID))
}

// shortID is the head of a fire id, enough to tell executions apart in a
// title.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
