package main

import (
	"io"
	"net/http"
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
