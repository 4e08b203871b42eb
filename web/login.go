package web

import (
	"net/http"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/web/auth"
)

// passwordFailed audits and logs each failure of a password check of
// the request: the check itself, and a user name or an address slowed
// down or locked. via names the door: "console" (the login form) or "api"
// (basic credentials).
func (s *Server) passwordFailed(r *http.Request, via string) func(auth.Failure) {
	return func(f auth.Failure) {
		if f.Throttled {
			s.audit(r, record.ActionLoginThrottled, f.Actor, via, record.OutcomeRejected, f.Detail)
			s.log.Warn("logins throttled", "user", f.Actor, "via", via, "detail", f.Detail)
			return
		}
		s.audit(r, record.ActionLogin, f.Actor, via, record.OutcomeRejected, f.Detail)
		s.log.Warn("login refused", "user", f.Actor, "via", via, "remote", s.clientAddr(r))
	}
}

// loginForm shows the login form.
func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	s.page(w, r, http.StatusOK, "Log in", "", loginView(auth.SafeNext(r.URL.Query().Get("next")), ""))
}

// login checks the login form and starts a session.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if err := readForm(r); err != nil {
		if isTooLarge(err) {
			s.tooLarge(w, r, maxBody)
			return
		}
		s.badRequest(w, r, "The login form could not be read.")
		return
	}
	next := auth.SafeNext(r.FormValue("next"))
	if s.auth.Anonymous() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	u, err := s.auth.CheckPassword(r.Context(), r.PostFormValue("user"), r.PostFormValue("password"), s.clientAddr(r), s.passwordFailed(r, "console"))
	if err != nil {
		status, msg := auth.Refusal(w, err)
		s.page(w, r, status, "Log in", "", loginView(next, msg))
		return
	}
	s.audit(r, record.ActionLogin, u.Name, "console", record.OutcomeOK, "role "+u.Role.String()+", from "+s.clientAddr(r))
	http.SetCookie(w, s.auth.StartSession(u.Name))
	s.log.Info("logged in", "user", u.Name)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the request's session.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	user, ok, clear := s.auth.EndSession(r)
	if ok {
		s.audit(r, record.ActionLogout, user, "console", record.OutcomeOK, "from "+s.clientAddr(r))
	}
	http.SetCookie(w, clear)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
