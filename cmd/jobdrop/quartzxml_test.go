package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestDroppedQuartzJobXMLFiresOnTime drops Quartz job scheduling data
// into the inbox: a job with a simple trigger that repeats twice and a
// cron trigger fires each on time, on the host its group names, with its
// job data map, and the simple trigger stops after its repeats.
func TestDroppedQuartzJobXMLFiresOnTime(t *testing.T) {
	in := startInstanceEnv(t, []string{"JOBDROP_WATCH_0_DEFAULTS_TOPIC=batch-jobs"}, kafkatest.Cluster(t)...)
	t0 := in.clock.Now().UTC()
	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	jobs := kafkatest.Collect(t, in.brokers, "batch-jobs")

	in.drop("settlement.xml", `<?xml version="1.0" encoding="UTF-8"?>
<job-scheduling-data xmlns="http://www.quartz-scheduler.org/xml/JobSchedulingData" version="2.0">
  <schedule>
    <job>
      <name>settle</name>
      <group>acme</group>
      <job-class>com.acme.SettleJob</job-class>
      <job-data-map>
        <entry><key>command</key><value>/opt/settle.sh</value></entry>
      </job-data-map>
    </job>
    <trigger>
      <simple>
        <name>every-10s</name>
        <job-name>settle</job-name>
        <job-group>acme</job-group>
        <start-time>`+at(time.Second)+`</start-time>
        <repeat-count>2</repeat-count>
        <repeat-interval>10000</repeat-interval>
      </simple>
    </trigger>
    <trigger>
      <cron>
        <name>at-30s</name>
        <job-name>settle</job-name>
        <job-group>acme</job-group>
        <cron-expression>30 * * * * ?</cron-expression>
        <time-zone>Europe/Paris</time-zone>
      </cron>
    </trigger>
  </schedule>
</job-scheduling-data>
`)
	in.waitFile("archive", "settlement.xml")
	var tasks []struct {
		Name string `json:"name"`
	}
	kafkatest.Eventually(t, 60*time.Second, "the console to list 2 tasks", func() bool {
		return in.getJSON("/api/tasks", &tasks) == nil && len(tasks) == 2
	})

	for i, step := range []struct {
		at    time.Duration
		fires int
	}{{time.Second, 1}, {11 * time.Second, 2}, {21 * time.Second, 3}, {30 * time.Second, 4}, {90 * time.Second, 5}} {
		in.advanceTo(t0.Add(step.at))
		kafkatest.Eventually(t, 60*time.Second, fmt.Sprintf("step %d: %d fires at t0+%v", i, step.fires, step.at), func() bool { return jobs.Count() >= step.fires })
	}

	brokers := in.brokers
	in.stop()
	got := map[string][]string{}
	for _, f := range kafkatest.Decode[record.Fired](t, kafkatest.Drain(t, brokers, "batch-jobs")) {
		got[f.Host+"/"+f.Name] = append(got[f.Host+"/"+f.Name], time.UnixMilli(f.ScheduledAt).UTC().Format(time.RFC3339))
		if f.Data["command"] != "/opt/settle.sh" || f.Data["quartz.jobClass"] != "com.acme.SettleJob" {
			t.Errorf("fired event of %s lacks its job's data: %v", f.Name, f.Data)
		}
	}
	want := map[string][]string{
		"acme/settle.every-10s": {at(time.Second), at(11 * time.Second), at(21 * time.Second)},
		"acme/settle.at-30s":    {at(30 * time.Second), at(90 * time.Second)},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fired %v\nwant  %v", got, want)
	}
}
