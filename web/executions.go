package web

import (
	"net/http"
	"net/url"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/web/list"
)

// executionsModel is the executions list: its filters as asked, a page of
// executions and where it is in the list.
type executionsModel struct {
	Now    time.Time
	Query  url.Values
	Filter storetype.ExecutionFilter
	Rows   []storetype.Execution
	Pager  list.Pager
}

type executionsHandler struct{ s *Server }

// ServeHTTP renders a page of the executions its filters select: status,
// host, name, task, topic, file, from and to.
func (h executionsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if canonical(w, r, list.ExecutionParams) {
		return
	}
	f, err := h.s.lists.Executions(r.URL.Query())
	if err != nil {
		h.s.badRequest(w, r, err.Error())
		return
	}
	p, err := h.s.src.Executions(r.Context(), f)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	m := executionsModel{Now: f.Now, Query: list.Query(r.URL.Query(), list.ExecutionParams), Filter: f, Rows: p.Rows,
		Pager: list.PagerOf(r, list.ExecutionParams, p, "executions")}
	h.s.page(w, r, http.StatusOK, "Executions", "executions", executionsView(m))
}
