package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// TestSampleWorkerReportsExecutions runs samples/worker as a user would,
// once reporting over Kafka and once over the console's API: the console
// shows each fired task's execution SUCCESS or FAILED, with the worker's
// name and the command's last words.
func TestSampleWorkerReportsExecutions(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "worker")
	if out, err := exec.Command("go", "build", "-o", bin, "../../samples/worker").CombinedOutput(); err != nil {
		t.Fatalf("build the sample worker: %v\n%s", err, out)
	}
	in := startInstance(t)
	at := in.clock.Now().Add(time.Second)
	in.drop("work.csv", fmt.Sprintf("host,name,topic,start,data.command\n"+
		"acme,ok,jobs,%[1]s,echo all done\n"+
		"acme,bad,jobs,%[1]s,echo no disk >&2; exit 3\n"+
		"acme,api,jobs-api,%[1]s,echo via the api\n", at.Format(time.RFC3339)))
	in.waitFile("archive", "work.csv")

	for _, w := range []struct{ name, topic, report string }{
		{"kafka-worker", "jobs", "kafka"},
		{"http-worker", "jobs-api", "http"},
	} {
		cmd := exec.Command(bin, "-brokers", strings.Join(in.brokers, ","), "-topic", w.topic, "-group", w.name,
			"-run", "-from", "start", "-report", w.report, "-console", in.console, "-name", w.name)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	in.advanceTo(at)

	want := map[string]struct{ status, worker, message string }{
		"ok":  {"SUCCESS", "kafka-worker", "all done"},
		"bad": {"FAILED", "kafka-worker", "exit status 3: no disk"},
		"api": {"SUCCESS", "http-worker", "via the api"},
	}
	var got []storetype.Execution
	kafkatest.Eventually(t, 60*time.Second, "the workers' final reports", func() bool {
		got = nil
		if err := in.getJSON("/api/executions", &got); err != nil {
			return false
		}
		final := 0
		for _, x := range got {
			if x.Status == "SUCCESS" || x.Status == "FAILED" {
				final++
			}
		}
		return final == len(want)
	})
	for _, x := range got {
		w, ok := want[x.Name]
		if !ok || x.Status != w.status || x.Worker != w.worker || x.StatusMessage != w.message {
			t.Errorf("execution of %s: %s by %q, %q; want %+v", x.Name, x.Status, x.Worker, x.StatusMessage, w)
		}
	}
}
