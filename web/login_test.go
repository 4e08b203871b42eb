package web_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/crypto/bcrypt"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/web"
)

// Wrong passwords slow the next attempts of their user name, more with
// every failure, then lock it; a flood of them is audited once a run,
// not once an attempt, and checks no password while refused.
func TestFailedPasswordsAreThrottledThenLocked(t *testing.T) {
	cmd := &commander{}
	clk := clockwork.NewFakeClockAt(now)
	ts := guarded(t, web.Config{Users: users(t, bcrypt.MinCost), Commander: cmd, Clock: clk})
	summary := ts.URL + "/api/summary"

	// Fifty wrong passwords at once, then the right one: five are
	// checked and refused, the others refused unchecked, and so is the
	// right password while they wait.
	statuses := make(chan int, 50)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			resp, err := http.DefaultClient.Do(basic("GET", summary, "ada", "guess"))
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[http.StatusUnauthorized] != 5 || count[http.StatusTooManyRequests] != 45 {
		t.Errorf("50 wrong passwords at once answered %v, want 5 × 401 and 45 × 429", count)
	}
	resp, _ := send(t, nil, basic("GET", summary, "ada", backwards("ada")))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("the right password after 50 wrong ones = %s (Retry-After %q), want 429 (Retry-After 1)", resp.Status, resp.Header.Get("Retry-After"))
	}
	if n := len(cmd.audited(record.ActionLoginThrottled)); n != 1 {
		t.Errorf("%d throttle events audited for one run of failures, want 1", n)
	}
	failed := cmd.audited(record.ActionLogin)
	if len(failed) != 5 || failed[0].Actor != "ada" || failed[0].Object != "api" || !strings.Contains(failed[0].Detail, "127.0.0.1") {
		t.Errorf("failed basic logins audited: %+v, want 5, each naming ada, the API and the address", failed)
	}

	// Each wait is longer than the last, and the tenth failure locks the
	// name for 15 minutes, whatever the password.
	var waits []string
	for range 5 {
		resp, _ := send(t, nil, basic("GET", summary, "ada", "guess"))
		after := resp.Header.Get("Retry-After")
		waits = append(waits, after)
		s, _ := strconv.Atoi(after)
		clk.Advance(time.Duration(s) * time.Second)
		if resp, _ := send(t, nil, basic("GET", summary, "ada", "guess")); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a wrong password after waiting %ss = %s, want it checked (401)", after, resp.Status)
		}
	}
	if strings.Join(waits, " ") != "1 2 4 8 16" {
		t.Errorf("waits after failures 5 to 9 = %v s, want 1 2 4 8 16", waits)
	}
	clk.Advance(time.Minute) // past any wait, within the lock
	resp, body := send(t, nil, loginForm(ts.URL, "ada", backwards("ada"), "/"))
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "try again in 14m0s") {
		t.Errorf("the right password on the login page of a locked name = %s, want 429 saying when", resp.Status)
	}
	// The name slowed down, then locked; the address, at its tenth
	// failure, slowed down.
	var details []string
	for _, ev := range cmd.audited(record.ActionLoginThrottled) {
		details = append(details, ev.Detail)
	}
	if len(details) != 3 || !strings.HasPrefix(details[1], "locked for 15m0s after 10 failed attempts for the user name ada") ||
		!strings.HasPrefix(details[2], "slowed down after 10 failed attempts from 127.0.0.1") {
		t.Errorf("throttle events:\n%s\nwant the name slowed down, then locked, and the address slowed down", strings.Join(details, "\n"))
	}
	clk.Advance(14 * time.Minute)
	if resp, _ := send(t, nil, loginForm(ts.URL, "ada", backwards("ada"), "/")); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the right password once the lock is over = %s, want a login", resp.Status)
	}
	// Other users were never slowed down: another address would not be
	// either, and this one has 10 failures of its 30.
	if resp, _ := send(t, nil, basic("GET", summary, "otto", backwards("otto"))); resp.StatusCode != http.StatusOK {
		t.Errorf("another user meanwhile = %s", resp.Status)
	}
}

// costFor is the bcrypt cost whose check takes about d on this machine,
// in this build (the race detector slows bcrypt several times): timing
// tests measure real work, not a fixed cost that is instant here and
// slow there.
func costFor(t *testing.T, d time.Duration) int {
	t.Helper()
	h, _ := bcrypt.GenerateFromPassword([]byte("x"), bcrypt.MinCost)
	per := time.Duration(1<<62 - 1)
	for range 3 {
		start := time.Now()
		bcrypt.CompareHashAndPassword(h, []byte("y"))
		per = min(per, time.Since(start))
	}
	cost := bcrypt.MinCost
	for ; cost < bcrypt.MaxCost && per*2 <= d; cost++ {
		per *= 2
	}
	t.Logf("bcrypt cost %d: about %s a check here", cost, per.Round(time.Millisecond))
	return cost
}

// from is a client whose connections come from the loopback address ip.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 256},
		CheckRedirect: noRedirects.CheckRedirect,
	}
}

// While 200 clients guess passwords in parallel, without pause, a real
// user logs in as fast as on a quiet day: the flood's checks are bounded
// and, once its failures are counted, refused before any is made.
func TestRealLoginAnswersDuringAFloodOfWrongPasswords(t *testing.T) {
	cost := costFor(t, 100*time.Millisecond)
	ts := guarded(t, web.Config{Users: users(t, cost)})
	attacker := from("127.0.0.2")
	stop := make(chan struct{})
	var answers, checked atomic.Int64
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				// Half guess the admin's password, half spray names
				// over the API.
				req := loginForm(ts.URL, "ada", fmt.Sprintf("guess-%d-%d", i, n), "/")
				if i%2 == 1 {
					req = basic("GET", ts.URL+"/api/summary", fmt.Sprintf("user-%d-%d", i, n), "guess")
				}
				resp, err := attacker.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answers.Add(1)
				if resp.StatusCode == http.StatusUnauthorized {
					checked.Add(1)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	// The flood is on once the first answers come back.
	for answers.Load() < 200 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	resp, _ := send(t, from("127.0.0.1"), loginForm(ts.URL, "otto", backwards("otto"), "/files"))
	took := time.Since(start)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/files" {
		t.Fatalf("the real login during the flood = %s, want a redirect to /files", resp.Status)
	}
	t.Logf("the real login took %s during a flood of %d wrong attempts so far, %d of them checked", took.Round(time.Millisecond), answers.Load(), checked.Load())
	if took > time.Second {
		t.Errorf("the real login took %s during the flood, want within 1s", took.Round(time.Millisecond))
	}
}

// A wrong password takes as long for a name that does not exist as for
// one that does, so answers tell no user names apart.
func TestUnknownUsersTakeAsLongAsKnownOnes(t *testing.T) {
	ts := guarded(t, web.Config{Users: users(t, costFor(t, 50*time.Millisecond))})
	median := func(name func(i int) string) time.Duration {
		var took []time.Duration
		for i := range 3 {
			start := time.Now()
			resp, _ := send(t, nil, loginForm(ts.URL, name(i), "guess", "/"))
			took = append(took, time.Since(start))
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("login as %s = %s, want 401", name(i), resp.Status)
			}
		}
		slices.Sort(took)
		return took[1]
	}
	known := median(func(int) string { return "ada" })
	unknown := median(func(i int) string { return "nobody-" + strconv.Itoa(i) })
	t.Logf("wrong password: %s for a known user, %s for an unknown one", known.Round(time.Millisecond), unknown.Round(time.Millisecond))
	if unknown < known/3 || unknown > known*3 {
		t.Errorf("an unknown user is answered in %s, a known one in %s: want the same time", unknown, known)
	}
}
