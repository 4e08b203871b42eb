package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

func TestAPIWritesGoThroughKafkaWithRolesAndAudit(t *testing.T) {
	in := startInstanceEnv(t, consoleUsers(t), kafkatest.Cluster(t)...)
	start := in.clock.Now().Add(time.Hour).UnixMilli()
	def := `{"host":"lightapi.net","name":"market-192.168.1.1-8443","action":"INSERT","frequency":{"timeUnit":"MINUTES","time":2},"topic":"light-scheduler","start":` +
		jsonInt(start) + `,"data":{"question":"Hello","owner":"market"}}`

	// Nobody anonymous; a viewer reads but may not write.
	if code, _ := in.call("GET", "/api/tasks", "", ""); code != http.StatusUnauthorized {
		t.Errorf("anonymous GET /api/tasks = %d, want 401", code)
	}
	if code, body := in.call("POST", "/schedulers", "vera", def); code != http.StatusForbidden {
		t.Errorf("viewer POST /schedulers = %d %s, want 403", code, body)
	}
	// A browser on another site is refused whoever is logged in.
	if code, body := in.call("POST", "/schedulers", "ada", def, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden {
		t.Errorf("cross-origin POST /schedulers = %d %s, want 403", code, body)
	}
	// An invalid definition names its field.
	code, body := in.call("POST", "/schedulers", "ada", strings.Replace(def, `"MINUTES"`, `"FORTNIGHTS"`, 1))
	if code != http.StatusBadRequest || !strings.Contains(body, `"field": "frequency.timeUnit"`) && !strings.Contains(body, `"field":"frequency.timeUnit"`) {
		t.Errorf("invalid POST /schedulers = %d %s, want 400 naming frequency.timeUnit", code, body)
	}
	for _, bad := range []struct{ body, field string }{
		{strings.Replace(def, `"frequency"`, `"frequncy"`, 1), "frequncy"},
		{strings.Replace(def, `"question":"Hello"`, `"question":{"a":1}`, 1), "data"},
		{strings.Replace(def, `"topic":"light-scheduler"`, `"topic":"light-scheduler-audit"`, 1), "topic"},
	} {
		code, body := in.call("POST", "/schedulers", "ada", bad.body)
		var answer struct {
			Fields []struct{ Field, Reason string }
		}
		if json.Unmarshal([]byte(body), &answer); code != http.StatusBadRequest || len(answer.Fields) != 1 || answer.Fields[0].Field != bad.field {
			t.Errorf("POST /schedulers with a bad %s = %d %s, want 400 naming the field", bad.field, code, body)
		}
	}
	if code, body := in.call("POST", "/schedulers", "ada", def); code != http.StatusOK {
		t.Fatalf("admin POST /schedulers = %d %s", code, body)
	}
	var defs []map[string]any
	kafkatest.Eventually(t, 60*time.Second, "GET /schedulers to list the task", func() bool {
		_, body := in.call("GET", "/schedulers?host=lightapi.net&unit=MINUTES", "vera", "")
		return json.Unmarshal([]byte(body), &defs) == nil && len(defs) == 1
	})
	if defs[0]["name"] != "market-192.168.1.1-8443" {
		t.Errorf("GET /schedulers = %v", defs)
	}

	key := "/api/tasks/lightapi.net/market-192.168.1.1-8443"
	if code, _ := in.call("POST", key+"/pause", "vera", ""); code != http.StatusForbidden {
		t.Errorf("viewer pause = %d, want 403", code)
	}
	if code, body := in.call("POST", key+"/pause", "otto", ""); code != http.StatusOK {
		t.Fatalf("operator pause = %d %s", code, body)
	}
	kafkatest.Eventually(t, 60*time.Second, "the task to show as paused", func() bool {
		var task struct{ Paused bool }
		_, body := in.call("GET", key, "vera", "")
		return json.Unmarshal([]byte(body), &task) == nil && task.Paused
	})
	if code, body := in.call("POST", "/api/tasks/resume?host=lightapi.net", "otto", ""); code != http.StatusOK || !strings.Contains(body, `"sent": 1`) {
		t.Fatalf("bulk resume = %d %s", code, body)
	}
	if code, body := in.call("DELETE", key, "otto", ""); code != http.StatusOK {
		t.Fatalf("delete = %d %s", code, body)
	}
	kafkatest.Eventually(t, 60*time.Second, "the task to end deleted", func() bool {
		var task struct{ Status string }
		_, body := in.call("GET", key, "vera", "")
		return json.Unmarshal([]byte(body), &task) == nil && task.Status == "deleted"
	})

	// Every write and every refusal is in the audit trail, under its actor.
	want := map[string]string{"ada": "task.created", "otto": "task.paused"}
	kafkatest.Eventually(t, 60*time.Second, "the audit trail to hold the writes and refusals", func() bool {
		var events []struct{ Actor, Action, Object string }
		_, body := in.call("GET", "/api/audit?limit=1000", "vera", "")
		if json.Unmarshal([]byte(body), &events) != nil {
			return false
		}
		seen := map[string]bool{}
		denied := 0
		for _, e := range events {
			seen[e.Actor+" "+e.Action] = true
			if e.Action == "access.denied" {
				denied++
			}
		}
		for actor, action := range want {
			if !seen[actor+" "+action] {
				return false
			}
		}
		return denied >= 3 && seen["otto task.resumed"] && seen["otto task.deleted"]
	})
}

func TestConsoleAccessConfig(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     []string
		wantErr string
	}{
		{"loopback without users is open", []string{"JOBDROP_CONSOLE_LISTEN=127.0.0.1:8080"}, ""},
		{"localhost without users is open", []string{"JOBDROP_CONSOLE_LISTEN=localhost:8080"}, ""},
		{"all addresses without users refuse", []string{"JOBDROP_CONSOLE_LISTEN=0.0.0.0:8080"}, "console.users is empty"},
		{"a public name without users refuses", []string{"JOBDROP_CONSOLE_LISTEN=jobdrop.example:8080"}, "console.users is empty"},
		{"all addresses with users start", []string{"JOBDROP_CONSOLE_LISTEN=:8080",
			"JOBDROP_CONSOLE_USERS_0_NAME=alice", "JOBDROP_CONSOLE_USERS_0_PASSWORD_HASH=" + string(hash), "JOBDROP_CONSOLE_USERS_0_ROLE=admin"}, ""},
		{"an unknown role", []string{"JOBDROP_CONSOLE_USERS_0_NAME=alice", "JOBDROP_CONSOLE_USERS_0_PASSWORD_HASH=" + string(hash),
			"JOBDROP_CONSOLE_USERS_0_ROLE=root"}, "console.users[0].role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig("", tc.env)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("loadConfig: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("loadConfig error = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// TestHashPassword hashes at the lowest cost: cost 12, the default, takes
// seconds under -race and proves nothing more.
func TestHashPassword(t *testing.T) {
	var out bytes.Buffer
	if err := hashPassword(strings.NewReader("correct horse\n"), &out, []string{"--cost", "4"}); err != nil {
		t.Fatal(err)
	}
	hash := strings.TrimSpace(out.String())
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte("correct horse")) != nil {
		t.Errorf("%q is not a hash of the password", hash)
	}
	if cost, err := bcrypt.Cost([]byte(hash)); err != nil || cost != 4 {
		t.Errorf("%q has cost %d (%v), want 4", hash, cost, err)
	}
	for _, args := range [][]string{{"--cost", "3"}, {"--cost", "32"}, {"correct horse"}} {
		if err := hashPassword(strings.NewReader("correct horse\n"), &out, args); err == nil {
			t.Errorf("hash-password %q: no error", args)
		}
	}
	if err := hashPassword(strings.NewReader("\n"), &out, []string{"--cost", "4"}); err == nil {
		t.Error("an empty password was hashed")
	}
}

// TestLoginsAndConfigChangesAreAudited checks that the audit trail says
// who logged in, who was refused and who logged out, and what changed in
// a node's configuration between two starts, without any secret.
func TestLoginsAndConfigChangesAreAudited(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	dir := t.TempDir()
	env := append(consoleUsers(t), "JOBDROP_DATA_DIR="+filepath.Join(dir, "data"), "JOBDROP_WATCH_0_DIR="+filepath.Join(dir, "inbox"))
	in := startInstanceEnv(t, env, brokers...)

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := func(path string, v url.Values, cookie string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", in.console+path, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := form("/login", url.Values{"user": {"vera"}, "password": {"guess"}}, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong password = %s, want 401", resp.Status)
	}
	form("/login", url.Values{"user": {"<b>mallory\n"}, "password": {"x"}}, "")
	resp := form("/login", url.Values{"user": {"otto"}, "password": {reverse("otto")}}, "")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login = %s, want a redirect", resp.Status)
	}
	form("/logout", nil, strings.Split(resp.Header.Get("Set-Cookie"), ";")[0])

	type event struct{ Actor, Action, Object, Outcome, Detail string }
	audit := func(in *instance, action string) []event {
		var all, out []event
		if _, body := in.call("GET", "/api/audit?limit=1000&action="+action, "otto", ""); json.Unmarshal([]byte(body), &all) != nil {
			return nil
		}
		for _, e := range all {
			if e.Action == action {
				out = append(out, e)
			}
		}
		return out
	}
	kafkatest.Eventually(t, 60*time.Second, "logins, the refusals and the logout in the audit trail", func() bool {
		seen := map[string]bool{}
		for _, e := range append(audit(in, "user.login"), audit(in, "user.logout")...) {
			seen[e.Actor+" "+e.Action+" "+e.Outcome] = true
		}
		return seen["vera user.login rejected"] && seen[`"<b>mallory\n" user.login rejected`] &&
			seen["otto user.login ok"] && seen["otto user.logout ok"]
	})
	// The start's config record and the logins go through different
	// partitions: wait for it too.
	var first []event
	kafkatest.Eventually(t, 60*time.Second, "the first start's config record", func() bool {
		first = audit(in, "config.changed")
		return len(first) > 0
	})
	if len(first) != 1 || !strings.Contains(first[0].Detail, "first start") || !strings.Contains(first[0].Detail, `console.listen: set to "127.0.0.1:0"`) {
		t.Fatalf("config events after a first start = %+v, want one naming the keys", first)
	}
	in.stop()

	// The same configuration again: nothing to say; then another
	// fires-per-transaction cap and a new password for vera.
	in = startInstanceEnv(t, env, brokers...)
	kafkatest.Eventually(t, 60*time.Second, "/readyz 200 (the configuration compared)", func() bool {
		code, _ := in.readyz()
		return code == http.StatusOK
	})
	in.stop()
	hash, _ := bcrypt.GenerateFromPassword([]byte("new"), bcrypt.MinCost)
	in = startInstanceEnv(t, append(env, "JOBDROP_SCHEDULER_MAX_FIRES_PER_TXN=500", "JOBDROP_CONSOLE_USERS_0_PASSWORD_HASH="+string(hash)), brokers...)
	var changed []event
	kafkatest.Eventually(t, 60*time.Second, "the configuration change in the audit trail", func() bool {
		changed = audit(in, "config.changed")
		return slices.ContainsFunc(changed, func(e event) bool { return !strings.Contains(e.Detail, "first start") })
	})
	if len(changed) != 2 {
		t.Errorf("config events after three starts, the second like the first = %+v, want 2", changed)
	}
	var latest event
	for _, e := range changed {
		if !strings.Contains(e.Detail, "first start") {
			latest = e
		}
	}
	for _, want := range []string{`scheduler.max_fires_per_txn: set to "500"`, "console.users[0].password_hash: changed"} {
		if !strings.Contains(latest.Detail, want) {
			t.Errorf("config change %q does not say %q", latest.Detail, want)
		}
	}
	if strings.Contains(latest.Detail, "$2a$") || strings.Contains(first[0].Detail, "$2a$") || strings.Contains(latest.Detail, "console.listen") {
		t.Errorf("config change says more than what changed, or a secret: %q", latest.Detail)
	}
}
