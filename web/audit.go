package web

import (
	"net/http"
	"net/url"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/web/list"
)

// auditModel is the audit page: the filters as asked, the actions to pick
// from and a page of the events selected.
type auditModel struct {
	Query   url.Values
	Actions []string
	Events  []storetype.AuditEvent
	Pager   list.Pager
}

type auditHandler struct{ s *Server }

// ServeHTTP renders a page of the audit events the filters select, newest
// first unless asked otherwise.
func (h auditHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if canonical(w, r, list.AuditParams) {
		return
	}
	f, err := h.s.lists.Audit(r.URL.Query())
	if err != nil {
		h.s.badRequest(w, r, err.Error())
		return
	}
	m := auditModel{Query: list.Query(r.URL.Query(), list.AuditParams)}
	p, err := h.s.src.Audit(r.Context(), f)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	m.Events, m.Pager = p.Rows, list.PagerOf(r, list.AuditParams, p, "events")
	if m.Actions, err = h.s.src.AuditActions(r.Context()); err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, "Audit", "audit", auditView(m))
}
