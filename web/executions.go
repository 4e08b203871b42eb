package web

import "net/http"

type executionsHandler struct{ s *Server }

// ServeHTTP renders the latest executions.
func (h executionsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	executions, err := h.s.src.RecentExecutions(r.Context(), h.s.cfg.ListLimit)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, "Executions", "executions", executionsView(h.s.now(), executions))
}
