package main

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// seedTaskAPI drives the contract's node through what executions do once
// fired: the overdue one (api.example/slow) is reaped a grace past its
// timeout, and a caller of EventNative's task API runs lightapi.net's
// market-1, a worker reports it RUNNING and logs, and both read back.
func seedTaskAPI(c *contract) {
	t, in := c.t, c.in
	t.Helper()
	in.advanceTo(in.clock.Now().Add(2 * time.Second))
	var executions []storetype.Execution
	kafkatest.Eventually(t, 60*time.Second, "the overdue execution reaped", func() bool {
		c.want(200, exchange{method: "GET", path: "/api/executions?task=api.example/slow", user: "vera"}).json(t, &executions)
		return len(executions) == 1 && executions[0].Status == storetype.ExecutionFailed
	})
	if e := executions[0]; e.Worker != "reaper" || !strings.HasSuffix(e.StatusMessage, "; reaped") {
		t.Errorf("the reaped execution says %q by %q", e.StatusMessage, e.Worker)
	}
	var reaped []storetype.AuditEvent
	kafkatest.Eventually(t, 60*time.Second, "the reap audited", func() bool {
		c.want(200, exchange{method: "GET", path: "/api/audit?action=execution.reaped", user: "vera"}).json(t, &reaped)
		return len(reaped) == 1
	})
	if reaped[0].Object != executions[0].FireID || reaped[0].Actor != "test" {
		t.Errorf("reap event %+v", reaped[0])
	}

	v1 := "/api/v1/tasks?source=lightapi.net&collection=market-1"
	c.want(403, exchange{method: "POST", path: v1, user: "vera"})
	var run struct {
		TaskID string `json:"task_id"`
		Status string `json:"status"`
	}
	c.want(201, exchange{method: "POST", path: v1, user: "otto"}).json(t, &run)
	id := url.PathEscape(run.TaskID)
	kafkatest.Eventually(t, 60*time.Second, "the run fired", func() bool {
		return c.do(exchange{method: "GET", path: "/api/v1/tasks/" + id, user: "vera"}).status == http.StatusOK
	})
	c.want(200, exchange{method: "POST", path: "/api/executions/" + id + "/status", user: "otto", body: []byte(`{"status":"RUNNING","worker":"sync-1"}`)})
	logs := "/api/executions/" + id + "/logs"
	c.want(403, exchange{method: "POST", path: logs, user: "vera", body: []byte(`{"message":"x"}`)})
	c.want(400, exchange{method: "POST", path: logs, user: "otto", body: []byte(`{"message":"x","level":"debug"}`)})
	c.want(404, exchange{method: "POST", path: "/api/executions/no-such-fire/logs", user: "otto", body: []byte(`{"message":"x"}`)})
	c.want(200, exchange{method: "POST", path: logs, user: "otto", body: []byte(`{"worker":"sync-1","logs":[{"message":"fetched 120 orders"},{"message":"page 2 refused","level":"error"}]}`)})
	kafkatest.Eventually(t, 60*time.Second, "the run RUNNING, with its log", func() bool {
		var list struct{ Tasks []struct{ ID string } }
		c.want(200, exchange{method: "GET", path: "/api/v1/tasks?source=lightapi.net&status=running", user: "vera"}).json(t, &list)
		var log struct{ Logs []struct{ Message string } }
		c.want(200, exchange{method: "GET", path: "/api/v1/tasks/" + id + "/logs", user: "vera"}).json(t, &log)
		return len(list.Tasks) == 1 && list.Tasks[0].ID == run.TaskID && len(log.Logs) == 2
	})
	var again struct {
		TaskID string `json:"task_id"`
	}
	if c.want(200, exchange{method: "POST", path: v1, user: "otto"}).json(t, &again); again.TaskID != run.TaskID {
		t.Errorf("POST while it runs answered %q, not the running %q", again.TaskID, run.TaskID)
	}
	c.want(400, exchange{method: "POST", path: "/api/v1/tasks?source=lightapi.net", user: "otto"})
	c.want(404, exchange{method: "POST", path: "/api/v1/tasks?source=lightapi.net&collection=nothing", user: "otto"})
	c.want(200, exchange{method: "GET", path: "/api/v1/tasks?source=lightapi.net&collection=market-1&start=-1h&end=2099-01-01&limit=10", user: "vera"})
	c.want(400, exchange{method: "GET", path: "/api/v1/tasks?status=DONE", user: "vera"})
	c.want(404, exchange{method: "GET", path: "/api/v1/tasks/no-such-fire", user: "vera"})
	c.want(200, exchange{method: "GET", path: "/api/v1/tasks/" + id + "/logs?start=-1h", user: "vera"})
	c.want(400, exchange{method: "GET", path: "/api/v1/tasks/" + id + "/logs?start=yesterday-ish", user: "vera"})
	c.want(404, exchange{method: "GET", path: "/api/v1/tasks/no-such-fire/logs", user: "vera"})
	c.want(200, exchange{method: "GET", path: logs, user: "vera"})
	c.want(400, exchange{method: "GET", path: logs + "?end=soon", user: "vera"})
	c.want(404, exchange{method: "GET", path: "/api/executions/no-such-fire/logs", user: "vera"})
	c.want(200, exchange{method: "GET", path: "/executions/" + id, user: "vera"})
	c.want(404, exchange{method: "GET", path: "/executions/no-such-fire", user: "vera"})
}
