package main

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestRefusedFireIsFailedRetriedPausedAndResumed: of two tasks dropped in
// one file, the brokers refuse every fired event of one (its topic may not
// be written). What an operator sees: the other fires on time; the refused
// occurrence is FAILED with the brokers' answer in the console, counted in
// /metrics, fired again by the default policy and then paused, the task
// saying "paused by fault policy" and why. Once the topic may be written,
// Resume fires the occurrence once, with its own fire id.
func TestRefusedFireIsFailedRetriedPausedAndResumed(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	forbidden := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "exports", Err: kerr.TopicAuthorizationFailed, Count: -1})
	in := startInstance(t, c.ListenAddrs()...)
	t0 := in.clock.Now()
	due := t0.Add(time.Second)
	at := due.UTC().Format(time.RFC3339)
	jobs := kafkatest.Collect(t, in.brokers, "jobs")
	exports := kafkatest.Collect(t, in.brokers, "exports")

	in.drop("jobs.csv", "host,name,topic,start,data.cmd\n"+
		"acme,payroll,jobs,"+at+",/opt/payroll.sh\n"+
		"acme,export,exports,"+at+",/opt/export.sh\n")
	in.waitFile("archive", "jobs.csv")
	var tasks []struct{ Key string }
	kafkatest.Eventually(t, 60*time.Second, "the console to list 2 tasks", func() bool {
		return in.getJSON("/api/tasks", &tasks) == nil && len(tasks) == 2
	})

	refusals := func() float64 {
		return in.scrape().value("jobdrop_fires_refused_total", "error", kerr.TopicAuthorizationFailed.Message)
	}
	in.advanceTo(due)
	kafkatest.Eventually(t, 60*time.Second, "payroll to fire", func() bool { return jobs.Count() == 1 })
	kafkatest.Eventually(t, 60*time.Second, "the first refusal counted", func() bool { return refusals() == 1 })
	// The default policy: again 1, 2, 4 and 8 s after each refusal.
	next := due
	for attempt, wait := 2, time.Second; attempt <= 5; attempt, wait = attempt+1, 2*wait {
		next = next.Add(wait)
		in.advanceTo(next)
		kafkatest.Eventually(t, 60*time.Second, "the next refusal counted", func() bool { return refusals() == float64(attempt) })
	}

	const key = "acme/export"
	fireID := record.FireID("acme", "export", due.UnixMilli())
	var task struct {
		Paused bool
		Fault  string
	}
	kafkatest.Eventually(t, 60*time.Second, "the console to show the task paused by the policy", func() bool {
		return in.getJSON("/api/tasks/"+key, &task) == nil && task.Paused && task.Fault != ""
	})
	if want := "paused by fault policy: " + kerr.TopicAuthorizationFailed.Message; !strings.HasPrefix(task.Fault, want) {
		t.Errorf("task fault %q, want it to start %q", task.Fault, want)
	}
	if p := in.page("/tasks/" + key); !strings.Contains(p, "paused by fault policy: TOPIC_AUTHORIZATION_FAILED") {
		t.Error("the task page does not say the task is paused by the fault policy and why")
	}
	// execution is the task's one execution, as the console lists it.
	execution := func() (e struct{ FireID, Status, StatusMessage string }) {
		t.Helper()
		var es []struct{ FireID, Status, StatusMessage string }
		if err := in.getJSON("/api/executions?task="+key, &es); err != nil || len(es) != 1 {
			t.Fatalf("executions of %s: %+v (%v), want one", key, es, err)
		}
		return es[0]
	}
	if e := execution(); e.FireID != fireID || e.Status != record.StatusFailed ||
		!strings.Contains(e.StatusMessage, kerr.TopicAuthorizationFailed.Message) {
		t.Errorf("execution %+v, want %s FAILED with the brokers' answer", e, fireID)
	}
	if got := in.scrape().value("jobdrop_tasks_paused_by_fault_policy"); got != 1 {
		t.Errorf("jobdrop_tasks_paused_by_fault_policy = %v, want 1", got)
	}
	var audit []struct{ Action string }
	if err := in.getJSON("/api/audit?object="+key, &audit); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range audit {
		actions = append(actions, a.Action)
	}
	slices.Sort(actions)
	if want := []string{"task.fire_refused", "task.fire_refused", "task.fire_refused", "task.fire_refused", "task.fire_refused",
		"task.paused"}; !slices.Equal(actions, want) {
		t.Errorf("audit of %s: %q, want %q", key, actions, want)
	}

	// The topic may be written now: Resume fires the occurrence.
	forbidden.Remove()
	if code, body := in.call(http.MethodPost, "/api/tasks/"+key+"/resume", "", ""); code != http.StatusOK {
		t.Fatalf("resume: %d %s", code, body)
	}
	kafkatest.Eventually(t, 60*time.Second, "the resumed occurrence to fire", func() bool { return exports.Count() == 1 })
	kafkatest.Eventually(t, 60*time.Second, "the console to show it fired", func() bool {
		return execution().Status == record.StatusFired
	})
	if got := in.scrape().value("jobdrop_tasks_paused_by_fault_policy"); got != 0 {
		t.Errorf("jobdrop_tasks_paused_by_fault_policy = %v after the resume, want 0", got)
	}
	fired := kafkatest.Decode[record.Fired](t, exports.Records())
	if len(fired) != 1 || fired[0].FireID != fireID || fired[0].ScheduledAt != due.UnixMilli() {
		t.Errorf("fired %+v, want the refused occurrence once, fire id %s", fired, fireID)
	}
}
