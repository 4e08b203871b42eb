package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/jobdrop/jobdrop/internal/record"
)

// Role says what a user may do.
type Role int

// The roles, each allowed what the one before is and more.
const (
	// Viewer reads every page and the API.
	Viewer Role = iota + 1
	// Operator also pauses, resumes, triggers and deletes tasks, uploads
	// files and reports execution status.
	Operator
	// Admin also creates and replaces task definitions.
	Admin
)

// ParseRole reads "viewer", "operator" or "admin".
func ParseRole(s string) (Role, error) {
	switch s {
	case "viewer":
		return Viewer, nil
	case "operator":
		return Operator, nil
	case "admin":
		return Admin, nil
	}
	return 0, fmt.Errorf("role %q: want viewer, operator or admin", s)
}

// String is the role's name as configured.
func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Operator:
		return "operator"
	case Admin:
		return "admin"
	}
	return "none"
}

// User is one local account.
type User struct {
	Name string
	// PasswordHash is the bcrypt hash of the password.
	PasswordHash string
	Role         Role
}

// principal is who makes a request.
type principal struct {
	Name string
	Role Role
}

type principalKey struct{}

// who returns the principal of an authenticated request.
func who(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

// sessionCookie names the console's session cookie.
const sessionCookie = "jobdrop_session"

// sessionTTL is how long a login lasts.
const sessionTTL = 12 * time.Hour

type session struct {
	user    string
	expires time.Time
}

// auth checks passwords and keeps sessions in memory: a restart logs
// everyone out, which is the safe side.
type auth struct {
	users     map[string]User
	anonymous bool
	secure    bool
	now       func() time.Time
	// dummy is compared against when the user is unknown, so a login
	// takes as long whether or not the name exists.
	dummy []byte

	mu       sync.Mutex
	sessions map[string]session
	// verified remembers basic credentials that matched, by a keyed
	// hash, for basicTTL: a worker reporting status on every execution
	// pays for bcrypt once, not on every request.
	verified map[[32]byte]time.Time
	key      []byte
}

// basicTTL is how long verified basic credentials are remembered.
const basicTTL = 5 * time.Minute

func newAuth(cfg Config) (*auth, error) {
	a := &auth{users: map[string]User{}, anonymous: cfg.Anonymous, secure: cfg.SecureCookies, now: cfg.Now, sessions: map[string]session{}, verified: map[[32]byte]time.Time{}, key: make([]byte, 32)}
	rand.Read(a.key)
	for i, u := range cfg.Users {
		if u.Name == "" {
			return nil, fmt.Errorf("users[%d]: empty name", i)
		}
		if _, dup := a.users[u.Name]; dup {
			return nil, fmt.Errorf("users[%d]: %s is listed twice", i, u.Name)
		}
		if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
			return nil, fmt.Errorf("users[%d] %s: password_hash is not a bcrypt hash: %w", i, u.Name, err)
		}
		if u.Role < Viewer || u.Role > Admin {
			return nil, fmt.Errorf("users[%d] %s: no role", i, u.Name)
		}
		a.users[u.Name] = u
	}
	if len(a.users) == 0 && !a.anonymous {
		return nil, errors.New("no users configured and anonymous access not allowed")
	}
	if len(a.users) > 0 && a.anonymous {
		return nil, errors.New("users configured: anonymous access must be off")
	}
	a.dummy, _ = bcrypt.GenerateFromPassword([]byte("dummy"), bcrypt.MinCost)
	return a, nil
}

// check returns the user when the password matches.
func (a *auth) check(name, password string) (User, bool) {
	u, ok := a.users[name]
	hash := []byte(u.PasswordHash)
	if !ok {
		hash = a.dummy
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	return u, ok && err == nil
}

// checkBasic is check with a memory of recent successes.
func (a *auth) checkBasic(name, password string) (User, bool) {
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte(name))
	mac.Write([]byte{0})
	mac.Write([]byte(password))
	var k [32]byte
	copy(k[:], mac.Sum(nil))
	now := a.now()
	a.mu.Lock()
	until, ok := a.verified[k]
	a.mu.Unlock()
	if u, known := a.users[name]; ok && known && now.Before(until) {
		return u, true
	}
	u, ok := a.check(name, password)
	if ok {
		a.mu.Lock()
		if len(a.verified) > 10_000 {
			clear(a.verified)
		}
		a.verified[k] = now.Add(basicTTL)
		a.mu.Unlock()
	}
	return u, ok
}

func (a *auth) newSession(user string) string {
	b := make([]byte, 32)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	for t, s := range a.sessions {
		if now.After(s.expires) {
			delete(a.sessions, t)
		}
	}
	a.sessions[tok] = session{user: user, expires: now.Add(sessionTTL)}
	return tok
}

// endSession forgets a session and says whose it was.
func (a *auth) endSession(tok string) (user string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[tok]
	delete(a.sessions, tok)
	return s.user, ok
}

// identify finds who makes the request: anyone, when anonymous access is
// on; else a session cookie or HTTP basic credentials.
func (a *auth) identify(r *http.Request) (principal, bool) {
	if a.anonymous {
		return principal{Name: "local", Role: Admin}, true
	}
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		a.mu.Lock()
		s, ok := a.sessions[c.Value]
		a.mu.Unlock()
		if ok && a.now().Before(s.expires) {
			if u, ok := a.users[s.user]; ok {
				return principal{Name: u.Name, Role: u.Role}, true
			}
		}
	}
	if name, pw, ok := r.BasicAuth(); ok {
		if u, ok := a.checkBasic(name, pw); ok {
			return principal{Name: u.Name, Role: u.Role}, true
		}
	}
	return principal{}, false
}

// isAPI reports whether a path answers JSON rather than pages.
func isAPI(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/schedulers"
}

// requireLogin lets authenticated requests through with their principal
// in the context; others go to the login page (pages) or get 401 (API).
func (s *Server) requireLogin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" || strings.HasPrefix(r.URL.Path, "/static/") || opsPaths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		p, ok := s.auth.identify(r)
		if !ok {
			if isAPI(r.URL.Path) || r.Method != http.MethodGet {
				w.Header().Set("WWW-Authenticate", `Basic realm="jobdrop", charset="UTF-8"`)
				s.writeJSONError(w, http.StatusUnauthorized, "log in: HTTP basic credentials of a console user")
				return
			}
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// allow reports whether the request's principal has role; when not, it
// answers 403 and audits the refusal.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, role Role) bool {
	p := who(r.Context())
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
	s.audit(r, record.ActionAccessDenied, actor, r.Method+" "+r.URL.Path, record.OutcomeRejected, reason)
	s.log.Warn("request refused", "actor", actor, "method", r.Method, "path", r.URL.Path, "reason", reason)
	if isAPI(r.URL.Path) || !acceptsHTML(r) {
		s.writeJSONError(w, http.StatusForbidden, "forbidden: "+reason)
		return
	}
	s.page(w, r, http.StatusForbidden, "Forbidden", "", messageView("Forbidden", reason))
}

// audit writes one event of the console's own (a refusal, a login) to
// the audit trail. It outlives the request: a client that hangs up does
// not erase what it did.
func (s *Server) audit(r *http.Request, action, actor, object, outcome, detail string) {
	if s.cmd == nil {
		return
	}
	now := s.cfg.Now()
	err := s.cmd.Audit(context.WithoutCancel(r.Context()), record.Audit{
		ID:      action + ":" + strconv.FormatInt(now.UnixNano(), 36) + ":" + randomID(),
		At:      now.UnixMilli(),
		Actor:   actor,
		Action:  action,
		Object:  object,
		Outcome: outcome,
		Detail:  detail,
	})
	if err != nil {
		s.log.Error("audit", "action", action, "path", r.URL.Path, "error", err)
	}
}

// attemptedName is the user name a failed login gave, shortened and
// quoted when it is not a plausible name: anyone can type anything there.
func attemptedName(name string) string {
	const max = 64
	if len(name) > max {
		name = name[:max] + "…"
	}
	if q := strconv.Quote(name); q[1:len(q)-1] != name || name == "" {
		return q
	}
	return name
}

// clientAddr is the address a request came from, as the server saw it.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

func acceptsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

func randomID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// crossOrigin refuses every unsafe cross-origin request, browsers' form
// posts and scripts alike, and audits the refusal. Clients that are no
// browser (curl, workers) send neither Origin nor Sec-Fetch-Site and pass.
func (s *Server) crossOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := s.auth.identify(r)
		s.refuse(w, r, p.Name, "cross-origin request (Origin "+strconv.Quote(r.Header.Get("Origin"))+")")
	}))
	return cop.Handler(next)
}

// loginHandler shows and checks the login form.
func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	s.page(w, r, http.StatusOK, "Log in", "", loginView(safeNext(r.URL.Query().Get("next")), ""))
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.FormValue("next"))
	if s.auth.anonymous {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	name := r.PostFormValue("user")
	u, ok := s.auth.check(name, r.PostFormValue("password"))
	if !ok {
		s.audit(r, record.ActionLogin, attemptedName(name), "console", record.OutcomeRejected,
			"unknown user or wrong password, from "+clientAddr(r))
		s.log.Warn("login refused", "user", attemptedName(name), "remote", clientAddr(r))
		s.page(w, r, http.StatusUnauthorized, "Log in", "", loginView(next, "Unknown user or wrong password."))
		return
	}
	s.audit(r, record.ActionLogin, u.Name, "console", record.OutcomeOK, "role "+u.Role.String()+", from "+clientAddr(r))
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: s.auth.newSession(u.Name), Path: "/",
		MaxAge: int(sessionTTL / time.Second), HttpOnly: true, Secure: s.auth.secure, SameSite: http.SameSiteLaxMode,
	})
	s.log.Info("logged in", "user", u.Name)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if user, ok := s.auth.endSession(c.Value); ok {
			s.audit(r, record.ActionLogout, user, "console", record.OutcomeOK, "from "+clientAddr(r))
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.auth.secure, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect target on this site: a path, never
// "//host" or a full URL.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return "/"
	}
	return next
}
