package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// lightSchedulerExample is the request body of light-scheduler's README,
// unchanged: note that it has no action.
const lightSchedulerExample = `{
    "host": "networknt.com",
    "name": "market-192.168.1.1-health-check",
    "frequency": {
      "timeUnit": "MINUTES",
      "time": 2
    },
    "topic": "controller-health-check",
    "data": {
      "key1": "value1",
      "key2": "value2"
    }
}`

func TestLightSchedulerReadmeRequestWorksUnchanged(t *testing.T) {
	in := startInstance(t)
	fired := kafkatest.Collect(t, in.brokers, "controller-health-check")
	req, _ := http.NewRequest(http.MethodPost, in.console+"/schedulers", strings.NewReader(lightSchedulerExample))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /schedulers: %s %s", resp.Status, body)
	}

	// No start: now rounded up to the next whole minute, then every 2 minutes.
	kafkatest.Eventually(t, 60*time.Second, "the first fire", func() bool { return fired.Count() == 1 })
	t0 := in.clock.Now()
	in.advanceTo(t0.Add(2 * time.Minute))
	kafkatest.Eventually(t, 60*time.Second, "the second fire", func() bool { return fired.Count() == 2 })
	events := kafkatest.Decode[record.Fired](t, fired.Records())
	if e := events[1]; e.Data["key1"] != "value1" || e.Data["key2"] != "value2" || e.ScheduledAt-events[0].ScheduledAt != 120_000 {
		t.Errorf("fired %+v then %+v", events[0], e)
	}

	var defs []struct{ Host, Name string }
	if err := in.getJSON("/schedulers?host=networknt.com&name=market-192.168.1.1-health-check&unit=MINUTES", &defs); err != nil || len(defs) != 1 {
		t.Errorf("GET /schedulers: %v %+v", err, defs)
	}
}

// TestTaskFiringIntoTheInputTopic: light-scheduler's own examples fire
// into its input topic. The events land there, and the engine, which reads
// that topic for commands, passes over them without a complaint.
func TestTaskFiringIntoTheInputTopic(t *testing.T) {
	in := startInstance(t)
	input := kafkatest.Collect(t, in.brokers, in.cfg.Topics.Input)
	at := in.clock.Now().Add(time.Second)
	body := `{"host":"lightapi.net","name":"echo","topic":"` + in.cfg.Topics.Input + `","start":` + strconv.FormatInt(at.UnixMilli(), 10) + `,"data":{"question":"Hello"}}`
	req, _ := http.NewRequest(http.MethodPost, in.console+"/schedulers", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /schedulers: %s", resp.Status)
	}
	in.advanceTo(at)
	// The command, then the event it fired.
	kafkatest.Eventually(t, 60*time.Second, "the event in the input topic", func() bool { return input.Count() == 2 })
	var execs []json.RawMessage
	kafkatest.Eventually(t, 60*time.Second, "the execution recorded", func() bool {
		return in.getJSON("/api/executions", &execs) == nil && len(execs) == 1
	})
	var rejected []json.RawMessage
	if err := in.getJSON("/api/audit?action=task.rejected", &rejected); err != nil || len(rejected) != 0 {
		t.Errorf("audit holds %d rejected commands (%v): the fired event was taken for one", len(rejected), err)
	}
	if logs := in.logs.String(); strings.Contains(logs, "invalid command") {
		t.Errorf("the engine complained of the fired event:\n%s", logs)
	}
}
