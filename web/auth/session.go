package auth

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"
)

// sessionCookie names the console's session cookie.
const sessionCookie = "jobdrop_session"

// sessionTTL is how long a login lasts.
const sessionTTL = 12 * time.Hour

type session struct {
	user    string
	expires time.Time
}

// StartSession starts a session of user and returns the cookie that
// carries it.
func (a *Authenticator) StartSession(user string) *http.Cookie {
	b := make([]byte, 32)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	for t, s := range a.sessions {
		if now.After(s.expires) {
			delete(a.sessions, t)
		}
	}
	a.sessions[tok] = session{user: user, expires: now.Add(sessionTTL)}
	return &http.Cookie{
		Name: sessionCookie, Value: tok, Path: "/",
		MaxAge: int(sessionTTL / time.Second), HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteLaxMode,
	}
}

// EndSession forgets the session of the request, if it has one, and says
// whose it was; the cookie it returns clears the session's from the
// browser.
func (a *Authenticator) EndSession(r *http.Request) (user string, ok bool, clear *http.Cookie) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		a.mu.Lock()
		s, found := a.sessions[c.Value]
		delete(a.sessions, c.Value)
		a.mu.Unlock()
		user, ok = s.user, found
	}
	return user, ok, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteLaxMode}
}

// Session finds who makes the request by its session cookie alone:
// anyone, when anonymous access is on. It never checks a password.
func (a *Authenticator) Session(r *http.Request) (Principal, bool) {
	if a.anonymous {
		return Principal{Name: "local", Role: Admin}, true
	}
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		a.mu.Lock()
		s, ok := a.sessions[c.Value]
		a.mu.Unlock()
		if ok && a.clock.Now().Before(s.expires) {
			if u, ok := a.users[s.user]; ok {
				return Principal{Name: u.Name, Role: u.Role}, true
			}
		}
	}
	return Principal{}, false
}
