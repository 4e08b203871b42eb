package web

import "net/http"

type auditHandler struct{ s *Server }

// ServeHTTP renders the latest audit events.
func (h auditHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	events, err := h.s.src.RecentAudit(r.Context(), h.s.cfg.ListLimit)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, "Audit", "audit", auditView(events))
}
