package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestDroppedKubernetesManifestFiresOnTime drops a multi-document
// manifest of CronJobs into the inbox: each CronJob fires on its schedule,
// in its time zone, on the host its namespace names; the suspended one
// fires nothing.
func TestDroppedKubernetesManifestFiresOnTime(t *testing.T) {
	in := startInstanceEnv(t, []string{"JOBDROP_WATCH_0_DEFAULTS_TOPIC=batch-jobs"}, kafkatest.Cluster(t)...)
	t0 := in.clock.Now().UTC()
	jobs := kafkatest.Collect(t, in.brokers, "batch-jobs")

	in.drop("cronjobs.yml", `# Two CronJobs sharing a container (&c), and a suspended one.
apiVersion: batch/v1
kind: CronJob
metadata: {name: every-minute, namespace: ops}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - &c {name: tick, image: busybox:1.36, command: [date]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: kolkata, namespace: ops}
spec:
  schedule: "30 * * * *"       # half past in Kolkata (+05:30): on the hour in UTC
  timeZone: Asia/Kolkata
  jobTemplate: {spec: {template: {spec: {containers: [*c]}}}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: paused, namespace: ops}
spec:
  schedule: "* * * * *"
  suspend: true
  jobTemplate: {spec: {template: {spec: {containers: [*c]}}}}
`)
	in.waitFile("archive", "cronjobs.yml")
	var tasks []struct{ Host, Name string }
	kafkatest.Eventually(t, 60*time.Second, "the console to list 3 tasks", func() bool {
		return in.getJSON("/api/tasks", &tasks) == nil && len(tasks) == 3
	})

	fired := func() map[string][]string { return firedTimes(t, jobs) }
	minute := t0.Add(time.Minute)
	hour := t0.Truncate(time.Hour).Add(time.Hour) // the next :30 in Kolkata
	in.advanceTo(minute)
	kafkatest.Eventually(t, 60*time.Second, "every-minute to fire at t0+1m", func() bool { return len(fired()["ops/every-minute"]) >= 1 })
	in.advanceTo(hour)
	want := wantFired(t0, minute, hour)
	// Each task's fires commit in its own partition's transaction: wait
	// for all of them, not the first.
	kafkatest.Eventually(t, 60*time.Second, "every fire due by the hour", func() bool { return fmt.Sprint(fired()) == fmt.Sprint(want) })

	brokers := in.brokers
	in.stop()
	got := map[string][]string{}
	for _, f := range kafkatest.Decode[record.Fired](t, kafkatest.Drain(t, brokers, "batch-jobs")) {
		got[f.Host+"/"+f.Name] = append(got[f.Host+"/"+f.Name], time.UnixMilli(f.ScheduledAt).UTC().Format(time.RFC3339))
		if f.Data["image"] != "busybox:1.36" || f.Data["command"] != `["date"]` {
			t.Errorf("fired event of %s lacks its container: %v", f.Name, f.Data)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fired %v\nwant  %v", got, want)
	}
}

// wantFired is what the test's manifest fires from t0 to the hour. A
// minute schedule is due at t0 itself, when the file arrives; then
// every-minute missed the minutes between t0+1m and the hour while the
// clock jumped: it fires the latest of them once (FIRE_ONCE, as
// Kubernetes starts the latest missed schedule).
func wantFired(t0, minute, hour time.Time) map[string][]string {
	rfc := func(ts ...time.Time) []string {
		var out []string
		for _, at := range ts {
			if s := at.Format(time.RFC3339); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out
	}
	want := map[string][]string{
		"ops/every-minute": rfc(t0, minute, hour),
		"ops/kolkata":      rfc(hour),
	}
	if t0.Equal(t0.Truncate(time.Hour)) {
		want["ops/kolkata"] = rfc(t0, hour)
	}
	return want
}

// firedTimes is when each task (host/name) fired so far, by scheduled
// time in RFC 3339, each time once.
func firedTimes(t *testing.T, jobs *kafkatest.Collector) map[string][]string {
	got := map[string][]string{}
	for _, f := range kafkatest.Decode[record.Fired](t, jobs.Records()) {
		at := time.UnixMilli(f.ScheduledAt).UTC().Format(time.RFC3339)
		if !slices.Contains(got[f.Host+"/"+f.Name], at) {
			got[f.Host+"/"+f.Name] = append(got[f.Host+"/"+f.Name], at)
		}
	}
	return got
}
