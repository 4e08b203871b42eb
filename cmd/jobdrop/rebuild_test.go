package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// TestDatabaseDeletedWhileRunningIsRebuilt deletes the SQLite files of a
// running jobdrop, as a clean-up script that takes them for a cache would:
// jobdrop must notice, rebuild the database from Kafka at the same path,
// show the console whole again, and still know which files it injected.
func TestDatabaseDeletedWhileRunningIsRebuilt(t *testing.T) {
	in := startInstance(t)
	t0 := in.clock.Now()
	jobs := "host,name,topic,start,timeUnit,time\n" +
		"acme,once," + "batch-jobs," + t0.Add(time.Second).UTC().Format(time.RFC3339) + ",,\n" +
		"acme,hourly,batch-jobs," + t0.Add(time.Second).UTC().Format(time.RFC3339) + ",HOURS,1\n"
	in.drop("jobs.csv", jobs)
	in.waitFile("archive", "jobs.csv")
	in.advanceTo(t0.Add(time.Second))

	views := []string{"/api/files", "/api/tasks", "/api/executions"}
	snapshot := func() map[string]string {
		out := map[string]string{}
		for _, v := range views {
			code, body := in.call(http.MethodGet, v, "", "")
			if code != http.StatusOK {
				return nil
			}
			out[v] = body
		}
		return out
	}
	var before map[string]string
	var last string
	kafkatest.Eventually(t, 60*time.Second, "2 fires recorded, /readyz 200 and the views settled", func() bool {
		before = snapshot()
		code, _ := in.readyz()
		if code != http.StatusOK || strings.Count(before["/api/executions"], `"fireId"`) != 2 {
			return false
		}
		// The tasks' view is written apart from the executions': wait
		// until it counts both executions too, and until two looks in a
		// row agree, or the snapshot is taken while a view still moves and
		// differs from any later one.
		var tasks []struct {
			Status     string `json:"status"`
			FireCount  int    `json:"fireCount"`
			Executions int    `json:"executions"`
		}
		if json.Unmarshal([]byte(before["/api/tasks"]), &tasks) != nil {
			return false
		}
		executions, completed, counted := 0, 0, 0
		for _, tk := range tasks {
			executions += tk.Executions
			switch {
			case tk.Status == "completed":
				completed++
			case tk.FireCount == 1:
				counted++ // the hourly task's state, after its fire
			}
		}
		now := fmt.Sprint(before)
		settled := now == last
		last = now
		return len(tasks) == 2 && executions == 2 && completed == 1 && counted == 1 && settled
	})

	db := filepath.Join(in.cfg.DataDir, dbFile)
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	kafkatest.Eventually(t, 60*time.Second, "the log to say the database is rebuilt", func() bool {
		return strings.Contains(in.logs.String(), "rebuilding it from the topics")
	})
	var differs string
	defer func() {
		if t.Failed() {
			t.Logf("last difference: %s", differs)
		}
	}()
	kafkatest.Eventually(t, 60*time.Second, "/readyz 200 and the console as before", func() bool {
		code, ready := in.readyz()
		now := snapshot()
		for _, v := range views {
			if now[v] != before[v] {
				differs = fmt.Sprintf("%s before:\n%s\nnow:\n%s", v, before[v], now[v])
				return false
			}
		}
		differs = fmt.Sprintf("/readyz %d %v", code, ready)
		return code == http.StatusOK
	})
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("no database at %s after the rebuild: %v", db, err)
	}

	// The rebuilt database still knows the file: the same content dropped
	// again is a duplicate, and a new file goes in.
	in.drop("jobs-again.csv", jobs)
	in.waitFile("archive", "jobs-again.csv")
	in.drop("more.csv", "host,name,topic,start,timeUnit,time\nacme,more,batch-jobs,,HOURS,1\n")
	in.waitFile("archive", "more.csv")
	kafkatest.Eventually(t, 60*time.Second, "the duplicate and the new file on the console", func() bool {
		var files []struct {
			File       string `json:"file"`
			Status     string `json:"status"`
			Duplicates int    `json:"duplicates"`
		}
		if in.getJSON("/api/files", &files) != nil {
			return false
		}
		dup, more := false, false
		for _, f := range files {
			dup = dup || f.File == "jobs.csv" && f.Status == "injected" && f.Duplicates == 1
			more = more || f.File == "more.csv" && f.Status == "injected"
		}
		return dup && more
	})
}
