//go:build linux

package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/disktest"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestFullDataDirIsReportedAndRecovers runs jobdrop on its embedded broker
// with the data dir (broker data and SQLite view) on a real 64 MiB tmpfs,
// and fills it: a file dropped then is not injected and not lost (it
// waits in .processing/ and is retried), /readyz names the full data dir,
// the broker's failures are logged once, the process stays up; once
// space is freed the file is injected on its own, /readyz is ready again,
// and the task scheduled before and the new one fire, once each.
func TestFullDataDirIsReportedAndRecovers(t *testing.T) {
	mnt := disktest.Tmpfs(t, "64m")
	in := startInstanceEnv(t, []string{"JOBDROP_DATA_DIR=" + filepath.Join(mnt, "data"), "JOBDROP_WATCHER_RESCAN=1s"})
	t0 := in.clock.Now()
	jobs := kafkatest.Collect(t, in.brokers, "batch-jobs")
	csv := func(name string) string {
		return "host,name,topic,start,timeUnit,time\nacme," + name + ",batch-jobs," +
			t0.Add(10*time.Second).UTC().Format(time.RFC3339) + ",SECONDS,10\n"
	}
	in.drop("before.csv", csv("before"))
	in.waitFile("archive", "before.csv")
	in.advanceTo(t0.Add(10 * time.Second))
	kafkatest.Eventually(t, 20*time.Second, "before to fire at t0+10s", func() bool {
		return firedAt(jobs)["before"][t0.Add(10*time.Second).UnixMilli()]
	})

	free := disktest.Fill(t, mnt)
	in.drop("during.csv", csv("during"))
	kafkatest.Eventually(t, 20*time.Second, "the failed injection to be logged", func() bool {
		return strings.Contains(in.logs.String(), `msg="cannot handle the file`)
	})
	for _, sub := range []string{"archive", "failed"} {
		if _, err := os.Stat(filepath.Join(in.inbox, sub, "during.csv")); err == nil {
			t.Fatalf("during.csv moved to %s/ while the data dir is full", sub)
		}
	}
	if _, err := os.Stat(filepath.Join(in.inbox, ".processing", "during.csv")); err != nil {
		t.Fatalf("during.csv is not kept in .processing/: %v", err)
	}
	code, ready := in.readyz()
	if code != http.StatusServiceUnavailable || !strings.Contains(ready.Checks["data_dir"], "no space left on device") {
		t.Errorf("/readyz on a full data dir = %d %v, want 503 naming the full data dir", code, ready.Checks)
	}
	t.Logf("/readyz on a full data dir: %d %v", code, ready.Checks)
	if code, _ := in.call(http.MethodGet, "/healthz", "", ""); code != http.StatusOK {
		t.Errorf("/healthz = %d on a full data dir, want 200: the process serves on", code)
	}

	free()
	in.waitFile("archive", "during.csv")
	kafkatest.Eventually(t, 30*time.Second, "/readyz 200 once space is back", func() bool {
		code, _ := in.readyz()
		return code == http.StatusOK
	})
	in.advanceTo(t0.Add(20 * time.Second))
	kafkatest.Eventually(t, 20*time.Second, "before and during to fire at t0+20s", func() bool {
		got := firedAt(jobs)
		return got["before"][t0.Add(20*time.Second).UnixMilli()] && got["during"][t0.Add(20*time.Second).UnixMilli()]
	})

	fireIDs := map[string]int{}
	for _, r := range jobs.Records() {
		var f record.Fired
		if err := json.Unmarshal(r.Value, &f); err != nil {
			t.Fatal(err)
		}
		fireIDs[f.FireID]++
	}
	for id, n := range fireIDs {
		if n != 1 {
			t.Errorf("fire %s reached batch-jobs %d times, want once", id, n)
		}
	}
	logs := in.logs.String()
	if n := strings.Count(logs, `msg="embedded broker cannot write its data`); n != 1 {
		t.Errorf("the broker's failures to write were logged %d times, want once a minute at most", n)
	}
	if n := strings.Count(logs, `level=ERROR msg="cannot handle the file`); n != 1 {
		t.Errorf("during.csv's failed injection was logged %d times at ERROR, want once", n)
	}
	in.stop() // fails the test if run returned an error
}

// TestStartOnAFullDataDirWaitsForSpace restarts jobdrop on a data dir
// whose disk filled up while it was down: it neither exits (a service
// manager would restart it in a loop) nor starts half: it says once that
// it waits, and starts on its own once space is freed.
func TestStartOnAFullDataDirWaitsForSpace(t *testing.T) {
	mnt := disktest.Tmpfs(t, "64m")
	first := startInstanceEnv(t, []string{"JOBDROP_DATA_DIR=" + filepath.Join(mnt, "data")})
	first.drop("jobs.csv", "host,name,topic,timeUnit,time\nacme,every,batch-jobs,MINUTES,5\n")
	first.waitFile("archive", "jobs.csv")
	first.stop()
	free := disktest.Fill(t, mnt)

	logs := &logBuffer{}
	up := make(chan started, 1)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		done <- run(ctx, first.cfg, slog.New(slog.NewTextHandler(logs, nil)), hooks{started: func(s started) { up <- s }})
	}()
	kafkatest.Eventually(t, 20*time.Second, "the wait for space to be logged", func() bool {
		return strings.Contains(logs.String(), "cannot start: the data dir does not take writes")
	})
	select {
	case err := <-done:
		t.Fatalf("run returned on a full data dir: %v", err)
	case s := <-up:
		t.Fatalf("started on a full data dir: %+v", s)
	default:
	}
	if !strings.Contains(logs.String(), "no space left on device") {
		t.Errorf("the log does not say why:\n%s", logs)
	}

	free()
	var s started
	select {
	case s = <-up:
	case err := <-done:
		t.Fatalf("run ended instead of starting once space was back: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("not started 30s after space was freed:\n%s", logs)
	}
	kafkatest.Eventually(t, 20*time.Second, "the task of the first run on the console", func() bool {
		resp, err := http.Get(s.console + "/api/tasks")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var tasks []struct {
			Name string `json:"name"`
		}
		return json.NewDecoder(resp.Body).Decode(&tasks) == nil && len(tasks) == 1 && tasks[0].Name == "every"
	})
	if n := strings.Count(logs.String(), "cannot start: the data dir does not take writes"); n != 1 {
		t.Errorf("the wait was logged %d times, want once", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}
