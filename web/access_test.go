package web_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/crypto/bcrypt"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/web"
	"github.com/jobdrop/jobdrop/web/auth"
)

func TestLoginSessionAndLogout(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	f := history(t)
	srv, err := web.New(web.Config{Clock: clockwork.NewFakeClockAt(f.now), SecureCookies: true,
		Users: []auth.User{{Name: "alice", PasswordHash: string(hash), Role: auth.Viewer}}}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	resp, err := c.Get(ts.URL + "/tasks")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next=%2Ftasks" {
		t.Fatalf("anonymous /tasks = %s to %q, want the login page", resp.Status, resp.Header.Get("Location"))
	}
	if resp, _ := c.PostForm(ts.URL+"/login", url.Values{"user": {"alice"}, "password": {"wrong"}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong password = %s", resp.Status)
	}
	resp, err = c.PostForm(ts.URL+"/login", url.Values{"user": {"alice"}, "password": {"s3cret"}, "next": {"//evil.example/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Errorf("login = %s to %q, want / (never another site)", resp.Status, resp.Header.Get("Location"))
	}
	cookie := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "Secure", "SameSite=Lax"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("session cookie %q lacks %s", cookie, want)
		}
	}
	// httptest serves plain HTTP, so the jar keeps no Secure cookie: send
	// it by hand.
	session := strings.Split(cookie, ";")[0]
	req, _ := http.NewRequest("GET", ts.URL+"/tasks", nil)
	req.Header.Set("Cookie", session)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/tasks with the session: %v %v", err, resp.Status)
	}
	req, _ = http.NewRequest("POST", ts.URL+"/logout", nil)
	req.Header.Set("Cookie", session)
	if _, err := c.Do(req); err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest("GET", ts.URL+"/tasks", nil)
	req.Header.Set("Cookie", session)
	if resp, _ := c.Do(req); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("/tasks after logout = %s, want a redirect to the login page", resp.Status)
	}
}

func TestDownloadsStayInsideTheWatchedFolder(t *testing.T) {
	f := newFeed(t, now)
	inbox := t.TempDir()
	outside := t.TempDir()
	reused := filepath.Join(inbox, "archive", "jobs.20261122T101500Z.csv")
	for _, p := range []string{filepath.Join(inbox, "archive", "jobs.csv"), filepath.Join(inbox, "failed", "bad.csv"),
		filepath.Join(inbox, "failed", "bad.csv.errors.txt"), filepath.Join(outside, "archive", "secret.csv"), reused} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("content of "+filepath.Base(p)), 0o644)
	}
	// batch records a file by its content, as the injector does, and
	// where the watcher moved it.
	batch := func(content, file, folder string, rejected int, moved ...string) string {
		h := sha256.Sum256([]byte(content))
		id := hex.EncodeToString(h[:])
		action := record.ActionFileInjected
		if rejected > 0 {
			action = record.ActionFileRejected
		}
		b := record.Batch{ID: id, File: file, Folder: folder, Size: int64(len(content)), Rows: 1, Rejected: rejected}
		f.add(topics.Audit, "watcher", record.Audit{ID: id, At: ms(now), Actor: "watcher", Action: action, Object: file, Batch: &b})
		for i, path := range moved {
			f.add(topics.Audit, id, record.Audit{ID: id + "-moved-" + strconv.Itoa(i), At: ms(now), Actor: "watcher",
				Action: record.ActionFileMoved, Object: path, Batch: &record.Batch{ID: id, File: file, Folder: folder}})
		}
		return id
	}
	good := batch("content of jobs.csv", "jobs.csv", inbox, 0)
	bad := batch("content of bad.csv", "bad.csv", inbox, 1)
	unwatched := batch("content of secret.csv", "secret.csv", outside, 0)
	climb := batch("root:x:0:0", "../../etc/passwd", inbox, 0)
	// A second jobs.csv, kept under another name; and one recorded before
	// moves were, whose dropped name holds another file.
	second := batch("content of "+filepath.Base(reused), "jobs.csv", inbox, 0, reused)
	unrecorded := batch("another jobs.csv", "jobs.csv", inbox, 0)
	// Moves recorded outside the watched folders' archive/ and failed/.
	movedOut := batch("moved out", "out.csv", inbox, 0,
		filepath.Join(outside, "archive", "secret.csv"), filepath.Join(inbox, "archive", "..", "..", "etc", "passwd"))
	srv, err := web.New(web.Config{Clock: clockwork.NewFakeClockAt(now), Folders: []string{inbox}}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for path, want := range map[string]string{
		"/files/" + good + "/original":       "content of jobs.csv",
		"/files/" + bad + "/original":        "content of bad.csv",
		"/files/" + bad + "/errors.txt":      "content of bad.csv.errors.txt",
		"/files/" + second + "/original":     "content of " + filepath.Base(reused),
		"/files/" + unwatched + "/original":  "",
		"/files/" + climb + "/original":      "",
		"/files/" + good + "/errors.txt":     "",
		"/files/" + unrecorded + "/original": "",
		"/files/" + movedOut + "/original":   "",
		"/files/no-such-id/original":         "",
	} {
		resp, body := get(t, ts.URL+path)
		if want == "" {
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s = %s %q, want 404", path, resp.Status, body)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK || body != want || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
			t.Errorf("GET %s = %s %q (%s), want %q as an attachment", path, resp.Status, body, resp.Header.Get("Content-Disposition"), want)
		}
	}
}

func TestEventsSayChangedAfterACommit(t *testing.T) {
	f := newFeed(t, now)
	changed := make(chan struct{})
	srv, err := web.New(web.Config{Changes: func() <-chan struct{} { return changed }}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	events := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "event: ") {
				events <- line
			}
		}
		close(events)
	}()
	next := func(what string) {
		t.Helper()
		select {
		case e := <-events:
			if e != "event: changed" {
				t.Fatalf("%s: got %q", what, e)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no event within 10s", what)
		}
	}
	next("the event every stream starts with")
	close(changed) // a commit
	next("the event after a commit")
}

func TestBasicAuthRemembersOnlyTheRightPassword(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	f := history(t)
	srv, err := web.New(web.Config{Users: []auth.User{{Name: "worker", PasswordHash: string(hash), Role: auth.Operator}}}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for i, tc := range []struct {
		password string
		want     int
	}{{"s3cret", 200}, {"s3cret", 200}, {"wrong", 401}, {"s3cret ", 401}, {"s3cret", 200}} {
		req, _ := http.NewRequest("GET", ts.URL+"/api/summary", nil)
		req.SetBasicAuth("worker", tc.password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("request %d with %q = %s, want %d", i, tc.password, resp.Status, tc.want)
		}
	}
}
