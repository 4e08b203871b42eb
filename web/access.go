package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/web/api"
	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/field"
)

// isAPI reports whether a path answers JSON rather than pages.
func isAPI(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/schedulers" || strings.HasPrefix(path, schemaRegistryPath+"/")
}

func acceptsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// requireLogin lets authenticated requests through with their principal
// in the context; others go to the login page (pages) or get 401 (API),
// or 429 or 503 when their password could not be checked.
func (s *Server) requireLogin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" || strings.HasPrefix(r.URL.Path, "/static/") || opsPaths[r.URL.Path] || r.URL.Path == openAPIPath {
			next.ServeHTTP(w, r)
			return
		}
		p, err := s.auth.Identify(r, s.clientAddr(r), s.passwordFailed(r, "api"))
		if err != nil {
			status, msg := auth.Refusal(w, err)
			switch {
			case status != http.StatusUnauthorized:
				api.Error(w, status, msg)
			case isAPI(r.URL.Path) || r.Method != http.MethodGet:
				w.Header().Set("WWW-Authenticate", `Basic realm="jobdrop", charset="UTF-8"`)
				api.Error(w, http.StatusUnauthorized, "log in: HTTP basic credentials of a console user")
			default:
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			}
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}

// allow reports whether the request's principal has role; when not, it
// answers 403 and audits the refusal.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, role auth.Role) bool {
	p := auth.Who(r.Context())
	if p.Role >= role {
		return true
	}
	s.refuse(w, r, p.Name, fmt.Sprintf("role %s may not do this; it takes %s", p.Role, role))
	return false
}

// refuse answers 403 and writes the refusal to the audit trail.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, actor, reason string) {
	if actor == "" {
		actor = "anonymous"
	}
	reason = field.Clean(reason, field.MaxDetail)
	s.audit(r, record.ActionAccessDenied, actor, r.Method+" "+r.URL.Path, record.OutcomeRejected, reason)
	s.log.Warn("request refused", "actor", actor, "method", r.Method, "path", r.URL.Path, "reason", reason)
	if isAPI(r.URL.Path) || !acceptsHTML(r) {
		api.Error(w, http.StatusForbidden, "forbidden: "+reason)
		return
	}
	s.page(w, r, http.StatusForbidden, "Forbidden", "", messageView("Forbidden", reason))
}

// crossOrigin refuses every unsafe cross-origin request, browsers' form
// posts and scripts alike, and audits the refusal. Clients that are no
// browser (curl, workers) send neither Origin nor Sec-Fetch-Site and pass.
func (s *Server) crossOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Who, by session only: a refused request checks no password.
		p, _ := s.auth.Session(r)
		s.refuse(w, r, p.Name, "cross-origin request (Origin "+strconv.Quote(field.Clean(r.Header.Get("Origin"), field.MaxName))+")")
	}))
	return cop.Handler(next)
}
