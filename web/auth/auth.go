package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sync/semaphore"
)

// Config says who may log in.
type Config struct {
	// Users are the local accounts.
	Users []User
	// Anonymous lets everyone in as an admin named "local". Not with
	// Users; one of the two is required.
	Anonymous bool
	// SecureCookies marks the session cookie Secure, for a console
	// served over TLS.
	SecureCookies bool
	// Clock is the clock sessions expire and failures are counted by.
	// Defaults to the real clock.
	Clock clockwork.Clock
}

// Authenticator checks passwords and keeps sessions in memory: a restart
// logs everyone out, which is the safe side.
type Authenticator struct {
	users     map[string]User
	anonymous bool
	secure    bool
	clock     clockwork.Clock
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

// New validates the users of cfg and builds their Authenticator.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	a := &Authenticator{users: map[string]User{}, anonymous: cfg.Anonymous, secure: cfg.SecureCookies, clock: cfg.Clock, sessions: map[string]session{},
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

// Anonymous reports whether everyone is let in without a password.
func (a *Authenticator) Anonymous() bool { return a.anonymous }

// check returns the user when the password matches. It costs a bcrypt
// comparison whether or not the user exists.
func (a *Authenticator) check(name, password string) (User, bool) {
	u, ok := a.users[name]
	hash := []byte(u.PasswordHash)
	if !ok {
		hash = a.dummy
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	return u, ok && err == nil
}

// basicKey is the key verified basic credentials are remembered by.
func (a *Authenticator) basicKey(name, password string) [32]byte {
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
func (a *Authenticator) remembered(name, password string) (User, bool) {
	k := a.basicKey(name, password)
	a.mu.Lock()
	until, ok := a.verified[k]
	a.mu.Unlock()
	if u, known := a.users[name]; ok && known && a.clock.Now().Before(until) {
		return u, true
	}
	return User{}, false
}

// remember keeps basic credentials that matched for basicTTL.
func (a *Authenticator) remember(name, password string) {
	k := a.basicKey(name, password)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.verified) > 10_000 {
		clear(a.verified)
	}
	a.verified[k] = a.clock.Now().Add(basicTTL)
}
