package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// auditEvent is an event of GET /api/audit.
type auditEvent struct{ Actor, Action, Object, Outcome, Detail string }

// audited returns the audit events of action, read as user.
func (in *instance) audited(user, action string) []auditEvent {
	in.t.Helper()
	var all, out []auditEvent
	if _, body := in.call("GET", "/api/audit?limit=1000&action="+action, user, ""); json.Unmarshal([]byte(body), &all) != nil {
		return nil
	}
	for _, e := range all {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

// Finding 1: a web page whose name was pointed at 127.0.0.1 (DNS
// rebinding) reaches the default console, open to everyone on loopback,
// with same-origin requests. Sent as a browser would, it is refused, and
// creates nothing.
func TestHostileRebindingReachesNothing(t *testing.T) {
	in := startInstance(t)
	addr := strings.TrimPrefix(in.console, "http://")
	_, port, _ := net.SplitHostPort(addr)
	post := func(host, name string) (int, string) {
		def := `{"host":"rebind","name":"` + name + `","topic":"batch-jobs","frequency":{"timeUnit":"HOURS","time":1}}`
		req, _ := http.NewRequest("POST", in.console+"/schedulers", strings.NewReader(def))
		req.Host = host
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("rebind.evil.example:"+port, "taken-over"); code != http.StatusMisdirectedRequest {
		t.Errorf("POST /schedulers with Host rebind.evil.example:%s = %d %s, want 421", port, code, body)
	}
	// The same page of the console's own is served.
	if code, body := post(addr, "own"); code != http.StatusOK {
		t.Fatalf("POST /schedulers with Host %s = %d %s, want 200", addr, code, body)
	}
	var defs []struct{ Name string }
	kafkatest.Eventually(t, 60*time.Second, "the console's own task in GET /schedulers", func() bool {
		_, body := in.call("GET", "/schedulers?host=rebind", "", "")
		return json.Unmarshal([]byte(body), &defs) == nil && len(defs) > 0
	})
	if len(defs) != 1 || defs[0].Name != "own" {
		t.Errorf("tasks of host rebind: %+v, want only the console's own", defs)
	}
}

// multipartBody streams a form with a file of size bytes as name, and
// dryrun, without holding it in memory.
func multipartBody(name string, size int64) (io.Reader, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, err := mw.CreateFormFile("file", name)
		if err == nil {
			_, err = io.Copy(fw, io.LimitReader(zeros{}, size))
		}
		if err == nil {
			err = mw.WriteField("dryrun", "1")
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, mw.FormDataContentType()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// countEntries counts what dir holds, at any depth.
func countEntries(t *testing.T, dir string) int {
	t.Helper()
	n := -1 // dir itself
	if err := filepath.WalkDir(dir, func(string, os.DirEntry, error) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// Finding 2: uploads over 32 MiB left a full copy in the temporary folder
// for good. Four 40 MiB dry runs leave nothing there.
func TestHostileUploadsLeaveNoTemporaryFiles(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp) // after the first TempDir: the test's own folders stay where they are
	in := startInstance(t)
	before := countEntries(t, tmp)
	for i := range 4 {
		body, ctype := multipartBody(fmt.Sprintf("big-%d.csv", i), 40<<20)
		req, _ := http.NewRequest("POST", in.console+"/upload", body)
		req.Header.Set("Content-Type", ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("dry run of 40 MiB = %s, want 200", resp.Status)
		}
	}
	after := countEntries(t, tmp)
	t.Logf("entries in TMPDIR: %d before four 40 MiB dry runs, %d after", before, after)
	if after != before {
		t.Errorf("four 40 MiB dry runs left %d entries in TMPDIR", after-before)
	}
	in.stop()
	if n := countEntries(t, tmp); n != before {
		t.Errorf("%d entries in TMPDIR after jobdrop stopped, want %d", n, before)
	}
}

// closedWithin waits up to limit for the server to close conn, reading
// (and dropping) whatever it answers first, and says how long it took.
func closedWithin(t *testing.T, what string, conn net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	conn.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%s: still open after %s", what, limit)
	}
	return time.Since(start)
}

// Finding 3: POST /login took any body, and the server waited for slow
// or idle clients forever. With short timeouts configured, a slow header,
// a slow body and an idle connection are each closed, and a 200 MB login
// form is refused without being read.
func TestHostileSlowClientsAreCutOff(t *testing.T) {
	in := startInstanceEnv(t, append(consoleUsers(t),
		"JOBDROP_CONSOLE_TIMEOUTS_READ_HEADER=500ms", "JOBDROP_CONSOLE_TIMEOUTS_READ=1s",
		"JOBDROP_CONSOLE_TIMEOUTS_WRITE=1s", "JOBDROP_CONSOLE_TIMEOUTS_IDLE=1s"))
	addr := strings.TrimPrefix(in.console, "http://")
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	var wg sync.WaitGroup
	for what, start := range map[string]func(net.Conn){
		"a slow header": func(c net.Conn) { fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n", addr) },
		"a slow body": func(c net.Conn) {
			fmt.Fprintf(c, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nuser=otto&pass", addr)
		},
		"an idle connection": func(c net.Conn) {
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Errorf("idle connection's request: %v", err)
				return
			}
			resp.Body.Close()
		},
	} {
		conn := dial()
		wg.Go(func() {
			start(conn)
			took := closedWithin(t, what, conn, 10*time.Second)
			t.Logf("%s closed after %s", what, took.Round(10*time.Millisecond))
		})
	}
	wg.Wait()

	// 200 MB to /login, its length unknown, is cut off at the limit.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		mw.WriteField("user", "otto")
		fw, _ := mw.CreateFormFile("password", "x")
		_, err := io.Copy(fw, io.LimitReader(zeros{}, 200<<20))
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest("POST", in.console+"/login", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /login with 200 MB: %v", err)
	}
	resp.Body.Close()
	pr.CloseWithError(errors.New("answered"))
	t.Logf("POST /login with 200 MB answered %s after %s", resp.Status, time.Since(start).Round(time.Millisecond))
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("POST /login with 200 MB = %s, want 413", resp.Status)
	}
}

// Finding 4: wrong basic credentials were neither throttled nor audited.
// Fifty at once: five are checked and audited, the rest refused
// unchecked, the run of failures audited once; the right password waits
// too.
func TestHostileLoginsAreThrottledAndAudited(t *testing.T) {
	in := startInstanceEnv(t, consoleUsers(t))
	codes := make(chan int, 50)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", in.console+"/api/summary", nil)
			req.SetBasicAuth("otto", "guess")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[http.StatusUnauthorized] != 5 || count[http.StatusTooManyRequests] != 45 {
		t.Errorf("50 wrong passwords at once: %v, want 5 × 401 and 45 × 429", count)
	}
	if code, _ := in.call("GET", "/api/summary", "otto", ""); code != http.StatusTooManyRequests {
		t.Errorf("the right password right after = %d, want 429", code)
	}
	var failed, throttled []auditEvent
	kafkatest.Eventually(t, 60*time.Second, "the failures and the throttle in the audit trail", func() bool {
		failed, throttled = in.audited("ada", "user.login"), in.audited("ada", "user.throttled")
		return len(failed) >= 5 && len(throttled) >= 1
	})
	for _, e := range failed {
		if e.Actor != "otto" || e.Object != "api" || e.Outcome != "rejected" || !strings.Contains(e.Detail, "from 127.0.0.1") {
			t.Errorf("failed basic login audited as %+v", e)
		}
	}
	if len(failed) != 5 || len(throttled) != 1 {
		t.Errorf("audited %d failed logins and %d throttle events for 50 attempts, want 5 and 1", len(failed), len(throttled))
	}
}

// Finding 6: each refused cross-origin request was audited with its
// whole Origin. Twenty with a 200 KB Origin give twenty small records.
func TestHostileRefusalsKeepTheAuditSmall(t *testing.T) {
	in := startInstanceEnv(t, consoleUsers(t))
	origin := "https://evil.example/" + strings.Repeat("a", 200<<10)
	for range 20 {
		if code, _ := in.call("POST", "/api/tasks/acme/job/pause", "otto", "", "Origin", origin, "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden {
			t.Fatalf("cross-origin pause = %d, want 403", code)
		}
	}
	var refused []auditEvent
	kafkatest.Eventually(t, 60*time.Second, "20 refusals in the audit trail", func() bool {
		refused = in.audited("ada", "access.denied")
		return len(refused) >= 20
	})
	size := 0
	for _, e := range refused {
		size += len(e.Actor) + len(e.Object) + len(e.Detail)
		if len(e.Detail) > 1024 || !strings.Contains(e.Detail, "cross-origin request") {
			t.Errorf("refusal detail of %d bytes: %.100q", len(e.Detail), e.Detail)
		}
	}
	t.Logf("20 refusals with a 200 KB Origin: %d bytes of audit fields", size)
}

// uploadAs posts content as name to /upload as user (a dry run or a
// drop) and returns the status and the Location.
func (in *instance) uploadAs(user, name, content string, dryRun bool) (int, string) {
	in.t.Helper()
	var b strings.Builder
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", name)
	io.WriteString(fw, content)
	if dryRun {
		mw.WriteField("dryrun", "1")
	}
	mw.Close()
	req, _ := http.NewRequest("POST", in.console+"/upload", strings.NewReader(b.String()))
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.SetBasicAuth(user, reverse(user))
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// Finding 7: an upload was audited as the watcher's, and an operator
// could create definitions by upload while POST /schedulers takes an
// admin. Now both take an admin, and the upload, the file's injection and
// its tasks are audited under the user who uploaded it.
func TestHostileUploadsAreAuditedUnderTheUser(t *testing.T) {
	in := startInstanceEnv(t, consoleUsers(t), kafkatest.Cluster(t)...)
	csv := "host,name,topic,timeUnit,time\nuploads,hourly,batch-jobs,HOURS,1\n"
	if code, _ := in.uploadAs("otto", "mine.csv", csv, false); code != http.StatusForbidden {
		t.Errorf("an operator's upload = %d, want 403 as for POST /schedulers", code)
	}
	if code, _ := in.uploadAs("otto", "mine.csv", csv, true); code != http.StatusOK {
		t.Errorf("an operator's dry run = %d, want 200", code)
	}
	if code, where := in.uploadAs("ada", "mine.csv", csv, false); code != http.StatusSeeOther || where != "/files?uploaded=mine.csv" {
		t.Fatalf("an admin's upload = %d to %q", code, where)
	}
	in.waitFile("archive", "mine.csv")
	// A file's commands are audited with its batch: the injection names
	// who uploaded it.
	want := map[string]bool{"ada file.uploaded mine.csv": false, "ada file.injected mine.csv": false}
	defer func() {
		if t.Failed() {
			for _, action := range []string{"file.uploaded", "file.injected"} {
				t.Logf("%s: %+v", action, in.audited("vera", action))
			}
		}
	}()
	kafkatest.Eventually(t, 60*time.Second, "the upload and its injection audited under ada", func() bool {
		for _, action := range []string{"file.uploaded", "file.injected"} {
			for _, e := range in.audited("vera", action) {
				if _, ok := want[e.Actor+" "+e.Action+" "+e.Object]; ok {
					want[e.Actor+" "+e.Action+" "+e.Object] = true
				}
			}
		}
		for _, seen := range want {
			if !seen {
				return false
			}
		}
		return true
	})
	for _, e := range in.audited("vera", "file.injected") {
		if e.Actor != "ada" || e.Detail != "1 tasks injected" {
			t.Errorf("the uploaded file's injection audited as %+v", e)
		}
	}
}

// Finding 8: a tab in next= or back= led off the site; an upload the
// watcher never takes was reported as accepted; logged-in answers were
// cacheable.
func TestHostileSmallerHolesAreClosed(t *testing.T) {
	in := startInstanceEnv(t, consoleUsers(t), kafkatest.Cluster(t)...)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := func(path, user string, v url.Values) *http.Response {
		req, _ := http.NewRequest("POST", in.console+path, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if user != "" {
			req.SetBasicAuth(user, reverse(user))
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := form("/login", "", url.Values{"user": {"otto"}, "password": {reverse("otto")}, "next": {"/\t/evil.example"}}); resp.Header.Get("Location") != "/" {
		t.Errorf("login with next=/%%09/evil.example redirects to %q, want /", resp.Header.Get("Location"))
	}
	if resp := form("/api/tasks/pause?host=nobody", "otto", url.Values{"back": {"/\t/evil.example"}}); resp.Header.Get("Location") != "/" {
		t.Errorf("a form with back=/%%09/evil.example redirects to %q (%s), want /", resp.Header.Get("Location"), resp.Status)
	}
	for _, name := range []string{"jobs.csv.part", "jobs.csv.tmp"} {
		if code, _ := in.uploadAs("ada", name, "host,name,topic\n", false); code != http.StatusBadRequest {
			t.Errorf("upload of %s = %d, want 400", name, code)
		}
		if _, err := os.Stat(filepath.Join(in.inbox, name)); err == nil {
			t.Errorf("%s was left in the folder", name)
		}
	}
	for _, path := range []string{"/tasks", "/api/tasks", "/audit/export.csv"} {
		req, _ := http.NewRequest("GET", in.console+path, nil)
		req.SetBasicAuth("vera", reverse("vera"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
			t.Errorf("GET %s: Cache-Control %q, want no-store", path, cc)
		}
	}
}
