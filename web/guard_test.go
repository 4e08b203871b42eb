package web_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"golang.org/x/crypto/bcrypt"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/watcher"
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

// clock is a time that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
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

// Wrong passwords slow the next attempts of their user name, more with
// every failure, then lock it; a flood of them is audited once a run,
// not once an attempt, and checks no password while refused.
func TestFailedPasswordsAreThrottledThenLocked(t *testing.T) {
	cmd := &commander{}
	clk := &clock{t: now}
	ts := guarded(t, web.Config{Users: users(t, bcrypt.MinCost), Commander: cmd, Now: clk.Now})
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

// uploadForm is a multipart upload of content as name.
func uploadForm(t *testing.T, target, user, name, content string, dryRun bool) *http.Request {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write([]byte(content))
	if dryRun {
		mw.WriteField("dryrun", "1")
	}
	mw.Close()
	req, _ := http.NewRequest("POST", target, &b)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if user != "" {
		req.SetBasicAuth(user, backwards(user))
	}
	return req
}

// An upload the watcher would leave alone in the folder is refused with
// the reason, not reported as accepted.
func TestUploadsTheWatcherWouldNeverTakeAreRefused(t *testing.T) {
	dir := t.TempDir()
	ts := guarded(t, web.Config{Users: users(t, bcrypt.MinCost), UploadDir: dir, NameProblem: watcher.NameProblem})
	for _, name := range []string{"jobs.csv.part", "jobs.TMP", "~jobs.csv"} {
		resp, body := send(t, nil, uploadForm(t, ts.URL+"/upload", "ada", name, "host,name,topic\n", false))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "would never be taken") {
			t.Errorf("upload of %s = %s, want 400 saying why", name, resp.Status)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused uploads left %v in the folder", entries)
	}
	if resp, _ := send(t, nil, uploadForm(t, ts.URL+"/upload", "ada", "jobs.csv", "host,name,topic\n", false)); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("upload of jobs.csv = %s, want it dropped", resp.Status)
	}
	if _, err := os.Stat(filepath.Join(dir, "jobs.csv")); err != nil {
		t.Errorf("jobs.csv not dropped: %v", err)
	}
}

// Creating and replacing definitions takes the admin role whichever way
// they arrive; an operator may still try a file.
func TestDefiningTakesTheAdminRoleWhicheverWay(t *testing.T) {
	dir := t.TempDir()
	cmd := &commander{}
	ts := guarded(t, web.Config{Users: users(t, bcrypt.MinCost), UploadDir: dir, Commander: cmd,
		Preview: func(context.Context, string, string, func(int, task.Definition, error) error) error { return nil }})
	def := `{"host":"acme","name":"new","topic":"jobs"}`
	post := func(user, path, body string) int {
		req := basic("POST", ts.URL+path, user, backwards(user))
		req.Body = io.NopCloser(strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, _ := send(t, nil, req)
		return resp.StatusCode
	}
	for _, tc := range []struct {
		what string
		code func(user string) int
	}{
		{"POST /schedulers", func(u string) int { return post(u, "/schedulers", def) }},
		{"an upload", func(u string) int {
			resp, _ := send(t, nil, uploadForm(t, ts.URL+"/upload", u, u+".csv", "host,name,topic\n", false))
			return resp.StatusCode
		}},
		{"applying a held file", func(u string) int { return post(u, "/api/files/"+payrollID+"/apply", "") }},
	} {
		if code := tc.code("otto"); code != http.StatusForbidden {
			t.Errorf("an operator's %s = %d, want 403", tc.what, code)
		}
		if code := tc.code("ada"); code == http.StatusForbidden || code == http.StatusUnauthorized {
			t.Errorf("an admin's %s = %d, want it let through", tc.what, code)
		}
	}
	if resp, _ := send(t, nil, uploadForm(t, ts.URL+"/upload", "otto", "try.csv", "host,name,topic\n", true)); resp.StatusCode != http.StatusOK {
		t.Errorf("an operator's dry run = %s, want 200", resp.Status)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != "ada.csv" {
		t.Errorf("upload folder holds %v, want ada.csv alone", entries)
	}
}

// Dry runs are costly (a crafted workbook takes seconds and hundreds of
// MiB): only so many run at once, the others are told to come back.
func TestDryRunsAreBounded(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	preview := func(ctx context.Context, _, _ string, _ func(int, task.Definition, error) error) error {
		entered <- struct{}{}
		<-release
		return nil
	}
	differ := func(context.Context, string, string, string) (record.Diff, []string, error) {
		return record.Diff{}, nil, nil
	}
	ts := guarded(t, web.Config{Users: users(t, bcrypt.MinCost), UploadDir: t.TempDir(), Preview: preview, Differ: differ, DryRuns: 2})
	done := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := noRedirects.Do(uploadForm(t, ts.URL+"/upload", "otto", "slow.xlsx", "x", true))
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		<-entered
	}
	resp, body := send(t, nil, uploadForm(t, ts.URL+"/upload", "otto", "third.csv", "x", true))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "2 dry runs are running already") {
		t.Errorf("a third dry run while two run = %s (Retry-After %q), want 503 saying so", resp.Status, resp.Header.Get("Retry-After"))
	}
	req, _ := http.NewRequest("POST", ts.URL+"/api/diff?name=x.csv", strings.NewReader("x"))
	req.SetBasicAuth("vera", backwards("vera"))
	if resp, body := send(t, nil, req); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "dry runs are running already") {
		t.Errorf("POST /api/diff while two dry runs run = %s %s, want 503 saying so", resp.Status, body)
	}
	close(release)
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("a dry run let in = %d, want 200", code)
		}
	}
	go func() { <-entered }()
	if resp, _ := send(t, nil, uploadForm(t, ts.URL+"/upload", "otto", "after.csv", "x", true)); resp.StatusCode != http.StatusOK {
		t.Errorf("a dry run once the others ended = %s, want 200", resp.Status)
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
