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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

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
