package web

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/jobdrop/jobdrop/web/api"
)

// ReadyCheck is one condition of a node's readiness: its name and, when
// it does not hold, why.
type ReadyCheck struct {
	Name string
	Err  error
}

// Readiness runs every readiness check, within ctx.
type Readiness func(ctx context.Context) []ReadyCheck

// opsPaths answer without login: probes and scrapers carry no session or
// password, and they tell nothing of tasks or files.
var opsPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// readyTimeout bounds one /readyz request's checks: a probe that hangs
// tells less than one that answers 503.
const readyTimeout = 5 * time.Second

// healthz answers 200 while the process serves: liveness, nothing more.
// Kafka being down is no reason to restart the process.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	s.writeJSON(w, r, map[string]string{"status": "ok"})
}

// readyz answers 200 when every readiness check holds and 503 otherwise,
// with a JSON body naming each check and, for a failing one, why.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	body := struct {
		Ready  bool              `json:"ready"`
		Checks map[string]string `json:"checks"`
	}{Ready: true, Checks: map[string]string{}}
	if s.cfg.Ready != nil {
		for _, c := range s.cfg.Ready(ctx) {
			body.Checks[c.Name] = "ok"
			if c.Err != nil {
				body.Checks[c.Name] = c.Err.Error()
				body.Ready = false
			}
		}
	}
	status := http.StatusOK
	if !body.Ready {
		status = http.StatusServiceUnavailable
	}
	b, _ := json.MarshalIndent(body, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// metrics serves Config.Metrics, or 404 when there is none.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		api.Error(w, http.StatusNotFound, "no metrics here")
		return
	}
	s.cfg.Metrics.ServeHTTP(w, r)
}
