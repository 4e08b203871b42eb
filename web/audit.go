package web

import (
	"net/http"
	"net/url"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// auditModel is the audit page: the filters as asked, the actions to pick
// from and the events selected.
type auditModel struct {
	Query   url.Values
	Actions []string
	Events  []storetype.AuditEvent
}

type auditHandler struct{ s *Server }

// ServeHTTP renders the audit events the filters select, newest first.
func (h auditHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, err := auditFilterParam(r.URL.Query())
	if err != nil {
		h.s.badRequest(w, r, err.Error())
		return
	}
	f.Limit = h.s.cfg.ListLimit
	q := url.Values{}
	for _, k := range []string{"from", "to", "actor", "action", "object"} {
		if v := r.URL.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	m := auditModel{Query: q}
	if m.Events, err = h.s.src.Audit(r.Context(), f); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Actions, err = h.s.src.AuditActions(r.Context()); err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, "Audit", "audit", auditView(m))
}
