package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/jobdrop/jobdrop/web"
	"github.com/jobdrop/jobdrop/web/auth"
)

// TestProbesAndMetricsNeedNoLogin: with console users configured, the
// probes and the metrics answer without credentials, and everything else
// still asks for them.
func TestProbesAndMetricsNeedNoLogin(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	f := newFeed(t, time.Now())
	var schedulerErr atomic.Pointer[error]
	notJoined := errors.New("not yet a member of its consumer group")
	schedulerErr.Store(&notJoined)
	srv, err := web.New(web.Config{
		Users:   []auth.User{{Name: "alice", PasswordHash: string(hash), Role: auth.Viewer}},
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "jobdrop_up 1\n") }),
		Ready: func(context.Context) []web.ReadyCheck {
			return []web.ReadyCheck{{Name: "kafka"}, {Name: "scheduler", Err: *schedulerErr.Load()}}
		},
	}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	call := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("/healthz"); code != http.StatusOK || body != "{\n  \"status\": \"ok\"\n}\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := call("/metrics"); code != http.StatusOK || body != "jobdrop_up 1\n" {
		t.Errorf("/metrics = %d %q", code, body)
	}

	type readiness struct {
		Ready  bool              `json:"ready"`
		Checks map[string]string `json:"checks"`
	}
	code, body := call("/readyz")
	var r readiness
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	if code != http.StatusServiceUnavailable || r.Ready || r.Checks["kafka"] != "ok" || r.Checks["scheduler"] != notJoined.Error() {
		t.Errorf("/readyz while the scheduler is not in its group = %d %+v", code, r)
	}
	var none error
	schedulerErr.Store(&none)
	code, body = call("/readyz")
	r = readiness{}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	if code != http.StatusOK || !r.Ready || r.Checks["scheduler"] != "ok" {
		t.Errorf("/readyz once every check holds = %d %+v", code, r)
	}

	if code, _ := call("/api/summary"); code != http.StatusUnauthorized {
		t.Errorf("/api/summary without login = %d, want 401", code)
	}
}

func TestMetricsAbsentWithoutHandler(t *testing.T) {
	ts := serve(t, newFeed(t, time.Now()))
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics with no handler = %s, want 404", resp.Status)
	}
}
