package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestHeldChainInBrowser drops a chain whose middle step fails under
// samples/worker, and has an operator find it in the console: the file's
// graph shows report held, the task's page says where the chain stopped
// and why, and its Release button fires report once.
func TestHeldChainInBrowser(t *testing.T) {
	in := startInstanceEnv(t, consoleUsers(t))
	t0 := in.clock.Now()
	batch := kafkatest.Collect(t, in.brokers, "nightly")
	in.drop("held.csv", fmt.Sprintf("host,name,topic,start,after,data.command\n"+
		"acme,extract,nightly,%s,,true\n"+
		"acme,transform,nightly,,extract,echo disk full >&2; exit 2\n"+
		"acme,load,nightly,,extract,true\n"+
		"acme,report,nightly,,\"transform, load\",true\n", t0.Add(time.Second).UTC().Format(time.RFC3339)))
	in.waitFile("archive", "held.csv")
	startWorker(t, buildWorker(t), in.brokers, "nightly")
	in.advanceTo(t0.Add(time.Second))
	kafkatest.Eventually(t, 60*time.Second, "report held in the console", func() bool {
		code, body := in.call("GET", "/api/tasks/acme/report", "vera", "")
		return code == 200 && strings.Contains(body, "acme/transform FAILED")
	})

	ctx := browser(t)
	base := in.console
	login(t, ctx, base, "otto", "/files")
	within(t, ctx, "the file's graph to show report held",
		chromedp.Navigate(base+"/files"),
		waitJS(`document.querySelector('a[href*="/files/"]') !== null`),
		clickJS(`a[href*="/files/"]`),
		waitJS(`document.querySelector('#chains [data-task="acme/report"][data-state="held"]') !== null`),
		waitJS(`document.querySelector('#chains [data-task="acme/transform"][data-state="failed"]') !== null`),
	)
	screenshot(t, ctx, "chain-graph")
	within(t, ctx, "report's page to say where the chain stopped",
		// An SVG link has no click(): a click event, dispatched in the
		// same step that finds it.
		waitJS(`((a) => a ? (a.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true})), true) : false)(document.querySelector('#chains a[data-task="acme/report"]'))`),
		waitJS(`document.querySelector("#chain-held-reason") !== null && document.querySelector("#chain-held-reason").textContent.includes("acme/transform FAILED")`),
		waitJS(`document.querySelector('.chain-stopped[data-task="acme/transform"]') !== null`),
		waitJS(`document.querySelector("#chain-held-reason").textContent.includes("disk full")`),
	)
	screenshot(t, ctx, "chain-held")
	if n := len(firesOf(t, batch)["report"]); n != 0 {
		t.Fatalf("report fired %d times while held", n)
	}
	// A live update may swap the page at any moment: the button is
	// found and clicked in one step.
	within(t, ctx, "the release",
		waitJS(`(window.confirm = () => true, ((b) => b ? (b.click(), true) : false)(document.querySelector("#chain-release button")))`),
	)
	kafkatest.Eventually(t, 60*time.Second, "report released", func() bool { return len(firesOf(t, batch)["report"]) == 1 })
	within(t, ctx, "the chain no longer held",
		chromedp.Navigate(base+"/tasks/acme/report"),
		waitJS(`document.querySelector("#task-chain") !== null && document.querySelector("#chain-held") === null`),
	)
	kafkatest.Eventually(t, 60*time.Second, "the release in the audit trail by otto", func() bool {
		_, body := in.call("GET", "/api/audit?action="+record.ActionTaskReleased, "vera", "")
		return strings.Contains(body, `"actor": "otto"`) && strings.Contains(body, "acme/report")
	})
	if f := firesOf(t, batch)["report"][0]; !f.Triggered || len(f.After) != 2 {
		t.Errorf("the released fire: %+v", f)
	}
}
