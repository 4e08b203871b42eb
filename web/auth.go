package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sync/semaphore"

	"github.com/jobdrop/jobdrop/internal/record"
)

// Role says what a user may do.
type Role int

// The roles, each allowed what the one before is and more.
const (
	// Viewer reads every page and the API.
	Viewer Role = iota + 1
	// Operator also pauses, resumes, triggers and deletes tasks, dry-runs
	// files, rejects held files and reports execution status.
	Operator
	// Admin also creates and replaces task definitions: see defineRole.
	Admin
)

// defineRole is the one role that creates and replaces task definitions,
// whichever way they arrive: POST /schedulers, an uploaded file, a held
// file applied. A file dropped into a watched folder is trusted as the
// folder's owner is.
const defineRole = Admin

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
	// takes as long whether or not the name exists: it has the cost of
	// the costliest configured hash.
	dummy []byte
	// checks bounds the password checks (bcrypt) that run at once, so a
	// flood of them leaves the processor to the rest of the console.
	checks *semaphore.Weighted
	// names and addrs throttle failed checks by user name and by client
	// address.
	names, addrs *throttle

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

// passwordWait bounds how long a password check waits for its turn (see
// throttle) and for a free check: past it the client is told the server is
// busy.
const passwordWait = 10 * time.Second

func newAuth(cfg Config) (*auth, error) {
	a := &auth{users: map[string]User{}, anonymous: cfg.Anonymous, secure: cfg.SecureCookies, now: cfg.Now, sessions: map[string]session{},
		verified: map[[32]byte]time.Time{}, key: make([]byte, 32),
		checks: semaphore.NewWeighted(int64(max(1, runtime.GOMAXPROCS(0)/2))),
		names:  newThrottle(namePolicy), addrs: newThrottle(addrPolicy)}
	rand.Read(a.key)
	cost := bcrypt.MinCost
	for i, u := range cfg.Users {
		if u.Name == "" {
			return nil, fmt.Errorf("users[%d]: empty name", i)
		}
		if _, dup := a.users[u.Name]; dup {
			return nil, fmt.Errorf("users[%d]: %s is listed twice", i, u.Name)
		}
		c, err := bcrypt.Cost([]byte(u.PasswordHash))
		if err != nil {
			return nil, fmt.Errorf("users[%d] %s: password_hash is not a bcrypt hash: %w", i, u.Name, err)
		}
		cost = max(cost, c)
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
	if len(a.users) > 0 {
		dummy := make([]byte, 18)
		rand.Read(dummy)
		a.dummy, _ = bcrypt.GenerateFromPassword([]byte(hex.EncodeToString(dummy)), cost)
	}
	return a, nil
}

// check returns the user when the password matches. It costs a bcrypt
// comparison whether or not the user exists.
func (a *auth) check(name, password string) (User, bool) {
	u, ok := a.users[name]
	hash := []byte(u.PasswordHash)
	if !ok {
		hash = a.dummy
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	return u, ok && err == nil
}

// basicKey is the key verified basic credentials are remembered by.
func (a *auth) basicKey(name, password string) [32]byte {
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte(name))
	mac.Write([]byte{0})
	mac.Write([]byte(password))
	var k [32]byte
	copy(k[:], mac.Sum(nil))
	return k
}

// remembered returns the user of basic credentials that matched within
// basicTTL.
func (a *auth) remembered(name, password string) (User, bool) {
	k := a.basicKey(name, password)
	a.mu.Lock()
	until, ok := a.verified[k]
	a.mu.Unlock()
	if u, known := a.users[name]; ok && known && a.now().Before(until) {
		return u, true
	}
	return User{}, false
}

// remember keeps basic credentials that matched for basicTTL.
func (a *auth) remember(name, password string) {
	k := a.basicKey(name, password)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.verified) > 10_000 {
		clear(a.verified)
	}
	a.verified[k] = a.now().Add(basicTTL)
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

// session finds who makes the request by its session cookie alone: anyone,
// when anonymous access is on. It never checks a password.
func (a *auth) session(r *http.Request) (principal, bool) {
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
	return principal{}, false
}

// Why a request is not let in.
var (
	errNoCredentials = errors.New("no credentials")
	errWrongPassword = errors.New("unknown user or wrong password")
	errBusy          = errors.New("busy checking passwords")
)

// throttledError refuses a password check before it runs: too many
// failures of its user name or from its address, for now.
type throttledError struct{ wait time.Duration }

func (e *throttledError) Error() string {
	return "too many failed attempts: try again in " + e.wait.String()
}

// identify finds who makes the request: anyone, when anonymous access is
// on; else a session cookie or HTTP basic credentials.
func (s *Server) identify(r *http.Request) (principal, error) {
	if p, ok := s.auth.session(r); ok {
		return p, nil
	}
	name, pw, ok := r.BasicAuth()
	if !ok {
		return principal{}, errNoCredentials
	}
	u, ok := s.auth.remembered(name, pw)
	if !ok {
		var err error
		if u, err = s.checkPassword(r, name, pw, "api"); err != nil {
			return principal{}, err
		}
		s.auth.remember(name, pw)
	}
	return principal{Name: u.Name, Role: u.Role}, nil
}

// checkPassword checks a password the request's client gave for name, as
// the throttles of the name and of the client's address allow, one check
// at a time for each, and within the bound of checks running at once. It
// audits each failed check and, once in a run of failures, a name or an
// address slowed down or locked. via names the door: "console" (the login
// form) or "api" (basic credentials).
func (s *Server) checkPassword(r *http.Request, name, password, via string) (User, error) {
	u, err := s.tryPassword(r, name, password, via)
	var th *throttledError
	if errors.As(err, &th) {
		// Refused late: a client that waits for its answers guesses at
		// the throttle's pace, not at the network's, and leaves the
		// processor to the others.
		t := time.NewTimer(min(th.wait, refusalDelay))
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	return u, err
}

// refusalDelay is the longest a throttled attempt waits for its answer.
const refusalDelay = 500 * time.Millisecond

// tryPassword is checkPassword holding the turns of the name and the
// address.
func (s *Server) tryPassword(r *http.Request, name, password, via string) (User, error) {
	a := s.auth
	ctx, cancel := context.WithTimeout(r.Context(), passwordWait)
	defer cancel()
	addr := s.clientAddr(r)
	byName, err := a.names.enter(ctx, name, a.now())
	if err != nil {
		return User{}, errBusy
	}
	defer a.names.leave(name, byName, true)
	byAddr, err := a.addrs.enter(ctx, addr, a.now())
	if err != nil {
		return User{}, errBusy
	}
	defer a.addrs.leave(addr, byAddr, true)
	now := a.now()
	if wait := max(a.names.wait(byName, now), a.addrs.wait(byAddr, now)); wait > 0 {
		return User{}, &throttledError{wait: wait}
	}
	if err := a.checks.Acquire(ctx, 1); err != nil {
		return User{}, errBusy
	}
	u, ok := a.check(name, password)
	a.checks.Release(1)
	if ok {
		a.names.succeed(byName)
		return u, nil
	}
	// An address's failures are not forgiven by a success: one account of
	// its own would let a client guess others' passwords forever.
	now = a.now()
	shown := attemptedName(name)
	s.audit(r, record.ActionLogin, shown, via, record.OutcomeRejected, "unknown user or wrong password, from "+addr)
	s.log.Warn("login refused", "user", shown, "via", via, "remote", addr)
	s.auditThrottle(r, a.names.fail(byName, now), namePolicy, shown, via, "for the user name "+shown+", the last from "+addr)
	s.auditThrottle(r, a.addrs.fail(byAddr, now), addrPolicy, shown, via, "from "+addr+", the last for the user name "+shown)
	return User{}, errWrongPassword
}

// auditThrottle audits what a failure made of a throttle's key, once in a
// run of failures: slowed down, then locked. which says whose failures
// they are.
func (s *Server) auditThrottle(r *http.Request, ev throttleEvent, p throttlePolicy, actor, via, which string) {
	var detail string
	switch ev {
	case throttleSlowed:
		detail = fmt.Sprintf("slowed down after %d failed attempts %s: each next attempt waits longer (%s, then twice as long); %d lock it for %s",
			p.free, which, p.firstWait, p.lockAfter, p.lockFor)
	case throttleLocked:
		detail = fmt.Sprintf("locked for %s after %d failed attempts %s", p.lockFor, p.lockAfter, which)
	default:
		return
	}
	s.audit(r, record.ActionLoginThrottled, actor, via, record.OutcomeRejected, detail)
	s.log.Warn("logins throttled", "user", actor, "via", via, "detail", detail)
}

// passwordRefusal is how a refused password check is answered: its
// status and what to tell the user; Retry-After is set when waiting helps.
func passwordRefusal(w http.ResponseWriter, err error) (int, string) {
	var th *throttledError
	switch {
	case errors.As(err, &th):
		wait := th.wait.Round(time.Second)
		if wait < th.wait {
			wait += time.Second
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		return http.StatusTooManyRequests, "Too many failed attempts for this user name or from this address: try again in " + wait.String() + "."
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", "1")
		return http.StatusServiceUnavailable, "The server is busy checking passwords: try again in a moment."
	}
	return http.StatusUnauthorized, "Unknown user or wrong password."
}

// isAPI reports whether a path answers JSON rather than pages.
func isAPI(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/schedulers" || strings.HasPrefix(path, schemaRegistryPath+"/")
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
		p, err := s.identify(r)
		if err != nil {
			status, msg := passwordRefusal(w, err)
			switch {
			case status != http.StatusUnauthorized:
				s.writeJSONError(w, status, msg)
			case isAPI(r.URL.Path) || r.Method != http.MethodGet:
				w.Header().Set("WWW-Authenticate", `Basic realm="jobdrop", charset="UTF-8"`)
				s.writeJSONError(w, http.StatusUnauthorized, "log in: HTTP basic credentials of a console user")
			default:
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			}
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
	reason = cleanField(reason, maxAuditDetail)
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
// not erase what it did. Whatever a client sent is in its fields, so each
// is cleaned and bounded: no client makes a record large.
func (s *Server) audit(r *http.Request, action, actor, object, outcome, detail string) {
	s.auditBatch(r, action, actor, object, outcome, detail, nil)
}

// auditBatch is audit of an event about the file of batch b.
func (s *Server) auditBatch(r *http.Request, action, actor, object, outcome, detail string, b *record.Batch) {
	s.auditEvent(r, action, actor, object, outcome, detail, b)
}

// auditID is audit, returning the event's id; "" when it could not be
// written.
func (s *Server) auditID(r *http.Request, action, actor, object, outcome, detail string) string {
	return s.auditEvent(r, action, actor, object, outcome, detail, nil)
}

// auditEvent writes the event and returns its id; "" when it could not be
// written, which it logs.
func (s *Server) auditEvent(r *http.Request, action, actor, object, outcome, detail string, b *record.Batch) string {
	if s.cmd == nil {
		return ""
	}
	now := s.cfg.Now()
	id := action + ":" + strconv.FormatInt(now.UnixNano(), 36) + ":" + randomID()
	err := s.cmd.Audit(context.WithoutCancel(r.Context()), record.Audit{
		ID:      id,
		At:      now.UnixMilli(),
		Actor:   cleanField(actor, maxAuditName),
		Action:  action,
		Object:  cleanField(object, maxAuditName),
		Outcome: outcome,
		Detail:  cleanField(detail, maxAuditDetail),
		Batch:   b,
	})
	if err != nil {
		s.log.Error("audit", "action", action, "path", r.URL.Path, "err", err)
		return ""
	}
	return id
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
		// Who, by session only: a refused request checks no password.
		p, _ := s.auth.session(r)
		s.refuse(w, r, p.Name, "cross-origin request (Origin "+strconv.Quote(cleanField(r.Header.Get("Origin"), maxAuditName))+")")
	}))
	return cop.Handler(next)
}

// loginHandler shows and checks the login form.
func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	s.page(w, r, http.StatusOK, "Log in", "", loginView(safeNext(r.URL.Query().Get("next")), ""))
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if err := readForm(r); err != nil {
		if isTooLarge(err) {
			s.tooLarge(w, r, maxBody)
			return
		}
		s.badRequest(w, r, "The login form could not be read.")
		return
	}
	next := safeNext(r.FormValue("next"))
	if s.auth.anonymous {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	u, err := s.checkPassword(r, r.PostFormValue("user"), r.PostFormValue("password"), "console")
	if err != nil {
		status, msg := passwordRefusal(w, err)
		s.page(w, r, status, "Log in", "", loginView(next, msg))
		return
	}
	s.audit(r, record.ActionLogin, u.Name, "console", record.OutcomeOK, "role "+u.Role.String()+", from "+s.clientAddr(r))
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
			s.audit(r, record.ActionLogout, user, "console", record.OutcomeOK, "from "+s.clientAddr(r))
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.auth.secure, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect target on this site: a path, never
// "//host", a full URL, or anything a browser might read as one. Browsers
// drop tabs and line breaks from a URL and read "\" as "/", so
// "/\t/evil.example" would leave the site: a target with any control
// character, space or backslash is refused whole.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsFunc(next, func(c rune) bool { return c <= ' ' || c == 0x7f || c == '\\' || unicode.IsControl(c) }) {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}
