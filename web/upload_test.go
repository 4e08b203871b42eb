package web_test

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/watcher"
	"github.com/jobdrop/jobdrop/web"
)

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
