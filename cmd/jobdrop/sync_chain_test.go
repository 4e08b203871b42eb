package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/watcher"
)

// TestSyncRefusesToDeleteATaskOthersFollow drops versions of a sync
// source whose rows a converter passes through as they are (exec: cat):
// a version that would delete a task that a row of it, and a task sent
// through the API, still follow is refused, naming them, even though
// sync_max_remove would let it through; the task keeps running. A file
// with a predecessor that is nowhere is refused too, naming it.
func TestSyncRefusesToDeleteATaskOthersFollow(t *testing.T) {
	in := startInstanceEnv(t, []string{"JOBDROP_WATCH_0_CONVERTER=exec", "JOBDROP_WATCH_0_EXEC_PROGRAM=cat",
		"JOBDROP_WATCH_0_SYNC=true", "JOBDROP_WATCH_0_SYNC_MAX_REMOVE=100"})
	task := func(name, after string) string {
		d := `{"host":"acme","name":"` + name + `","topic":"jobs","cron":"0 3 * * *"`
		if after != "" {
			d += `,"after":["` + after + `"]`
		}
		return d + "}\n"
	}
	in.drop("jobs.jsonl", task("extract", "")+task("transform", "extract")+task("keep", ""))
	in.waitFile("archive", "jobs.jsonl")
	kafkatest.Eventually(t, 30*time.Second, "v1's three tasks", func() bool {
		return slices.Equal(in.liveTasks(), []string{"extract", "keep", "transform"})
	})
	code, body := in.call(http.MethodPost, "/schedulers", "",
		`{"host":"other","name":"report","topic":"jobs","cron":"0 4 * * *","after":["acme/extract"]}`)
	if code != http.StatusOK {
		t.Fatalf("POST /schedulers: %d %s", code, body)
	}
	kafkatest.Eventually(t, 30*time.Second, "other/report to run", func() bool { return slices.Contains(in.liveTasks(), "report") })

	in.drop("jobs.jsonl", task("transform", "extract")+task("keep", ""))
	in.waitFile(watcher.FailedDir, "jobs.jsonl")
	want := "removes acme/extract, which acme/transform and other/report still follow"
	errs, err := os.ReadFile(filepath.Join(in.inbox, watcher.FailedDir, "jobs.jsonl"+watcher.ErrorsSuffix))
	if err != nil || !strings.Contains(string(errs), want) {
		t.Errorf("failed/jobs.jsonl.errors.txt: %q, %v; want %q", errs, err, want)
	}
	if b := in.batchOf("jobs.jsonl", storetype.BatchRejected); !strings.Contains(strings.Join(b.Errors, "\n"), want) {
		t.Errorf("the rejected batch's errors %q, want %q", b.Errors, want)
	}
	if got := in.liveTasks(); !slices.Contains(got, "extract") {
		t.Errorf("live tasks %q after the refused version, want acme/extract running still", got)
	}

	in.drop("etl.jsonl", task("load", "")+task("report", "laod"))
	in.waitFile(watcher.FailedDir, "etl.jsonl")
	want = `row 2: column after: value "laod": predecessor acme/laod is neither in the file nor running; did you mean load?`
	if errs, err := os.ReadFile(filepath.Join(in.inbox, watcher.FailedDir, "etl.jsonl"+watcher.ErrorsSuffix)); err != nil || !strings.Contains(string(errs), want) {
		t.Errorf("failed/etl.jsonl.errors.txt: %q, %v; want %q", errs, err, want)
	}
}
