package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// buildWorker builds samples/worker for a test.
func buildWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "worker")
	if out, err := exec.Command("go", "build", "-o", bin, "../../samples/worker").CombinedOutput(); err != nil {
		t.Fatalf("build the sample worker: %v\n%s", err, out)
	}
	return bin
}

// startWorker runs the sample worker on topic: it runs each event's
// data.command and reports SUCCESS or FAILED over Kafka.
func startWorker(t *testing.T, bin string, brokers []string, topic string) {
	t.Helper()
	cmd := exec.Command(bin, "-brokers", strings.Join(brokers, ","), "-topic", topic, "-group", "chain-worker",
		"-run", "-from", "start", "-report", "kafka", "-name", "chain-worker")
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

// firesOf is the events fired for each task name, as a consumer sees them.
func firesOf(t *testing.T, c *kafkatest.Collector) map[string][]record.Fired {
	t.Helper()
	out := map[string][]record.Fired{}
	seen := map[string]bool{}
	for _, f := range kafkatest.Decode[record.Fired](t, c.Records()) {
		if seen[f.FireID] {
			t.Errorf("fire %s of %s seen twice", f.FireID, f.Name)
		}
		seen[f.FireID] = true
		out[f.Name] = append(out[f.Name], f)
	}
	return out
}

// waitFires waits until the consumer has seen at least want[name] fires
// of each name, and returns them. Each task of a chain fires in its own
// transaction, and its events may be on other partitions than its
// successor's: a consumer can read report's fire before transform's.
func waitFires(t *testing.T, c *kafkatest.Collector, want map[string]int) map[string][]record.Fired {
	t.Helper()
	var got map[string][]record.Fired
	kafkatest.Eventually(t, 60*time.Second, fmt.Sprintf("fires %v", want), func() bool {
		got = firesOf(t, c)
		for name, n := range want {
			if len(got[name]) < n {
				return false
			}
		}
		return true
	})
	return got
}

// auditCount counts the audit events of action on object.
func auditCount(t *testing.T, brokers []string, action, object string) int {
	t.Helper()
	n := 0
	for _, a := range kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, brokers, record.Topics{}.WithDefaults().Audit)) {
		if a.Action == action && a.Object == object {
			n++
		}
	}
	return n
}

// TestDroppedChainRunsWithTheSampleWorker drops the nightly chain extract
// → (transform, load) → report as a CSV and runs samples/worker beside
// jobdrop, reporting each fired event's outcome: report fires once per
// run of extract, only after both transform and load; when transform
// fails, report is held until an operator releases it, which fires it
// once; a report sent twice changes nothing.
func TestDroppedChainRunsWithTheSampleWorker(t *testing.T) {
	in := startInstance(t)
	t0 := in.clock.Now()
	fail := filepath.Join(t.TempDir(), "transform-fails")
	batch := kafkatest.Collect(t, in.brokers, "nightly")
	in.drop("nightly.csv", fmt.Sprintf("host,name,topic,start,timeUnit,time,after,data.command\n"+
		"acme,extract,nightly,%s,MINUTES,1,,true\n"+
		"acme,transform,nightly,,,,extract,test ! -e %s\n"+
		"acme,load,nightly,,,,extract,true\n"+
		"acme,report,nightly,,,,\"transform, load\",true\n", t0.Add(time.Minute).UTC().Format(time.RFC3339), fail))
	in.waitFile("archive", "nightly.csv")
	startWorker(t, buildWorker(t), in.brokers, "nightly")

	// Run 1: each step succeeds.
	in.advanceTo(t0.Add(time.Minute))
	run1 := waitFires(t, batch, map[string]int{"extract": 1, "transform": 1, "load": 1, "report": 1})
	rp := run1["report"][0]
	if want := []string{run1["transform"][0].FireID, run1["load"][0].FireID}; !slices.Equal(rp.After, want) {
		t.Errorf("report released by %v, want transform's and load's runs %v", rp.After, want)
	}
	for _, name := range []string{"transform", "load"} {
		if f := run1[name][0]; !slices.Equal(f.After, []string{run1["extract"][0].FireID}) {
			t.Errorf("%s released by %v, want extract's run", name, f.After)
		}
	}

	// Run 2: transform fails; report is held.
	if err := os.WriteFile(fail, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in.advanceTo(t0.Add(2 * time.Minute))
	kafkatest.Eventually(t, 60*time.Second, "report held by transform's failure", func() bool {
		return auditCount(t, in.brokers, record.ActionChainHeld, "acme/report") == 1
	})
	run2 := waitFires(t, batch, map[string]int{"extract": 2, "transform": 2, "load": 2})
	// A worker that says it all again.
	statuses := kafkatest.Client(t, in.brokers)
	for _, f := range []record.Fired{run2["transform"][1], run2["load"][1], run2["extract"][1]} {
		status := record.StatusSuccess
		if f.Name == "transform" {
			status = record.StatusFailed
		}
		v, _ := json.Marshal(record.Status{FireID: f.FireID, Status: status, Worker: "again", At: time.Now().UnixMilli()})
		if err := statuses.ProduceSync(context.Background(), &kgo.Record{Topic: in.cfg.Topics.Status, Key: []byte(f.FireID), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The operator releases report.
	release := `{"host":"acme","name":"report","action":"RELEASE"}`
	if err := statuses.ProduceSync(context.Background(), &kgo.Record{Topic: in.cfg.Topics.Input, Key: []byte("acme/report"), Value: []byte(release),
		Headers: []kgo.RecordHeader{{Key: record.HeaderActor, Value: []byte("ops")}}}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 60*time.Second, "report released", func() bool { return len(firesOf(t, batch)["report"]) == 2 })
	in.advanceTo(t0.Add(2*time.Minute + 30*time.Second))
	got := firesOf(t, batch)
	if n := len(got["report"]); n != 2 {
		t.Errorf("report fired %d times, want 2 (run 1, and the release)", n)
	}
	if rel := got["report"][1]; !rel.Triggered || rel.FireID == rp.FireID {
		t.Errorf("the release fired %+v", rel)
	}
	if n := auditCount(t, in.brokers, record.ActionChainHeld, "acme/report"); n != 1 {
		t.Errorf("%d chain_held events, want 1", n)
	}
	if n := auditCount(t, in.brokers, record.ActionTaskReleased, "acme/report"); n != 1 {
		t.Errorf("%d task.released events, want 1", n)
	}
}

// TestRetryAcrossAKill drops a task with a retry of 3 attempts, 5 s
// apart, whose command fails twice and then succeeds, and a task that
// follows it, and runs samples/worker beside a jobdrop process that is
// killed with kill -9 between the first failure and the retry. The task
// fires three times, the waits as configured, as one run that ends in
// SUCCESS; the task after it fires once.
func TestRetryAcrossAKill(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	c := startChild(t, "n1", brokers)
	counter := filepath.Join(t.TempDir(), "attempts")
	start := time.Now().Add(5 * time.Second)
	flaky := kafkatest.Collect(t, brokers, "flaky")
	dropInto(t, c.inbox, "flaky.csv", fmt.Sprintf("host,name,topic,start,after,retry,data.command\n"+
		"acme,flaky,flaky,%s,,3 every 5s,n=$(cat %[2]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[2]s; [ $n -ge 3 ]\n"+
		"acme,next,flaky,,flaky,,true\n", start.UTC().Format(time.RFC3339Nano), counter))
	kafkatest.Eventually(t, 60*time.Second, "flaky.csv archived", func() bool {
		_, err := os.Stat(filepath.Join(c.inbox, "archive", "flaky.csv"))
		return err == nil
	})
	startWorker(t, buildWorker(t), brokers, "flaky")

	kafkatest.Eventually(t, 60*time.Second, "the retry scheduled after the first failure", func() bool {
		return auditCount(t, brokers, record.ActionTaskRetryScheduled, "acme/flaky") == 1
	})
	c.kill() // kill -9, and start again
	kafkatest.Eventually(t, 90*time.Second, "next fired", func() bool { return len(firesOf(t, flaky)["next"]) == 1 })
	// Any attempt fired again by mistake would have fired before next
	// was released (after the last attempt's success): everything
	// committed so far is read.
	got := map[string][]record.Fired{}
	for _, f := range kafkatest.Decode[record.Fired](t, kafkatest.Drain(t, brokers, "flaky")) {
		got[f.Name] = append(got[f.Name], f)
	}
	attempts, next := got["flaky"], got["next"]
	if len(attempts) != 3 || len(next) != 1 {
		t.Fatalf("flaky fired %d times and next %d, want 3 and 1", len(attempts), len(next))
	}
	run := attempts[0].FireID
	failedAt := map[string]int64{}
	for _, s := range kafkatest.Decode[record.Status](t, kafkatest.Drain(t, brokers, record.Topics{}.WithDefaults().Status)) {
		if s.Status == record.StatusFailed {
			failedAt[s.FireID] = s.At
		}
	}
	for i, f := range attempts {
		if i == 0 {
			continue
		}
		if f.Attempt != i+1 || f.Run != run || f.ScheduledAt != attempts[0].ScheduledAt {
			t.Errorf("attempt %d: %+v", i+1, f)
		}
		prev := attempts[i-1]
		wait := time.Duration(f.FiredAt-failedAt[prev.FireID]) * time.Millisecond
		if wait < 5*time.Second-100*time.Millisecond || wait > 25*time.Second {
			t.Errorf("attempt %d fired %s after attempt %d failed, want 5s (and no more than the restart adds)", i+1, wait, i)
		}
	}
	if !slices.Equal(next[0].After, []string{run}) {
		t.Errorf("next released by %v, want flaky's run %s", next[0].After, run)
	}
	if n := auditCount(t, brokers, record.ActionTaskRetryScheduled, "acme/flaky"); n != 2 {
		t.Errorf("%d retries scheduled, want 2", n)
	}
}

// TestConsoleShowsTheNextAttempt: a task with a retry policy fails; while
// the engine waits to fire its next attempt, the task's API and page, and
// its execution's page, say which attempt fires and when: the failure's
// time plus the retry's wait; paused, that it waits for the task.
func TestConsoleShowsTheNextAttempt(t *testing.T) {
	in := startInstanceEnv(t, nil, kafkatest.Cluster(t)...)
	due := in.clock.Now().Add(time.Minute)
	in.drop("flaky.csv", "host,name,topic,start,retry\nacme,flaky,flaky,"+due.UTC().Format(time.RFC3339)+",3 every 10m\n")
	in.waitFile("archive", "flaky.csv")
	kafkatest.Eventually(t, 60*time.Second, "flaky in the console", func() bool {
		var task struct{ Key string }
		return in.getJSON("/api/tasks/acme/flaky", &task) == nil && task.Key == "acme/flaky"
	})
	in.advanceTo(due)
	var execs []struct {
		FireID string `json:"fireId"`
	}
	kafkatest.Eventually(t, 60*time.Second, "flaky fired", func() bool {
		return in.getJSON("/api/executions?task=acme/flaky", &execs) == nil && len(execs) == 1
	})
	fire := execs[0].FireID
	failedAt := in.clock.Now()
	if code, body := in.call("POST", "/api/executions/"+fire+"/status", "", `{"status":"FAILED","message":"no disk"}`); code != 200 {
		t.Fatalf("report FAILED: %d %s", code, body)
	}
	want := failedAt.Add(10 * time.Minute).UTC()
	var task struct {
		NextAttempt *struct {
			Run     string    `json:"run"`
			Attempt int       `json:"attempt"`
			At      time.Time `json:"at"`
		} `json:"nextAttempt"`
	}
	kafkatest.Eventually(t, 60*time.Second, "the next attempt in the task's API", func() bool {
		return in.getJSON("/api/tasks/acme/flaky", &task) == nil && task.NextAttempt != nil
	})
	if n := task.NextAttempt; n.Run != fire || n.Attempt != 2 || !n.At.Equal(want) {
		t.Errorf("next attempt %+v, want attempt 2 of run %s at %s", *n, fire, want.Format(time.RFC3339))
	}
	stamp := want.Format(time.RFC3339)
	if page := in.page("/tasks/acme/flaky"); !strings.Contains(page, `id="task-next-attempt"`) || !strings.Contains(page, stamp) {
		t.Errorf("the task page does not say attempt 2 fires at %s", stamp)
	}
	if page := in.page("/executions/" + fire); !strings.Contains(page, "attempt 2 fires at") || !strings.Contains(page, stamp) {
		t.Errorf("the execution page does not say attempt 2 fires at %s", stamp)
	}

	// Paused, the task says its retry waits for it; resumed, the retry
	// keeps its time.
	for _, action := range []string{"pause", "resume"} {
		if code, body := in.call("POST", "/api/tasks/acme/flaky/"+action, "", ""); code != 200 {
			t.Fatalf("%s: %d %s", action, code, body)
		}
		var st struct{ Paused bool }
		kafkatest.Eventually(t, 60*time.Second, "flaky "+action+"d", func() bool {
			return in.getJSON("/api/tasks/acme/flaky", &st) == nil && st.Paused == (action == "pause")
		})
		if page := in.page("/tasks/acme/flaky"); strings.Contains(page, "waits while the task is paused") != (action == "pause") {
			t.Errorf("%sd, the task page says of its next attempt: %q", action, between(page, `id="task-next-attempt"`, "</dd>"))
		}
	}

	// Once it fired, nothing waits.
	in.advanceTo(want)
	kafkatest.Eventually(t, 60*time.Second, "attempt 2 fired, and no attempt waits", func() bool {
		task.NextAttempt = nil
		return in.getJSON("/api/executions?task=acme/flaky", &execs) == nil && len(execs) == 2 &&
			in.getJSON("/api/tasks/acme/flaky", &task) == nil && task.NextAttempt == nil
	})
}

// between is the part of s from the first from to the next to after it,
// or "" when s holds no from.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i:]
	if j := strings.Index(s, to); j >= 0 {
		s = s[:j]
	}
	return s
}
