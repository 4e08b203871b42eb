package main

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// consoleUsers are the accounts of the access tests; every password is
// the user's name backwards.
func consoleUsers(t *testing.T) []string {
	t.Helper()
	var env []string
	for i, u := range []struct{ name, role string }{{"vera", "viewer"}, {"otto", "operator"}, {"ada", "admin"}} {
		h, err := bcrypt.GenerateFromPassword([]byte(reverse(u.name)), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		p := "JOBDROP_CONSOLE_USERS_" + string(rune('0'+i)) + "_"
		env = append(env, p+"NAME="+u.name, p+"PASSWORD_HASH="+string(h), p+"ROLE="+u.role)
	}
	return env
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// call sends a request as user (none: anonymous) and returns the status
// and body. header holds name, value pairs; the pair "body", value
// replaces the body.
func (in *instance) call(method, path, user, body string, header ...string) (int, string) {
	in.t.Helper()
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "body" {
			body = header[i+1]
		}
	}
	req, err := http.NewRequest(method, in.console+path, strings.NewReader(body))
	if err != nil {
		in.t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, reverse(user))
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] != "body" {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

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

func jsonInt(n int64) string {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(n)
	return strings.TrimSpace(b.String())
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

func TestUploadDryRunShowsTasksAndInjectsNothing(t *testing.T) {
	in := startInstanceEnv(t, consoleUsers(t), kafkatest.Cluster(t)...)
	start := in.clock.Now().Add(time.Hour).UTC()
	upload := func(user, content string, dryRun bool) (int, string) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, _ := mw.CreateFormFile("file", "preview.csv")
		fw.Write([]byte(content))
		if dryRun {
			mw.WriteField("dryrun", "1")
		}
		mw.Close()
		return in.call("POST", "/upload", user, "", "Content-Type", mw.FormDataContentType(), "body", body.String())
	}
	csv := "host,name,topic,start,timeUnit,time\nacme,every-2h,jobs," + start.Format(time.RFC3339) + ",HOURS,2\nacme,bad,jobs,,FORTNIGHTS,1\n"
	if code, _ := upload("vera", csv, true); code != http.StatusForbidden {
		t.Errorf("viewer upload = %d, want 403", code)
	}
	code, page := upload("otto", csv, true)
	if code != http.StatusOK {
		t.Fatalf("dry run = %d\n%s", code, page)
	}
	for _, want := range []string{"acme/every-2h", start.Format(time.RFC3339), start.Add(2 * time.Hour).Format(time.RFC3339), "FORTNIGHTS", "1 of 2 rows are invalid"} {
		if !strings.Contains(page, want) {
			t.Errorf("dry run page lacks %q", want)
		}
	}
	entries, _ := os.ReadDir(in.inbox)
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("the dry run left %s in the inbox", e.Name())
		}
	}
}

func TestHashPassword(t *testing.T) {
	var out bytes.Buffer
	if err := hashPassword(strings.NewReader("correct horse\n"), &out, nil); err != nil {
		t.Fatal(err)
	}
	hash := strings.TrimSpace(out.String())
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte("correct horse")) != nil {
		t.Errorf("%q is not a hash of the password", hash)
	}
	if err := hashPassword(strings.NewReader("\n"), &out, nil); err == nil {
		t.Error("an empty password was hashed")
	}
}
