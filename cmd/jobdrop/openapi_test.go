package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/watcher"
)

// TestOpenAPIContract holds the console to its OpenAPI document
// (web/openapi.json, served at /api/openapi.json): it runs a node with
// users of each role and a sync folder, makes real data (tasks through
// /schedulers, dropped files, a rejected one, one dropped again, a held
// one applied and another rejected, fires and worker reports), then calls
// every documented operation, its errors included, validating each
// request and answer. It fails on a route the console serves that the
// document does not describe, on a documented one it does not serve, and
// on a documented operation, answer or role it never saw.
func TestOpenAPIContract(t *testing.T) {
	in := startInstanceEnv(t, append(append(consoleUsers(t), syncEnv...),
		"JOBDROP_MESSAGE_SCHEDULER_TOPICS=schedules", "JOBDROP_MESSAGE_SCHEDULER_LISTEN=127.0.0.1:0",
		// An overdue execution is reaped a second past its timeout.
		"JOBDROP_EXECUTIONS_REAP_GRACE=1s"))
	c := loadContract(t, in)
	now := in.clock.Now().UTC()
	start := now.Add(time.Hour).UnixMilli()

	// Open without login.
	c.want(200, exchange{method: "GET", path: "/api/openapi.json"})
	c.want(200, exchange{method: "GET", path: "/healthz"})
	kafkatest.Eventually(t, 60*time.Second, "/readyz to say ready", func() bool {
		return c.do(exchange{method: "GET", path: "/readyz"}).status == http.StatusOK
	})
	c.want(200, exchange{method: "GET", path: "/metrics"})
	for _, f := range []string{"console.css", "htmx.min.js", "live.js", "htmx.LICENSE"} {
		c.want(200, exchange{method: "GET", path: "/static/" + f})
	}
	c.want(404, exchange{method: "GET", path: "/static/nothing.css"})
	c.want(200, exchange{method: "GET", path: "/login?next=/tasks"})

	// kafka-message-scheduler's admin REST, on its own address, open as
	// the original is.
	kafkatest.Eventually(t, 60*time.Second, "/liveness 200", func() bool {
		return c.do(exchange{method: "GET", path: "/liveness", messageAdmin: true}).status == http.StatusOK
	})
	c.want(200, exchange{method: "GET", path: "/info", messageAdmin: true})
	sched := kafkatest.Client(t, in.brokers)
	if err := sched.ProduceSync(context.Background(), &kgo.Record{Topic: "schedules", Key: []byte("contract"), Value: []byte("payload"),
		Headers: []kgo.RecordHeader{
			{Key: record.HeaderScheduleEpoch, Value: []byte(strconv.FormatInt(now.Add(48*time.Hour).Unix(), 10))},
			{Key: record.HeaderScheduleTargetTopic, Value: []byte("contract-target")},
			{Key: record.HeaderScheduleTargetKey, Value: []byte("k")},
		}}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 60*time.Second, "/schedules to list the schedule", func() bool {
		var listed []json.RawMessage
		c.want(200, exchange{method: "GET", path: "/schedules?q=contr", messageAdmin: true}).json(t, &listed)
		return len(listed) == 1
	})
	var none []json.RawMessage
	if c.want(200, exchange{method: "GET", path: "/schedules?limit=0", messageAdmin: true}).json(t, &none); len(none) != 0 {
		t.Errorf("/schedules?limit=0 listed %d", len(none))
	}
	c.want(400, exchange{method: "GET", path: "/schedules?limit=many", messageAdmin: true, offContract: true})

	// Who may come in: nobody without credentials; a wrong password is
	// throttled by name after five (the address allows ten: the test
	// stays under).
	c.want(401, exchange{method: "GET", path: "/api/summary", offContract: true})
	c.want(303, exchange{method: "GET", path: "/", offContract: true})
	c.want(401, exchange{method: "POST", path: "/logout", offContract: true})
	for range 5 {
		c.want(401, exchange{method: "GET", path: "/api/summary", user: "mallory", password: "guess", offContract: true})
	}
	if a := c.want(429, exchange{method: "GET", path: "/api/summary", user: "mallory", password: "guess", offContract: true}); a.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	c.want(401, exchange{method: "POST", path: "/login", body: form("user", "vera", "password", "wrong", "next", "/"), contentType: formType})
	c.want(429, exchange{method: "POST", path: "/login", body: form("user", "mallory", "password", "guess"), contentType: formType})
	c.want(400, exchange{method: "POST", path: "/login", body: []byte("user=vera"), contentType: "multipart/form-data", offContract: true})
	login := c.want(303, exchange{method: "POST", path: "/login", body: form("user", "vera", "password", "arev", "next", "/tasks"), contentType: formType})
	var session *http.Cookie
	for _, ck := range (&http.Response{Header: login.header}).Cookies() {
		if ck.Name == "jobdrop_session" {
			session = ck
		}
	}
	if session == nil {
		t.Fatalf("login set no session cookie: %v", login.header)
	}
	c.want(200, exchange{method: "GET", path: "/api/summary", cookie: session})
	c.want(303, exchange{method: "POST", path: "/settings/timezone", cookie: session, contentType: formType,
		body: form("tz", "local", "zone", "Asia/Tokyo", "back", "/tasks")})
	c.want(403, exchange{method: "POST", path: "/settings/timezone", cookie: session, contentType: formType, body: form("tz", "utc"),
		header: map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}})

	// Definitions through light-scheduler's REST.
	market := `{"host":"lightapi.net","name":"market-1","action":"INSERT","frequency":{"timeUnit":"MINUTES","time":2},"topic":"light-scheduler","start":` +
		jsonInt(start) + `,"data":{"question":"Hello","owner":"market"}}`
	nightly := `{"host":"api.example","name":"nightly","cron":"0 2 * * *","cronDialect":"unix","timezone":"Europe/Paris","topic":"batch-jobs",` +
		`"window":{"from":"01:00","to":"05:00","days":["MON","TUE"]},"misfire":"SKIP","end":` + jsonInt(now.AddDate(1, 0, 0).UnixMilli()) +
		`,"frequency":null,"start":null,"data":null,"timeout":60000}`
	slow := `{"host":"api.example","name":"slow","frequency":{"timeUnit":"HOURS","time":1},"topic":"batch-jobs","start":` + jsonInt(start) + `,"timeout":1000}`
	calendar := `{"host":"calendar.example","name":"board","rrule":"RRULE:FREQ=MONTHLY;BYDAY=2TU\nEXDATE:20270112T090000","timezone":"Europe/Paris",` +
		`"topic":"batch-jobs","start":` + jsonInt(start-start%1000) + `}`
	c.want(403, exchange{method: "POST", path: "/schedulers", user: "otto", body: []byte(market)})
	c.want(403, exchange{method: "POST", path: "/schedulers", user: "ada", body: []byte(market),
		header: map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}})
	for _, def := range []string{market, nightly, slow, calendar} {
		c.want(200, exchange{method: "POST", path: "/schedulers", user: "ada", body: []byte(def)})
	}
	c.want(400, exchange{method: "POST", path: "/schedulers", user: "ada", offContract: true, body: []byte(strings.Replace(market, `"MINUTES"`, `"FORTNIGHTS"`, 1))})
	c.want(400, exchange{method: "POST", path: "/schedulers", user: "ada", body: []byte(strings.Replace(calendar, "MONTHLY", "FORTNIGHTLY", 1))})
	c.want(400, exchange{method: "POST", path: "/schedulers", user: "ada", offContract: true, body: []byte(strings.Replace(market, `"frequency"`, `"frequncy"`, 1))})
	c.want(400, exchange{method: "POST", path: "/schedulers", user: "ada", offContract: true, body: []byte(market + market)})
	// A message is the schedule topics' alone: its tombstone goes where
	// it says.
	if a := c.want(400, exchange{method: "POST", path: "/schedulers", user: "ada", body: []byte(strings.Replace(market, `"frequency"`,
		`"message":{"key":"aw==","value":"dg==","from":{"topic":"light-scheduler-state","partition":0,"key":"aw==","timestamp":0}},"frequency"`, 1))}); !strings.Contains(string(a.body), "message") {
		t.Errorf("POST /schedulers with a message: %s, want the field named", a.body)
	}
	c.want(413, exchange{method: "POST", path: "/schedulers", user: "ada", offContract: true, body: bytes.Repeat([]byte(" "), 1<<20+1)})
	var listed []string
	defer func() {
		if t.Failed() {
			t.Logf("GET /schedulers listed last: %v", listed)
			t.Logf("the node logged:\n%s", in.logs.String())
		}
	}()
	kafkatest.Eventually(t, 60*time.Second, "GET /schedulers to list the four definitions and the schedule", func() bool {
		var defs []map[string]any
		c.want(200, exchange{method: "GET", path: "/schedulers", user: "vera"}).json(t, &defs)
		listed = listed[:0]
		for _, d := range defs {
			listed = append(listed, fmt.Sprint(d["host"], "/", d["name"]))
		}
		return len(defs) == 5
	})
	c.want(200, exchange{method: "GET", path: "/schedulers?host=lightapi.net&name=market-1&unit=minute", user: "vera"})
	// A chain: a task that follows one that runs, with the outcome it
	// waits for, a delay and retries; following no running task is
	// refused, naming the predecessor.
	chained := `{"host":"chain.example","name":"report","topic":"batch-jobs","after":["api.example/nightly"],"on":"done","delay":60000,` +
		`"retry":{"attempts":3,"delay":600000,"multiplier":2,"maxDelay":3600000}}`
	c.want(200, exchange{method: "POST", path: "/schedulers", user: "ada", body: []byte(chained)})
	if a := c.want(400, exchange{method: "POST", path: "/schedulers", user: "ada",
		body: []byte(strings.Replace(chained, "api.example/nightly", "api.example/nothing", 1))}); !strings.Contains(string(a.body), "predecessor api.example/nothing is not a running task") {
		t.Errorf("POST /schedulers following no running task: %s, want the predecessor named", a.body)
	}
	c.want(400, exchange{method: "GET", path: "/schedulers?unit=fortnight", user: "vera"})

	// Files: one injected, one rejected, the first dropped again, and a
	// sync source cut short, held, rejected; held again, applied.
	jobs := "host,name,topic,start,timeUnit,time\nfiles.example,hourly,batch-jobs," + now.Add(time.Hour).Format(time.RFC3339) +
		",HOURS,1\nfiles.example,daily,batch-jobs," + now.Add(2*time.Hour).Format(time.RFC3339) + ",DAYS,1\n"
	in.drop("jobs.csv", jobs)
	in.waitFile("archive", "jobs.csv")
	in.drop("bad.csv", "host,name,topic,timeUnit,time\nfiles.example,bad,batch-jobs,FORTNIGHTS,1\n")
	in.waitFile(watcher.FailedDir, "bad.csv")
	injected := c.batchOf("jobs.csv", storetype.BatchInjected)
	rejected := c.batchOf("bad.csv", storetype.BatchRejected)
	in.drop("jobs.csv", jobs)
	kafkatest.Eventually(t, 60*time.Second, "jobs.csv dropped again to be recorded", func() bool {
		var arrivals []storetype.Arrival
		c.want(200, exchange{method: "GET", path: "/api/arrivals", user: "vera"}).json(t, &arrivals)
		return slices.ContainsFunc(arrivals, func(a storetype.Arrival) bool { return a.Status == storetype.ArrivalDuplicate })
	})
	// A sync source of six lines, cut to one: held for review, then
	// decided, by the API and by a browser's form.
	var crontab strings.Builder
	for i := range 6 {
		fmt.Fprintf(&crontab, "%d 1 * * * /opt/job%d.sh\n", i, i)
	}
	cut := "0 1 * * * /opt/job0.sh\n"
	in.drop("crontab", crontab.String())
	in.waitFile("archive", "crontab")
	held := c.nextHeld("crontab", cut, "")
	heldPath := "/api/files/" + held.ID
	c.want(200, exchange{method: "GET", path: heldPath, user: "vera"})
	c.want(403, exchange{method: "POST", path: heldPath + "/reject", user: "vera", body: []byte(`{"reason":"no"}`)})
	c.want(400, exchange{method: "POST", path: heldPath + "/reject", user: "otto", body: []byte(`{"reason":`), offContract: true})
	c.want(200, exchange{method: "POST", path: heldPath + "/reject", user: "otto", body: []byte(`{"reason":"truncated export"}`)})
	c.want(409, exchange{method: "POST", path: heldPath + "/reject", user: "otto", body: []byte(`{"reason":"again"}`)})
	held = c.nextHeld("crontab", cut+"\n", held.ID)
	heldPath = "/api/files/" + held.ID
	c.want(403, exchange{method: "POST", path: heldPath + "/apply", user: "otto"})
	c.want(200, exchange{method: "POST", path: heldPath + "/apply", user: "ada"})
	c.want(409, exchange{method: "POST", path: heldPath + "/apply", user: "ada"})
	c.batchOf("crontab", storetype.BatchInjected)
	in.drop("crontab", crontab.String()+"\n")
	kafkatest.Eventually(t, 60*time.Second, "the six lines back", func() bool {
		return c.want(200, exchange{method: "GET", path: "/api/tasks?host=acme&status=live&limit=1", user: "vera"}).header.Get("X-Total-Count") == "6"
	})
	held = c.nextHeld("crontab", cut+"\n\n", held.ID)
	c.want(303, exchange{method: "POST", path: "/api/files/" + held.ID + "/reject", user: "otto", contentType: formType,
		body: form("reason", "by hand", "back", "/files/"+held.ID)})
	held = c.nextHeld("crontab", cut+"\n\n\n", held.ID)
	c.want(303, exchange{method: "POST", path: "/api/files/" + held.ID + "/apply", user: "ada", contentType: formType, body: form("back", "/files")})

	// Fires: a trigger of each of two tasks; a worker reports on one; the
	// other (a one-second timeout) is overdue once the clock passes it.
	c.want(403, exchange{method: "POST", path: "/api/tasks/api.example/slow/trigger", user: "vera"})
	c.want(200, exchange{method: "POST", path: "/api/tasks/api.example/slow/trigger", user: "otto"})
	c.want(200, exchange{method: "POST", path: "/api/tasks/lightapi.net/market-1/trigger", user: "otto"})
	var executions []storetype.Execution
	kafkatest.Eventually(t, 60*time.Second, "the two triggered fires", func() bool {
		c.want(200, exchange{method: "GET", path: "/api/executions", user: "vera"}).json(t, &executions)
		return len(executions) == 2
	})
	var marketFire string
	for _, e := range executions {
		if e.Name == "market-1" {
			marketFire = e.FireID
		}
	}
	status := "/api/executions/" + url.PathEscape(marketFire) + "/status"
	c.want(403, exchange{method: "POST", path: status, user: "vera", body: []byte(`{"status":"RUNNING"}`)})
	c.want(400, exchange{method: "POST", path: status, user: "otto", body: []byte(`{"status":"DONE"}`), offContract: true})
	c.want(400, exchange{method: "POST", path: status, user: "otto", body: []byte(`{"status":`), offContract: true})
	c.want(404, exchange{method: "POST", path: "/api/executions/no-such-fire/status", user: "otto", body: []byte(`{"status":"RUNNING"}`)})
	c.want(200, exchange{method: "POST", path: status, user: "otto", body: []byte(`{"status":"success","message":"done in 2s","worker":"worker-1"}`)})
	in.advanceTo(in.clock.Now().Add(2 * time.Second))
	kafkatest.Eventually(t, 60*time.Second, "one execution overdue and one reported", func() bool {
		c.want(200, exchange{method: "GET", path: "/api/executions", user: "vera"}).json(t, &executions)
		var overdue, success bool
		for _, e := range executions {
			overdue = overdue || e.Status == storetype.ExecutionOverdue
			success = success || e.Status == storetype.ExecutionSuccess
		}
		return overdue && success
	})
	// The timeout reads as the definition says it: milliseconds.
	var raw []map[string]any
	c.want(200, exchange{method: "GET", path: "/api/executions?task=api.example/slow", user: "vera"}).json(t, &raw)
	if len(raw) != 1 || raw[0]["timeout"] != 1000.0 || raw[0]["recordedStatus"] != storetype.ExecutionFired {
		t.Errorf("the overdue execution of a task with a 1000 ms timeout: %v", raw)
	}
	seedTaskAPI(c)

	// Lists, a page at a time, and their errors.
	for _, list := range []string{"/api/tasks", "/api/files", "/api/executions", "/api/audit"} {
		pages, next := 0, list+"?limit=1"
		for next != "" && pages < 3 {
			a := c.want(200, exchange{method: "GET", path: next, user: "vera"})
			if a.header.Get("X-Total-Count") == "" {
				t.Errorf("GET %s: no X-Total-Count", next)
			}
			next = ""
			if m := nextLink.FindStringSubmatch(a.header.Get("Link")); m != nil {
				next = m[1]
			}
			pages++
		}
		if pages < 2 {
			t.Errorf("%s?limit=1 has no second page", list)
		}
		c.want(400, exchange{method: "GET", path: list + "?sort=sideways", user: "vera", offContract: true})
		c.want(400, exchange{method: "GET", path: list + "?cursor=not-a-cursor", user: "vera"})
	}
	c.want(200, exchange{method: "GET", path: "/api/tasks?status=live&sort=key&host=api.example&from=-1h&to=2099-01-01", user: "vera"})
	c.want(200, exchange{method: "GET", path: "/api/files?status=duplicate", user: "vera"})
	c.want(200, exchange{method: "GET", path: "/api/executions?status=OVERDUE&task=api.example/slow", user: "vera"})
	c.want(200, exchange{method: "GET", path: "/api/audit?action=file.held&sort=oldest", user: "vera"})
	c.want(400, exchange{method: "GET", path: "/api/arrivals?limit=none", user: "vera", offContract: true})
	c.want(200, exchange{method: "GET", path: "/api/tasks/api.example/nightly", user: "vera"})
	c.want(200, exchange{method: "GET", path: "/api/tasks/calendar.example/board", user: "vera"})
	c.want(404, exchange{method: "GET", path: "/api/tasks/api.example/nothing", user: "vera"})
	c.want(200, exchange{method: "GET", path: "/api/files/" + injected.ID, user: "vera"})
	c.want(200, exchange{method: "GET", path: "/api/files/" + rejected.ID, user: "vera"})
	c.want(404, exchange{method: "GET", path: "/api/files/0000", user: "vera"})
	c.want(200, exchange{method: "GET", path: "/api/summary", user: "vera"})
	kafkatest.Eventually(t, 60*time.Second, "the timeline computed", func() bool {
		return c.do(exchange{method: "GET", path: "/api/timeline?by=topic", user: "vera"}).status == http.StatusOK
	})
	c.want(200, exchange{method: "GET", path: "/api/timeline", user: "vera"})
	var activity struct{ Chart *struct{ Buckets []any } }
	if c.want(200, exchange{method: "GET", path: "/api/activity", user: "vera"}).json(t, &activity); activity.Chart == nil || len(activity.Chart.Buckets) == 0 {
		t.Error("GET /api/activity has no chart once the timeline is computed")
	}
	c.want(400, exchange{method: "GET", path: "/api/timeline?by=colour", user: "vera", offContract: true})
	c.fallback("GET /api/", exchange{method: "GET", path: "/api/no/such/thing", user: "vera"})

	// What runs, changed: one task and many.
	market1 := "/api/tasks/lightapi.net/market-1"
	c.want(403, exchange{method: "POST", path: market1 + "/pause", user: "vera"})
	c.want(200, exchange{method: "POST", path: market1 + "/pause", user: "otto"})
	kafkatest.Eventually(t, 60*time.Second, "market-1 to show paused", func() bool {
		var task storetype.Task
		c.want(200, exchange{method: "GET", path: market1, user: "vera"}).json(t, &task)
		return task.Paused
	})
	c.want(409, exchange{method: "POST", path: "/api/v1/tasks?source=lightapi.net&collection=market-1", user: "otto"})
	c.want(200, exchange{method: "POST", path: market1 + "/resume", user: "otto"})
	// Release and skip are for a chained task: market-1 follows none.
	c.want(409, exchange{method: "POST", path: market1 + "/release", user: "otto"})
	c.want(409, exchange{method: "POST", path: market1 + "/skip", user: "otto"})
	c.want(404, exchange{method: "POST", path: "/api/tasks/release?host=api.example", user: "otto", offContract: true})
	c.want(303, exchange{method: "POST", path: market1 + "/trigger", user: "otto", contentType: formType, body: form("back", "/tasks/lightapi.net/market-1")})
	c.want(404, exchange{method: "POST", path: market1 + "/explode", user: "otto", offContract: true})
	c.want(404, exchange{method: "POST", path: "/api/tasks/lightapi.net/nothing/pause", user: "otto"})
	c.want(403, exchange{method: "DELETE", path: market1, user: "vera"})
	c.want(404, exchange{method: "DELETE", path: "/api/tasks/lightapi.net/nothing", user: "otto"})
	c.want(200, exchange{method: "DELETE", path: market1, user: "otto"})
	kafkatest.Eventually(t, 60*time.Second, "market-1 to end deleted", func() bool {
		var task storetype.Task
		c.want(200, exchange{method: "GET", path: market1, user: "vera"}).json(t, &task)
		return task.Status == storetype.TaskDeleted
	})
	c.want(404, exchange{method: "POST", path: "/api/v1/tasks?source=lightapi.net&collection=market-1", user: "otto"})
	c.want(409, exchange{method: "DELETE", path: market1, user: "otto"})
	c.want(409, exchange{method: "POST", path: market1 + "/pause", user: "otto"})
	c.want(403, exchange{method: "POST", path: "/api/tasks/pause?host=api.example", user: "vera"})
	bulk := c.want(200, exchange{method: "POST", path: "/api/tasks/pause?host=api.example", user: "otto"})
	var result struct{ Sent int }
	if bulk.json(t, &result); result.Sent != 2 {
		t.Errorf("bulk pause sent %d commands, want 2: %s", result.Sent, bulk.body)
	}
	c.want(303, exchange{method: "POST", path: "/api/tasks/resume?host=api.example", user: "otto", contentType: formType, body: form("back", "/tasks?host=api.example")})
	c.want(400, exchange{method: "POST", path: "/api/tasks/pause", user: "otto"})
	c.want(404, exchange{method: "POST", path: "/api/tasks/pause?file=0000", user: "otto"})
	c.want(404, exchange{method: "POST", path: "/api/tasks/explode?host=api.example", user: "otto", offContract: true})

	// A file compared with what runs, and uploaded: dry run, then dropped.
	more := jobs + "files.example,weekly,batch-jobs," + now.Add(3*time.Hour).Format(time.RFC3339) + ",DAYS,7\n"
	c.want(200, exchange{method: "POST", path: "/api/diff?name=jobs.csv", user: "vera", body: []byte(more), contentType: "text/csv"})
	c.want(400, exchange{method: "POST", path: "/api/diff?name=..", user: "vera", body: []byte(more), contentType: "text/csv"})
	c.want(422, exchange{method: "POST", path: "/api/diff?name=jobs.csv", user: "vera", body: []byte(jobs + "files.example,x,batch-jobs,,FORTNIGHTS,1\n"), contentType: "text/csv"})
	c.want(200, exchange{method: "GET", path: "/upload", user: "vera"})
	body, ctype := multipartUpload("up.csv", more, true)
	c.want(403, exchange{method: "POST", path: "/upload", user: "vera", body: body, contentType: ctype})
	c.want(200, exchange{method: "POST", path: "/upload", user: "otto", body: body, contentType: ctype})
	body, ctype = multipartUpload("up.csv", more, false)
	c.want(403, exchange{method: "POST", path: "/upload", user: "otto", body: body, contentType: ctype})
	c.want(303, exchange{method: "POST", path: "/upload", user: "ada", body: body, contentType: ctype})
	body, ctype = multipartUpload("", "", true)
	c.want(400, exchange{method: "POST", path: "/upload", user: "ada", body: body, contentType: ctype, offContract: true})
	// A name taken in the folder (here by a subfolder) is not replaced.
	if err := os.Mkdir(filepath.Join(in.inbox, "taken.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	body, ctype = multipartUpload("taken.csv", more, false)
	c.want(409, exchange{method: "POST", path: "/upload", user: "ada", body: body, contentType: ctype})

	// Exports and downloads.
	for _, list := range []string{"/executions", "/tasks", "/audit"} {
		for _, ext := range []string{".csv", ".xlsx"} {
			c.want(200, exchange{method: "GET", path: list + "/export" + ext, user: "vera"})
			c.want(400, exchange{method: "GET", path: list + "/export" + ext + "?from=yesterday-ish", user: "vera"})
		}
	}
	c.want(200, exchange{method: "GET", path: "/tasks/export.csv?file=" + injected.ID, user: "vera"})
	c.want(404, exchange{method: "GET", path: "/tasks/export.csv?file=0000", user: "vera"})
	c.want(404, exchange{method: "GET", path: "/tasks/export.xlsx?file=0000", user: "vera"})
	c.want(200, exchange{method: "GET", path: "/files/" + injected.ID + "/original", user: "vera"})
	c.want(206, exchange{method: "GET", path: "/files/" + injected.ID + "/original", user: "vera", header: map[string]string{"Range": "bytes=0-3"}})
	c.want(404, exchange{method: "GET", path: "/files/0000/original", user: "vera"})
	c.want(200, exchange{method: "GET", path: "/files/" + rejected.ID + "/errors.txt", user: "vera"})
	c.want(404, exchange{method: "GET", path: "/files/" + injected.ID + "/errors.txt", user: "vera"})

	// Pages.
	for _, p := range []struct {
		path   string
		status int
	}{
		{"/", 200}, {"/?by=topic", 200}, {"/?by=colour", 400},
		{"/files", 200}, {"/files?status=&name=", 303}, {"/files?status=lost", 400},
		{"/files/" + held.ID, 200}, {"/files/0000", 404},
		{"/tasks", 200}, {"/tasks?host=api.example&name=", 303}, {"/tasks?sort=sideways", 400},
		{"/tasks/api.example/nightly", 200}, {"/tasks/api.example/nothing", 404},
		{"/hosts/api.example", 200}, {"/hosts/nothing.example", 404},
		{"/executions", 200}, {"/executions?status=", 303}, {"/executions?status=lost", 400},
		{"/audit", 200}, {"/audit?actor=", 303}, {"/audit?sort=sideways", 400},
	} {
		c.want(p.status, exchange{method: "GET", path: p.path, user: "vera", offContract: p.status == 400})
	}
	c.want(200, exchange{method: "GET", path: "/events", cookie: session, stream: true})
	c.fallback("GET /", exchange{method: "GET", path: "/no/such/page", user: "vera"})
	c.want(303, exchange{method: "POST", path: "/logout", cookie: session})
	c.schemaRegistry()

	c.covered()
}

// batchOf waits for the file's batch in the state, and reads it whole.
func (c *contract) batchOf(file, status string) storetype.Batch {
	c.t.Helper()
	var found storetype.Batch
	kafkatest.Eventually(c.t, 60*time.Second, file+" recorded "+status, func() bool {
		var files []storetype.Batch
		c.want(200, exchange{method: "GET", path: "/api/files?status=" + status, user: "vera"}).json(c.t, &files)
		for _, b := range files {
			if b.File == file {
				found = b
				return true
			}
		}
		return false
	})
	c.want(200, exchange{method: "GET", path: "/api/files/" + found.ID, user: "vera"}).json(c.t, &found)
	return found
}

// nextHeld drops content as name and waits for it to be held for review:
// a batch other than the one of id prev.
func (c *contract) nextHeld(name, content, prev string) storetype.Batch {
	c.t.Helper()
	c.in.drop(name, content)
	var found storetype.Batch
	defer func() {
		if c.t.Failed() {
			// What the console and the log said, for the one who reads
			// why no file was held.
			var files []storetype.Batch
			_ = c.in.getJSON("/api/files?limit=20", &files)
			for _, b := range files {
				c.t.Logf("file %s %s status=%s kept=%v", b.ID[:12], b.File, b.Status, b.Kept)
			}
			entries, _ := os.ReadDir(c.in.inbox)
			for _, e := range entries {
				c.t.Logf("inbox: %s", e.Name())
			}
			c.t.Logf("log:\n%s", c.in.logs.String())
		}
	}()
	kafkatest.Eventually(c.t, 60*time.Second, name+" held", func() bool {
		var files []storetype.Batch
		c.want(200, exchange{method: "GET", path: "/api/files?status=held", user: "vera"}).json(c.t, &files)
		for _, b := range files {
			if b.File != name || b.ID == prev {
				continue
			}
			// Held, and recorded as kept in held/, where a decision
			// takes it from.
			c.want(200, exchange{method: "GET", path: "/api/files/" + b.ID, user: "vera"}).json(c.t, &found)
			return slices.ContainsFunc(found.Kept, func(p string) bool { return filepath.Base(filepath.Dir(p)) == watcher.HeldDir })
		}
		return false
	})
	return found
}
