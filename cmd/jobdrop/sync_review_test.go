package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/watcher"
)

// TestSyncThatWouldDeleteMostIsHeldForReview drops a crontab of six lines,
// then a version that keeps one: it is not applied but held, and the
// folder goes on; Reject moves it to failed/ with the reason; the same
// version dropped again and applied deletes the five tasks. Both
// decisions are audited.
func TestSyncThatWouldDeleteMostIsHeldForReview(t *testing.T) {
	in := startInstanceEnv(t, syncEnv)
	var v1 strings.Builder
	for i := range 6 {
		fmt.Fprintf(&v1, "%d 1 * * * /opt/job%d.sh\n", i, i)
	}
	v3 := "0 1 * * * /opt/job0.sh\n"
	in.drop("crontab", v1.String())
	in.waitFile("archive", "crontab")
	kafkatest.Eventually(t, 30*time.Second, "v1's six tasks", func() bool { return len(in.liveTasks()) == 6 })

	in.drop("crontab", v3)
	in.waitFile(watcher.HeldDir, "crontab")
	report, err := os.ReadFile(filepath.Join(in.inbox, watcher.HeldDir, "crontab"+watcher.HeldSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "it would delete 5 of the 6 tasks of its source (83%), more than the 50% allowed") {
		t.Errorf("held report:\n%s", report)
	}
	held := in.batchOf("crontab", storetype.BatchHeld)
	if held.Diff == nil || held.Diff.Removed != 5 || held.Diff.Unchanged != 1 {
		t.Errorf("held diff %+v, want 5 removed, 1 unchanged", held.Diff)
	}
	if got := len(in.liveTasks()); got != 6 {
		t.Errorf("%d tasks run while the file is held, want all 6", got)
	}
	// The folder goes on.
	in.drop("other.csv", "host,name,topic,timeUnit,time\nacme,other,cron-jobs,HOURS,1\n")
	in.waitFile("archive", "other.csv")

	code, body := in.call(http.MethodPost, "/api/files/"+held.ID+"/reject", "", `{"reason":"truncated export"}`)
	if code != http.StatusOK {
		t.Fatalf("reject: %d %s", code, body)
	}
	in.waitFile(watcher.FailedDir, "crontab")
	errs, err := os.ReadFile(filepath.Join(in.inbox, watcher.FailedDir, "crontab"+watcher.ErrorsSuffix))
	if err != nil || !strings.Contains(string(errs), "truncated export") {
		t.Errorf("failed/crontab.errors.txt: %q, %v", errs, err)
	}
	in.batchOf("crontab", storetype.BatchRejected)

	in.drop("crontab", v3+"\n") // another file, same change
	in.waitFile(watcher.HeldDir, "crontab")
	held = in.batchOf("crontab", storetype.BatchHeld)
	code, body = in.call(http.MethodPost, "/api/files/"+held.ID+"/apply", "", "")
	if code != http.StatusOK {
		t.Fatalf("apply: %d %s", code, body)
	}
	kafkatest.Eventually(t, 30*time.Second, "the applied version to leave one task (and other)", func() bool {
		return len(in.liveTasks()) == 2
	})
	in.batchOf("crontab", storetype.BatchInjected)
	var audit []storetype.AuditEvent
	if err := in.getJSON("/api/audit?limit=1000", &audit); err != nil {
		t.Fatal(err)
	}
	var decisions []string
	for _, a := range audit {
		if a.Action == record.ActionFileHeld || a.Object == "crontab" && strings.Contains(a.Detail, "review") {
			decisions = append(decisions, a.Action+" by "+a.Actor)
		}
	}
	t.Logf("audit of the held versions: %v", decisions)
	if !slices.Contains(decisions, "file.rejected by api") || !slices.Contains(decisions, "file.injected by api") {
		t.Errorf("audit %v lacks the rejection and the apply", decisions)
	}
}

// TestHeldFileInBrowser holds a truncated crontab and has an operator
// find it from the dashboard, read its diff on its page and apply it with
// a click, as a person would.
func TestHeldFileInBrowser(t *testing.T) {
	ctx := browser(t)
	in := startInstanceEnv(t, syncEnv)
	var v1 strings.Builder
	for i := range 6 {
		fmt.Fprintf(&v1, "%d 1 * * * /opt/job%d.sh\n", i, i)
	}
	in.drop("crontab", v1.String())
	in.waitFile("archive", "crontab")
	kafkatest.Eventually(t, 30*time.Second, "v1's six tasks", func() bool { return len(in.liveTasks()) == 6 })
	in.drop("crontab", "0 1 * * * /opt/job0.sh\n")
	in.waitFile(watcher.HeldDir, "crontab")
	held := in.batchOf("crontab", storetype.BatchHeld)

	within(t, ctx, "the dashboard to say a file is held",
		chromedp.Navigate(in.console+"/"),
		waitJS(`document.body.innerText.includes("Held for review: crontab")`),
	)
	within(t, ctx, "the held file's page to show its diff and the decisions",
		chromedp.Navigate(in.console+"/files/"+held.ID),
		waitJS(`document.querySelector("#diff-counts") && document.querySelector("#diff-counts").innerText.includes("5 removed")`),
		waitJS(`document.querySelectorAll("#diff-lines li.diff-remove").length === 5`),
		waitJS(`document.querySelector("#held-actions button[data-action=Apply]") && document.querySelector("#held-actions button[data-action=Reject]")`),
	)
	screenshot(t, ctx, "held-file")
	within(t, ctx, "Apply to inject the file",
		waitJS(`(window.confirm = () => true, true)`),
		clickJS(`#held-actions button[data-action=Apply]`),
		waitJS(`location.pathname === "/files/`+held.ID+`" && !document.querySelector("#held-actions")`),
	)
	kafkatest.Eventually(t, 30*time.Second, "the applied version's one task", func() bool { return len(in.liveTasks()) == 1 })
	in.batchOf("crontab", storetype.BatchInjected)
	if n := countFiles(t, filepath.Join(in.inbox, watcher.HeldDir)); n != 0 {
		t.Errorf("%d files left in held/ after Apply", n)
	}
}

// TestHeldFileDecisionsFollowTheRoles: on a held file's page an operator
// may reject but not apply (applying defines tasks, which takes admin), an
// admin may do both, a viewer neither; the API answers the same; the
// upload page offers an operator a dry run only.
func TestHeldFileDecisionsFollowTheRoles(t *testing.T) {
	in := startInstanceEnv(t, append(consoleUsers(t), syncEnv...))
	in.drop("crontab", "0 1 * * * /opt/a.sh\n0 2 * * * /opt/b.sh\n0 3 * * * /opt/c.sh\n")
	in.waitFile("archive", "crontab")
	kafkatest.Eventually(t, 30*time.Second, "three tasks", func() bool {
		_, body := in.call(http.MethodGet, "/api/summary", "vera", "")
		var sum storetype.Summary
		return jsonUnmarshal(body, &sum) == nil && sum.TasksActive == 3
	})
	in.drop("crontab", "0 1 * * * /opt/a.sh\n")
	in.waitFile(watcher.HeldDir, "crontab")
	var id string
	kafkatest.Eventually(t, 30*time.Second, "the held file recorded", func() bool {
		_, body := in.call(http.MethodGet, "/api/files", "vera", "")
		var files []storetype.Batch
		if jsonUnmarshal(body, &files) != nil {
			return false
		}
		for _, b := range files {
			if b.Status == storetype.BatchHeld {
				id = b.ID
			}
		}
		return id != ""
	})
	for _, tc := range []struct {
		user          string
		apply, reject bool
		upload        string
	}{
		{"vera", false, false, `id="upload-none"`},
		{"otto", false, true, `id="upload-dry-only"`},
		{"ada", true, true, `id="upload-dryrun"`},
	} {
		t.Run(tc.user, func(t *testing.T) {
			code, page := in.call(http.MethodGet, "/files/"+id, tc.user, "", "Accept", "text/html")
			if code != http.StatusOK {
				t.Fatalf("file page: %d", code)
			}
			if got := strings.Contains(page, `data-action="Apply"`); got != tc.apply {
				t.Errorf("Apply offered: %v, want %v", got, tc.apply)
			}
			if got := strings.Contains(page, `data-action="Reject"`); got != tc.reject {
				t.Errorf("Reject offered: %v, want %v", got, tc.reject)
			}
			if _, up := in.call(http.MethodGet, "/upload", tc.user, "", "Accept", "text/html"); !strings.Contains(up, tc.upload) {
				t.Errorf("the upload page lacks %s", tc.upload)
			}
		})
	}
	if code, _ := in.call(http.MethodPost, "/api/files/"+id+"/apply", "otto", ""); code != http.StatusForbidden {
		t.Errorf("an operator's apply = %d, want 403", code)
	}
}
