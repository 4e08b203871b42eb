package web_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"golang.org/x/crypto/bcrypt"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web"
	"github.com/jobdrop/jobdrop/web/auth"
)

// commander stands in for the injector: it keeps what the console sends
// and audits.
type commander struct {
	mu     sync.Mutex
	sent   []task.Definition
	audits []record.Audit
}

var _ web.Commander = (*commander)(nil)

func (c *commander) Send(_ context.Context, _ string, defs ...task.Definition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, defs...)
	return nil
}

func (c *commander) ReportStatus(context.Context, string, record.Status) error { return nil }

func (c *commander) AppendLogs(context.Context, record.Status) error { return nil }

func (c *commander) Trigger(context.Context, string, string, string) (string, error) { return "", nil }

func (c *commander) Audit(_ context.Context, a record.Audit) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.audits = append(c.audits, a)
	return nil
}

// audited returns the audit events of action so far.
func (c *commander) audited(action string) []record.Audit {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []record.Audit
	for _, a := range c.audits {
		if a.Action == action {
			out = append(out, a)
		}
	}
	return out
}

// users are the accounts of these tests, each with the password of its
// name backwards, hashed at cost.
func users(t *testing.T, cost int) []auth.User {
	t.Helper()
	var out []auth.User
	for _, u := range []struct {
		name string
		role auth.Role
	}{{"vera", auth.Viewer}, {"otto", auth.Operator}, {"ada", auth.Admin}} {
		h, err := bcrypt.GenerateFromPassword([]byte(backwards(u.name)), cost)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, auth.User{Name: u.name, PasswordHash: string(h), Role: u.role})
	}
	return out
}

func backwards(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

// guarded serves the console over the history with cfg, as jobdrop
// does: through its own http.Server, on a loopback address.
func guarded(t *testing.T, cfg web.Config) *httptest.Server {
	t.Helper()
	srv, err := web.New(cfg, history(t).st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = srv.HTTPServer()
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// send makes a request and returns its answer with the body read.
func send(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	if c == nil {
		c = noRedirects
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func loginForm(base, user, password, next string) *http.Request {
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"user": {user}, "password": {password}, "next": {next}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

func basic(method, target, user, password string) *http.Request {
	req, _ := http.NewRequest(method, target, nil)
	req.SetBasicAuth(user, password)
	return req
}

// A page on another site whose name was pointed at 127.0.0.1 (DNS
// rebinding) sends its own name as Host, and its requests are
// same-origin to the browser: they must be refused before any handler
// runs, while every name the console answers to still works.
func TestHostCheckRefusesNamesTheConsoleDoesNotAnswerTo(t *testing.T) {
	cmd := &commander{}
	ts := guarded(t, web.Config{Commander: cmd, Hosts: []string{"jobdrop.example.com"}})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
	def := `{"host":"acme","name":"rebound","topic":"jobs"}`
	for _, tc := range []struct {
		host string
		want int
	}{
		{"rebind.evil.example:" + port, http.StatusMisdirectedRequest},
		{"rebind.evil.example", http.StatusMisdirectedRequest},
		{"jobdrop.example.com.evil.example", http.StatusMisdirectedRequest},
		{"127.0.0.1:" + port, http.StatusOK},
		{"localhost:" + port, http.StatusOK},
		{"[::1]:" + port, http.StatusOK},
		{"jobdrop.example.com", http.StatusOK},
		{"JobDrop.Example.COM.:" + port, http.StatusOK},
	} {
		req, _ := http.NewRequest("POST", ts.URL+"/schedulers", strings.NewReader(def))
		req.Host = tc.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "http://"+tc.host)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, body := send(t, nil, req)
		if resp.StatusCode != tc.want {
			t.Errorf("POST /schedulers with Host %s = %s %s, want %d", tc.host, resp.Status, body, tc.want)
		}
	}
	if n := len(cmd.sent); n != 5 {
		t.Errorf("%d definitions sent, want 5: one for each name the console answers to", n)
	}
	// An HTTP/1.0 probe names no host (the container's health check).
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /healthz HTTP/1.0\r\n\r\n")
	if status, _ := bufio.NewReader(conn).ReadString('\n'); !strings.Contains(status, " 200 ") {
		t.Errorf("GET /healthz with no Host = %q, want 200", status)
	}
}

// Every route reads at most its limit, the login form included, and says
// so rather than reading on.
func TestBodiesAreBoundedOnEveryRoute(t *testing.T) {
	ts := guarded(t, web.Config{Users: users(t, bcrypt.MinCost), Commander: &commander{}})
	big := strings.Repeat("x", 2<<20)
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader("user=ada&password=" + big)
		if chunked {
			body = io.MultiReader(body) // no length known up front
		}
		req, _ := http.NewRequest("POST", ts.URL+"/login", body)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if resp, _ := send(t, nil, req); resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("POST /login with 2 MiB (chunked %v) = %s, want 413", chunked, resp.Status)
		}
	}
	req, _ := http.NewRequest("POST", ts.URL+"/api/executions/f1/status", strings.NewReader(`{"status":"SUCCESS","message":"`+big+`"}`))
	req.SetBasicAuth("otto", backwards("otto"))
	if resp, _ := send(t, nil, req); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("POST status with 2 MiB = %s, want 413", resp.Status)
	}
}

// Nothing a client sends makes an audit record large or breaks its
// lines: 20 refused requests with a 200 KB Origin add 20 small records.
func TestAuditFieldsFromRequestsAreBounded(t *testing.T) {
	cmd := &commander{}
	ts := guarded(t, web.Config{Users: users(t, bcrypt.MinCost), Commander: cmd})
	origin := "https://evil.example/" + strings.Repeat("a", 200<<10)
	for range 20 {
		req := basic("POST", ts.URL+"/api/tasks/acme/nightly/pause", "otto", backwards("otto"))
		req.Header.Set("Origin", origin)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		if resp, _ := send(t, nil, req); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-origin pause = %s, want 403", resp.Status)
		}
	}
	send(t, nil, loginForm(ts.URL, "mallory\x1b[31m\n"+strings.Repeat("m", 100<<10), "x", "/"))
	send(t, nil, loginForm(ts.URL, "\u202eevil", "x", "/"))
	refused := cmd.audited(record.ActionAccessDenied)
	if len(refused) != 20 {
		t.Fatalf("%d refusals audited, want 20", len(refused))
	}
	all := append(refused, cmd.audited(record.ActionLogin)...)
	for _, a := range all {
		for field, v := range map[string]string{"actor": a.Actor, "object": a.Object, "detail": a.Detail} {
			if len(v) > 1024 || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }) {
				t.Errorf("%s %s is %d bytes: %.80q", a.Action, field, len(v), v)
			}
		}
	}
	if d := refused[0].Detail; !strings.Contains(d, "cross-origin request (Origin \"https://evil.example/aaa") {
		t.Errorf("refusal detail %.120q does not say what was refused", d)
	}
}

// A redirect target given with a login or a form goes to this site only:
// a tab (which browsers drop) or a backslash cannot make it another.
func TestRedirectsStayOnTheSite(t *testing.T) {
	ts := guarded(t, web.Config{Users: users(t, bcrypt.MinCost), Commander: &commander{}})
	for next, want := range map[string]string{
		"/\t/evil.example":         "/",
		"/\\evil.example":          "/",
		"/ /evil.example":          "/",
		"//evil.example":           "/",
		"https://evil.example":     "/",
		"/tasks?host=acme#nightly": "/tasks?host=acme#nightly",
	} {
		resp, _ := send(t, nil, loginForm(ts.URL, "otto", backwards("otto"), next))
		if got := resp.Header.Get("Location"); got != want {
			t.Errorf("login with next %q redirects to %q, want %q", next, got, want)
		}
	}
	// back= of a form's action: the raw query holds %09, as a link does.
	req, _ := http.NewRequest("POST", ts.URL+"/api/tasks/pause?host=nobody", strings.NewReader("back=/%09/evil.example"))
	req.SetBasicAuth("otto", backwards("otto"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, body := send(t, nil, req); resp.Header.Get("Location") != "/" {
		t.Errorf("a form's back=/%%09/evil.example redirects to %q (%s %s), want /", resp.Header.Get("Location"), resp.Status, body)
	}
}

// What only a logged-in user sees is never kept by a browser or a proxy;
// static files may be.
func TestAuthenticatedAnswersAreNotStored(t *testing.T) {
	ts := guarded(t, web.Config{Users: users(t, bcrypt.MinCost)})
	for _, path := range []string{"/", "/tasks", "/api/tasks", "/audit/export.csv", "/schedulers", "/login"} {
		resp, _ := send(t, nil, basic("GET", ts.URL+path, "vera", backwards("vera")))
		if cc := resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusOK || !strings.Contains(cc, "no-store") {
			t.Errorf("GET %s = %s with Cache-Control %q, want no-store", path, resp.Status, cc)
		}
	}
	resp, _ := send(t, nil, basic("GET", ts.URL+"/static/console.css", "", ""))
	if cc := resp.Header.Get("Cache-Control"); strings.Contains(cc, "no-store") {
		t.Errorf("a static file has Cache-Control %q", cc)
	}
}

// The live-update stream outlives the server's read and write timeouts,
// which end every other slow request.
func TestEventsOutliveTheServerTimeouts(t *testing.T) {
	changed := make(chan struct{})
	var mu sync.Mutex
	ts := guarded(t, web.Config{
		Changes: func() <-chan struct{} {
			mu.Lock()
			defer mu.Unlock()
			return changed
		},
		Timeouts: web.Timeouts{ReadHeader: 300 * time.Millisecond, Read: 300 * time.Millisecond, Write: 300 * time.Millisecond, Idle: 300 * time.Millisecond},
	})
	resp, err := http.Get(ts.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: ") {
				events <- sc.Text()
			}
		}
		close(events)
	}()
	if e := <-events; e != "event: changed" {
		t.Fatalf("first event %q", e)
	}
	// Another connection, idle, is closed once the timeouts pass: by then
	// the stream is older than all of them.
	idleClosed(t, strings.TrimPrefix(ts.URL, "http://"), 10*time.Second)
	mu.Lock()
	close(changed)
	changed = make(chan struct{})
	mu.Unlock()
	select {
	case e, ok := <-events:
		if !ok || e != "event: changed" {
			t.Fatalf("after the timeouts the stream gave %q (open %v), want a change event", e, ok)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change event after the timeouts")
	}
}

// idleClosed makes a request on a new connection, then waits (within
// limit) for the server to close the connection as idle.
func idleClosed(t *testing.T, addr string, limit time.Duration) time.Duration {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	start := time.Now()
	conn.SetReadDeadline(start.Add(limit))
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("an idle connection still open after %s (%v)", limit, err)
	}
	return time.Since(start)
}

// Behind a trusted proxy the client is the address the proxy names;
// anyone else's X-Forwarded-For is ignored.
func TestTrustedProxyNamesTheClient(t *testing.T) {
	cmd := &commander{}
	ts := guarded(t, web.Config{Users: users(t, bcrypt.MinCost), Commander: cmd,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}})
	for _, c := range []struct {
		client *http.Client
		want   string
	}{{from("127.0.0.2"), "from 203.0.113.9"}, {from("127.0.0.3"), "from 127.0.0.3"}} {
		req := loginForm(ts.URL, "vera", "guess", "/")
		req.Header.Set("X-Forwarded-For", "198.51.100.1, 203.0.113.9")
		send(t, c.client, req)
		failed := cmd.audited(record.ActionLogin)
		if d := failed[len(failed)-1].Detail; !strings.HasSuffix(d, c.want) {
			t.Errorf("failed login audited %q, want it %s", d, c.want)
		}
	}
}
