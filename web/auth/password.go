package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Why a request is not let in.
var (
	// ErrNoCredentials: no session and no basic credentials.
	ErrNoCredentials = errors.New("no credentials")
	// ErrWrongPassword: the user is unknown or the password wrong.
	ErrWrongPassword = errors.New("unknown user or wrong password")
	// ErrBusy: the password could not be checked in time.
	ErrBusy = errors.New("busy checking passwords")
)

// ThrottledError refuses a password check before it runs: too many
// failures of its user name or from its address, for now.
type ThrottledError struct {
	// Wait is how long until a check may run.
	Wait time.Duration
}

func (e *ThrottledError) Error() string {
	return "too many failed attempts: try again in " + e.Wait.String()
}

// passwordWait bounds how long a password check waits for its turn (see
// throttle) and for a free check: past it the client is told the server is
// busy.
const passwordWait = 10 * time.Second

// refusalDelay is the longest a throttled attempt waits for its answer.
const refusalDelay = 500 * time.Millisecond

// Failure is one thing a failed password check did, for the audit trail
// and the log: the check failed (Throttled false), or, once in a run of
// failures, it slowed down or locked the checks of a user name or of an
// address (Throttled true).
type Failure struct {
	Throttled bool
	// Actor is the user name given, quoted when it is not a plausible
	// name: anyone can type anything there.
	Actor string
	// Detail says what happened, and from which address.
	Detail string
}

// Identify finds who makes the request: anyone, when anonymous access is
// on; else a session cookie or HTTP basic credentials, checked as
// CheckPassword does.
func (a *Authenticator) Identify(r *http.Request, addr string, failed func(Failure)) (Principal, error) {
	if p, ok := a.Session(r); ok {
		return p, nil
	}
	name, pw, ok := r.BasicAuth()
	if !ok {
		return Principal{}, ErrNoCredentials
	}
	u, ok := a.remembered(name, pw)
	if !ok {
		var err error
		if u, err = a.CheckPassword(r.Context(), name, pw, addr, failed); err != nil {
			return Principal{}, err
		}
		a.remember(name, pw)
	}
	return Principal{Name: u.Name, Role: u.Role}, nil
}

// CheckPassword checks a password that a client at addr gave for name,
// as the throttles of the name and of the address allow, one check at a
// time for each, and within the bound of checks running at once. failed,
// if set, learns of each failed check and, once in a run of failures, of
// a name or an address slowed down or locked.
func (a *Authenticator) CheckPassword(ctx context.Context, name, password, addr string, failed func(Failure)) (User, error) {
	if failed == nil {
		failed = func(Failure) {}
	}
	u, err := a.tryPassword(ctx, name, password, addr, failed)
	var th *ThrottledError
	if errors.As(err, &th) {
		// Refused late: a client that waits for its answers guesses at
		// the throttle's pace, not at the network's, and leaves the
		// processor to the others.
		t := time.NewTimer(min(th.Wait, refusalDelay))
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return u, err
}

// tryPassword is CheckPassword holding the turns of the name and the
// address.
func (a *Authenticator) tryPassword(ctx context.Context, name, password, addr string, failed func(Failure)) (User, error) {
	ctx, cancel := context.WithTimeout(ctx, passwordWait)
	defer cancel()
	byName, err := a.names.enter(ctx, name, a.clock.Now())
	if err != nil {
		return User{}, ErrBusy
	}
	defer a.names.leave(name, byName, true)
	byAddr, err := a.addrs.enter(ctx, addr, a.clock.Now())
	if err != nil {
		return User{}, ErrBusy
	}
	defer a.addrs.leave(addr, byAddr, true)
	now := a.clock.Now()
	if wait := max(a.names.wait(byName, now), a.addrs.wait(byAddr, now)); wait > 0 {
		return User{}, &ThrottledError{Wait: wait}
	}
	if err := a.checks.Acquire(ctx, 1); err != nil {
		return User{}, ErrBusy
	}
	u, ok := a.check(name, password)
	a.checks.Release(1)
	if ok {
		a.names.succeed(byName)
		return u, nil
	}
	// An address's failures are not forgiven by a success: one account of
	// its own would let a client guess others' passwords forever.
	now = a.clock.Now()
	shown := attemptedName(name)
	failed(Failure{Actor: shown, Detail: "unknown user or wrong password, from " + addr})
	if detail := throttleDetail(a.names.fail(byName, now), namePolicy, "for the user name "+shown+", the last from "+addr); detail != "" {
		failed(Failure{Throttled: true, Actor: shown, Detail: detail})
	}
	if detail := throttleDetail(a.addrs.fail(byAddr, now), addrPolicy, "from "+addr+", the last for the user name "+shown); detail != "" {
		failed(Failure{Throttled: true, Actor: shown, Detail: detail})
	}
	return User{}, ErrWrongPassword
}

// throttleDetail says what a failure made of a throttle's key, once in a
// run of failures: slowed down, then locked; "" when neither. which says
// whose failures they are.
func throttleDetail(ev throttleEvent, p throttlePolicy, which string) string {
	switch ev {
	case throttleSlowed:
		return fmt.Sprintf("slowed down after %d failed attempts %s: each next attempt waits longer (%s, then twice as long); %d lock it for %s",
			p.free, which, p.firstWait, p.lockAfter, p.lockFor)
	case throttleLocked:
		return fmt.Sprintf("locked for %s after %d failed attempts %s", p.lockFor, p.lockAfter, which)
	}
	return ""
}

// Refusal is how a refused password check is answered: its status and
// what to tell the user; Retry-After is set on w when waiting helps.
func Refusal(w http.ResponseWriter, err error) (int, string) {
	var th *ThrottledError
	switch {
	case errors.As(err, &th):
		wait := th.Wait.Round(time.Second)
		if wait < th.Wait {
			wait += time.Second
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		return http.StatusTooManyRequests, "Too many failed attempts for this user name or from this address: try again in " + wait.String() + "."
	case errors.Is(err, ErrBusy):
		w.Header().Set("Retry-After", "1")
		return http.StatusServiceUnavailable, "The server is busy checking passwords: try again in a moment."
	}
	return http.StatusUnauthorized, "Unknown user or wrong password."
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
