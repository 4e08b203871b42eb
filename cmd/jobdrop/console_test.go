package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	text := pageText(t, page)
	for _, want := range []string{"acme/every-2h", start.Format(time.RFC3339), start.Add(2 * time.Hour).Format(time.RFC3339),
		"preview.csv: row 3: column timeUnit", "FORTNIGHTS", "1 of 2 rows are invalid"} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run page lacks %q", want)
		}
	}
	entries, _ := os.ReadDir(in.inbox)
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".dryrun") {
			t.Errorf("the dry run left %s in the inbox", e.Name())
		}
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

// TestStopWithConsolePageOpen stops jobdrop while a page's live-update
// stream is open, as systemctl stop does with a browser left on the
// console: the stream must end and jobdrop return without error, well
// within the 5 s it gives console requests, and not time out waiting for
// the page.
func TestStopWithConsolePageOpen(t *testing.T) {
	in := startInstance(t)
	kafkatest.Eventually(t, 60*time.Second, "/readyz 200", func() bool {
		code, _ := in.readyz()
		return code == http.StatusOK
	})
	resp, err := http.Get(in.console + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /events: %s", resp.Status)
	}
	stream := bufio.NewReader(resp.Body)
	for {
		line, err := stream.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before its first event: %v", err)
		}
		if line == "event: changed\n" {
			break
		}
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, stream)
		ended <- err
	}()

	start := time.Now()
	in.stop() // fails the test if run returns an error
	took := time.Since(start)
	if took >= 4*time.Second {
		t.Errorf("jobdrop took %s to stop with a page open", took.Round(time.Millisecond))
	}
	t.Logf("stopped in %s", took.Round(time.Millisecond))
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("the stream broke off (%v); want it ended cleanly", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the page's stream is still open after jobdrop stopped")
	}
}

// TestReusedFileNameServesEachDropsOwnFiles drops two different files
// under one name, twice: a second jobs.csv is kept under another name in
// archive/ (or failed/), and the console must still serve each file's own
// original and error report, not the first drop's.
func TestReusedFileNameServesEachDropsOwnFiles(t *testing.T) {
	in := startInstance(t)
	batchOf := func(content string) string {
		h := sha256.Sum256([]byte(content))
		return hex.EncodeToString(h[:])
	}
	recorded := func(content string) {
		t.Helper()
		kafkatest.Eventually(t, 60*time.Second, "the file's batch in the console", func() bool {
			code, _ := in.call(http.MethodGet, "/api/files/"+batchOf(content), "", "")
			return code == http.StatusOK
		})
	}
	// served waits for path to serve want: the console learns where a
	// file went a moment after the watcher moved it.
	served := func(path, want string) {
		t.Helper()
		var last string
		kafkatest.Eventually(t, 30*time.Second, "GET "+path+" to serve its own file", func() bool {
			code, body := in.call(http.MethodGet, path, "", "")
			if got := fmt.Sprintf("%d %q", code, body); got != last {
				last = got
				t.Logf("GET %s = %s", path, got)
			}
			return code == http.StatusOK && body == want
		})
	}
	// kept waits for the file holding content in the inbox's subfolder
	// sub, and returns its path.
	kept := func(sub, content string) string {
		t.Helper()
		var path string
		kafkatest.Eventually(t, 60*time.Second, "a file in "+sub+"/ holding "+strconv.Quote(content), func() bool {
			entries, _ := os.ReadDir(filepath.Join(in.inbox, sub))
			for _, e := range entries {
				if b, err := os.ReadFile(filepath.Join(in.inbox, sub, e.Name())); err == nil && string(b) == content {
					path = filepath.Join(in.inbox, sub, e.Name())
					return true
				}
			}
			return false
		})
		return path
	}

	// dropTwice drops two files under one name, the second once the first
	// was handled and moved to sub, as a sender of a daily jobs.csv does.
	dropTwice := func(name, sub, first, second string) {
		t.Helper()
		in.drop(name, first)
		in.waitFile(sub, name)
		recorded(first)
		in.drop(name, second)
		recorded(second)
		if p := kept(sub, second); filepath.Base(p) == name {
			t.Fatalf("the second %s was kept as %s; want another name", name, p)
		}
	}

	const header = "host,name,topic,timeUnit,time\n"
	first, second := header+"acme,first,batch-jobs,MINUTES,5\n", header+"acme,second,batch-jobs,MINUTES,10\n"
	dropTwice("jobs.csv", "archive", first, second)
	for _, content := range []string{first, second} {
		served("/files/"+batchOf(content)+"/original", content)
	}

	badFirst, badSecond := header+"acme,bad-one,batch-jobs,FORTNIGHTS,1\n", header+"acme,bad-two,batch-jobs,EONS,1\n"
	dropTwice("rejected.csv", "failed", badFirst, badSecond)
	for _, content := range []string{badFirst, badSecond} {
		report, err := os.ReadFile(kept("failed", content) + ".errors.txt")
		if err != nil {
			t.Fatal(err)
		}
		served("/files/"+batchOf(content)+"/original", content)
		served("/files/"+batchOf(content)+"/errors.txt", string(report))
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

// TestBulkActionsReachEveryTaskTheFiltersSelect pauses, resumes and
// deletes tasks in bulk: every task the filters select, beyond the 1,000 a
// list shows, paused ones included, and none that the filters leave out.
func TestBulkActionsReachEveryTaskTheFiltersSelect(t *testing.T) {
	in := startInstanceEnv(t, consoleUsers(t), kafkatest.Cluster(t)...)
	const n = 1500
	var b strings.Builder
	b.WriteString("host,name,topic,timeUnit,time\n")
	for i := range n {
		fmt.Fprintf(&b, "bulk,job-%04d,batch-jobs,HOURS,1\n", i)
	}
	b.WriteString("bulk,other-one,batch-jobs,HOURS,1\nbulk,other-two,batch-jobs,HOURS,1\n")
	in.drop("many.csv", b.String())
	in.waitFile("archive", "many.csv")
	count := func(query string) int {
		_, body := in.call("GET", "/api/tasks?limit=1000&"+query, "vera", "")
		var tasks []json.RawMessage
		if json.Unmarshal([]byte(body), &tasks) != nil {
			return -1
		}
		return len(tasks)
	}
	kafkatest.Eventually(t, 60*time.Second, "every task in the console", func() bool {
		return count("host=bulk&name=job-0") == 1000 && count("host=bulk&name=job-1") == 500 && count("host=bulk&name=other") == 2
	})

	sent := func(path string) int {
		t.Helper()
		code, body := in.call("POST", path, "otto", "")
		var answer struct{ Sent int }
		if code != http.StatusOK || json.Unmarshal([]byte(body), &answer) != nil {
			t.Fatalf("POST %s = %d %s", path, code, body)
		}
		return answer.Sent
	}
	if got := sent("/api/tasks/pause?host=bulk"); got != n+2 {
		t.Fatalf("bulk pause of host bulk sent %d commands, want %d", got, n+2)
	}
	kafkatest.Eventually(t, 60*time.Second, "every task paused", func() bool {
		return count("host=bulk&status=paused&name=job-14") == 100 && count("host=bulk&status=paused&name=other") == 2
	})
	// Resume only the "other" ones: the name filter holds.
	if got := sent("/api/tasks/resume?host=bulk&name=other"); got != 2 {
		t.Fatalf("bulk resume of name other sent %d, want 2", got)
	}
	kafkatest.Eventually(t, 60*time.Second, "the other ones resumed", func() bool { return count("host=bulk&status=paused&name=other") == 0 })
	if got := sent("/api/tasks/resume?host=bulk&status=paused"); got != n {
		t.Fatalf("bulk resume of the paused tasks sent %d, want %d (paused tasks are due last: they must still be reached)", got, n)
	}
	kafkatest.Eventually(t, 60*time.Second, "every task resumed", func() bool { return count("host=bulk&status=paused") == 0 })
	if got := sent("/api/tasks/delete?host=bulk&name=other-one"); got != 1 {
		t.Fatalf("bulk delete of other-one sent %d, want 1", got)
	}
	if code, body := in.call("POST", "/api/tasks/pause?file=many.csv", "otto", ""); code != http.StatusNotFound {
		t.Errorf("bulk pause of a file named by its name rather than its id = %d %s, want 404", code, body)
	}
}
