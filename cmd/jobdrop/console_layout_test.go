package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// brokenWords lists the words of table cells laid out over more than one
// line: for each run of non-blank characters of a text node in a td or
// th, a Range over it, whose boxes sit on more than one line when the
// word was broken ("SUCCES" above "S", a time cut at a hyphen).
const brokenWords = `(() => {
	const broken = [];
	for (const cell of document.querySelectorAll("td, th")) {
		const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			for (const m of n.data.matchAll(/\S+/g)) {
				const r = document.createRange();
				r.setStart(n, m.index);
				r.setEnd(n, m.index + m[0].length);
				const tops = [];
				for (const b of r.getClientRects()) {
					if (b.width > 0 && !tops.some(t => Math.abs(t - b.top) < 2)) tops.push(b.top);
				}
				if (tops.length > 1) {
					const table = cell.closest("table");
					broken.push((table && table.id ? "#" + table.id : "a table") + " " + cell.tagName.toLowerCase() +
						": " + JSON.stringify(m[0]) + " over " + tops.length + " lines");
				}
			}
		}
	}
	return broken;
})()`

// sideways says what sticks out of the page sideways at a phone's width
// w, "" when nothing does: the page itself must not scroll sideways (a
// table may, inside its own box). A phone's browser widens its window to
// what sticks out, so w is the phone's width, not the window's.
const sideways = `((w) => {
	if (document.documentElement.scrollWidth <= w) return "";
	const out = [];
	const scrolls = el => ["auto", "scroll", "hidden"].includes(getComputedStyle(el).overflowX);
	for (const el of document.body.querySelectorAll("*")) {
		const b = el.getBoundingClientRect();
		let boxed = false;
		for (let p = el.parentElement; p && !boxed; p = p.parentElement) boxed = scrolls(p);
		if (b.right > w + 1 && !boxed) {
			out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.getAttribute("class") ? "." + el.getAttribute("class") : "") + " to " + Math.round(b.right) + "px");
		}
	}
	return "the page is " + document.documentElement.scrollWidth + "px wide on a " + w + "px screen: " + out.slice(0, 5).join(", ");
})`

// wordless lists the state badges and notices that say nothing in words:
// colour must never be the only sign of a state.
const wordless = `[...document.querySelectorAll(".badge, .notice, .attention, [class*='diff-']")]
	.filter(el => el.textContent.trim() === "")
	.map(el => el.outerHTML.slice(0, 80))`

// focused describes the element that has the keyboard's focus, and whether
// a person sees where it is: an outline at least 2 px wide, or none.
const focused = `(() => {
	const el = document.activeElement;
	if (!el || el === document.body) return {what: "", visible: false};
	const s = getComputedStyle(el), b = el.getBoundingClientRect();
	const what = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + " " + JSON.stringify((el.textContent || el.name || "").trim().slice(0, 30));
	return {what, visible: s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2 && b.width > 0 && b.height > 0 &&
		b.right > 0 && b.left < window.innerWidth};
})()`

// layoutData fills a console with what a night leaves behind: the night's
// tasks and executions, job lists of long real-world names, one dropped
// again and one rejected, fires reported by workers with messages of
// their own, and a catch-up that collapsed the fires missed while the
// engine was held. It returns the instance, the id of the job list and
// the key of the task that caught up.
func layoutData(t *testing.T) (*instance, string, string) {
	t.Helper()
	dataDir := nightDataDir(t, 400, 3000, time.Now().UTC().Truncate(time.Minute))
	in := startInstanceEnv(t, append(consoleUsers(t), "JOBDROP_DATA_DIR="+dataDir))
	t0 := in.clock.Now()

	payments := "host,name,topic,timeUnit,time,data.command\n" +
		"payments.eu-west-1.example.com,reconcile-ledger-nightly-2026,finance-batch-jobs,DAYS,1,/opt/finance/bin/reconcile --ledger=eu-west-1 --since=yesterday\n" +
		"lightapi.net,market-192.168.1.1-8443,light-scheduler,MINUTES,2,curl -fsS https://market.lightapi.net:8443/refresh\n" +
		"reports.internal,quarterly-revenue-by-region-and-currency,reports,HOURS,6,\"report revenue --by region,currency\"\n" +
		"warehouse.example.org,SUCCESSFUL-SHIPMENTS-EXPORT,warehouse-exports,MINUTES,5,export shipments\n" +
		"acme,backup,batch-jobs,HOURS,1,/usr/local/bin/backup.sh\n"
	in.drop("payments-eu-west-1.csv", payments)
	in.waitFile("archive", "payments-eu-west-1.csv")
	in.drop("sync-invoices.jsonl", fmt.Sprintf(`{"host":"billing.example.com","name":"sync-invoices-from-erp","topic":"billing-jobs","start":%d,"frequency":{"timeUnit":"MINUTES","time":1},"misfire":"FIRE_ONCE","timezone":"Europe/Paris","timeout":600000,"data":{"erp":"sap-prod-eu"}}`+"\n",
		t0.Add(time.Minute).UnixMilli()))
	in.waitFile("archive", "sync-invoices.jsonl")
	in.drop("payments-eu-west-1 (copy).csv", payments)
	in.waitFile("archive", "payments-eu-west-1 (copy).csv")
	in.drop("export-from-excel-2026-11.csv", "host,name,topic,timeUnit,time\n"+
		"acme,weekly-cleanup,batch-jobs,FORTNIGHTS,1\n"+
		",nameless,batch-jobs,HOURS,1\n"+
		"acme,ok-but-rejected-with-the-rest,batch-jobs,HOURS,1\n")
	in.waitFile("failed", "export-from-excel-2026-11.csv")

	// The every-minute task fires, then the engine is held for half an
	// hour: FIRE_ONCE collapses the 30 fires missed into one.
	const catchUp = "billing.example.com/sync-invoices-from-erp"
	kafkatest.Eventually(t, 60*time.Second, "the tasks in the engine", func() bool {
		var tasks []json.RawMessage
		_, body := in.call("GET", "/api/tasks?status=live&host=billing.example.com", "vera", "")
		return json.Unmarshal([]byte(body), &tasks) == nil && len(tasks) == 1
	})
	in.advanceTo(t0.Add(time.Minute))
	in.advanceTo(t0.Add(31 * time.Minute))
	type execution struct {
		FireID    string `json:"fireId"`
		Host      string `json:"host"`
		Name      string `json:"name"`
		Collapsed int    `json:"collapsed"`
	}
	var fired []execution
	kafkatest.Eventually(t, 60*time.Second, "the catch-up fire recorded", func() bool {
		fired = nil
		_, body := in.call("GET", "/api/executions?from="+t0.UTC().Format(time.RFC3339)+"&limit=100", "vera", "")
		if json.Unmarshal([]byte(body), &fired) != nil {
			return false
		}
		for _, x := range fired {
			if x.Host+"/"+x.Name == catchUp && x.Collapsed == 30 {
				return true
			}
		}
		return false
	})

	// Workers report on the fires, as they would.
	reports := []record.Status{
		{Status: record.StatusSuccess, Message: "exported 12,431 rows to s3://finance-reports-eu/2026/11/ledger-eu-west-1.parquet"},
		{Status: record.StatusFailed, Message: "connection refused: postgres://ledger-replica-03.internal.example.com:5432/ledger (after 3 attempts)"},
		{Status: record.StatusRunning, Message: "started on worker-7f9c4d-xk2p"},
		{Status: record.StatusSuccess},
	}
	var recs []*kgo.Record
	for i, x := range fired {
		s := reports[i%len(reports)]
		s.FireID, s.Worker, s.At = x.FireID, "worker-"+strconv.Itoa(i), t0.Add(31*time.Minute+time.Second).UnixMilli()
		v, _ := json.Marshal(s)
		recs = append(recs, &kgo.Record{Topic: in.cfg.Topics.Status, Key: []byte(x.FireID), Value: v})
	}
	if err := kafkatest.Client(t, in.brokers).ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 60*time.Second, "the workers' reports recorded", func() bool {
		var failed []json.RawMessage
		_, body := in.call("GET", "/api/executions?status=FAILED&from="+t0.UTC().Format(time.RFC3339), "vera", "")
		return json.Unmarshal([]byte(body), &failed) == nil && len(failed) > 0
	})
	sum := sha256.Sum256([]byte(payments))
	return in, hex.EncodeToString(sum[:]), catchUp
}

// TestConsoleLayoutHolds loads every page of the console, filled as after
// a night, at 1280 and 1920 px wide and on a 390 px phone: no word of a
// table cell is broken over two lines, the phone's page does not scroll
// sideways (a table scrolls in its own box), every state says itself in
// words, and the keyboard reaches the controls with its focus in sight,
// through a live refresh too. With JOBDROP_SCREENSHOTS set it saves each
// page at 1280 and 390 px.
func TestConsoleLayoutHolds(t *testing.T) {
	in, payments, catchUp := layoutData(t)
	ctx := browser(t)
	base := in.console
	upload := filepath.Join(t.TempDir(), "payments-eu-west-1.csv")
	if err := os.WriteFile(upload, []byte("host,name,topic,timeUnit,time,data.command\n"+
		"payments.eu-west-1.example.com,reconcile-ledger-nightly-2026,finance-batch-jobs,DAYS,1,/opt/finance/bin/reconcile --ledger=eu-west-1 --since=yesterday\n"+
		"lightapi.net,market-192.168.1.1-8443,light-scheduler,MINUTES,10,curl -fsS https://market.lightapi.net:8443/refresh\n"+
		"reports.internal,monthly-revenue-by-region-and-currency,reports,DAYS,30,\"report revenue --by region,currency\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	type action = chromedp.Action[chromedp.Void]
	pages := []struct {
		name string
		open []action
	}{
		{"dashboard", []action{chromedp.Navigate(base + "/")}},
		{"tasks", []action{chromedp.Navigate(base + "/tasks")}},
		{"task", []action{chromedp.Navigate(base + "/tasks/" + catchUp)}},
		{"host", []action{chromedp.Navigate(base + "/hosts/" + strings.SplitN(catchUp, "/", 2)[0])}},
		{"executions", []action{chromedp.Navigate(base + "/executions")}},
		{"files", []action{chromedp.Navigate(base + "/files")}},
		{"file", []action{chromedp.Navigate(base + "/files/" + payments)}},
		{"audit", []action{chromedp.Navigate(base + "/audit")}},
		// The upload page as a dry run of a new version of a list leaves
		// it.
		{"upload", []action{
			chromedp.Navigate(base + "/upload"),
			chromedp.WaitVisible(chromedp.CSS("#upload-file")),
			chromedp.SetUploadFiles(chromedp.CSS("#upload-file"), []string{upload}),
			clickJS("#upload-dryrun"),
			chromedp.Click(chromedp.CSS("#upload-submit")),
			waitJS(`document.querySelector("#preview")`),
		}},
	}
	for _, width := range []int64{1280, 1920, 390} {
		var opts []chromedp.EmulateViewportOption
		if width < 600 {
			opts = append(opts, chromedp.EmulateMobile)
		}
		if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(width, 900, opts...)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
		check := func(name string) {
			t.Helper()
			at := fmt.Sprintf("%d px, %s", width, name)
			// Laid out with its stylesheet and fonts, not while they load.
			within(t, ctx, at+" loaded whole", waitJS(`document.readyState === "complete" && document.fonts.status === "loaded"`))
			for _, b := range eval[[]string](t, ctx, brokenWords) {
				t.Errorf("%s: %s", at, b)
			}
			if width < 600 {
				if s := eval[string](t, ctx, sideways+"("+strconv.FormatInt(width, 10)+")"); s != "" {
					t.Errorf("%s: %s", at, s)
				}
			}
			for _, w := range eval[[]string](t, ctx, wordless) {
				t.Errorf("%s: says nothing in words: %s", at, w)
			}
			if width != 1920 {
				screenshot(t, ctx, fmt.Sprintf("%d/%s", width, name))
			}
		}
		within(t, ctx, "the login page", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(chromedp.CSS("#login-user")))
		check("login")
		login(t, ctx, base, "ada", "/")
		for _, p := range pages {
			within(t, ctx, fmt.Sprintf("the %s page at %d px", p.name, width), append(p.open, waitJS(`document.querySelector("main h1")`))...)
			check(p.name)
		}
	}
}

// TestConsoleKeyboardFocusIsVisible tabs through a page as a person
// without a mouse does: every stop shows where the focus is, and a live
// refresh of the page keeps it where it was.
func TestConsoleKeyboardFocusIsVisible(t *testing.T) {
	in := startInstanceEnv(t, consoleUsers(t))
	in.drop("jobs.csv", "host,name,topic,timeUnit,time\nacme,backup,batch-jobs,HOURS,1\nacme,report,batch-jobs,HOURS,2\n")
	in.waitFile("archive", "jobs.csv")
	ctx := browser(t)
	login(t, ctx, in.console, "otto", "/tasks")
	within(t, ctx, "the task list", waitJS(`document.querySelectorAll("#tasks tbody tr").length === 2`))

	type stop struct {
		What    string `json:"what"`
		Visible bool   `json:"visible"`
	}
	var stops []string
	for range 30 {
		within(t, ctx, "a tab", chromedp.KeyEvent(kb.Tab))
		s := eval[stop](t, ctx, focused)
		if s.What == "" {
			break
		}
		stops = append(stops, s.What)
		if !s.Visible {
			t.Errorf("the focus on %s does not show", s.What)
		}
	}
	t.Logf("tab stops: %s", strings.Join(stops, ", "))
	if len(stops) == 0 || stops[0] != `a "Skip to the page"` {
		t.Errorf("the first tab stop is %q, want the link that skips to the page", stops)
	}
	for _, want := range []string{`input`, `select`, `button`, `a "acme/backup"`} {
		if !strings.Contains(strings.Join(stops, "\n"), want) {
			t.Errorf("tabbing never reached %s", want)
		}
	}

	// The zone picker at the foot, by keyboard: an arrow moves the choice
	// without sending it, as it would a mouse's pick; Enter sends it.
	// The form counts what it is asked to send rather than leave the page.
	within(t, ctx, "the zone picker focused",
		chromedp.Evaluate[chromedp.Void](`((s) => { s.form.submit = () => { window.sent = (window.sent || 0) + 1 }; s.focus() })(document.querySelector("#tz-select"))`),
		chromedp.KeyEvent(kb.ArrowDown))
	if v, sent := eval[string](t, ctx, `document.querySelector("#tz-select").value`), eval[int](t, ctx, `window.sent || 0`); v != "local" || sent != 0 {
		t.Errorf("an arrow on the zone picker chose %q and sent the form %d times; want the choice moved to the browser's zone, nothing sent", v, sent)
	}
	within(t, ctx, "the zone sent with Enter", chromedp.KeyEvent(kb.Enter), waitJS(`window.sent === 1`))

	// On a file's link, a change refreshes the list live: the focus stays
	// on that link.
	within(t, ctx, "the files page, live",
		chromedp.Navigate(in.console+"/files"),
		waitJS(`document.documentElement.getAttribute("data-live-connected") === "true"`))
	for range 40 {
		within(t, ctx, "a tab", chromedp.KeyEvent(kb.Tab))
		if eval[bool](t, ctx, `document.activeElement.textContent.trim() === "jobs.csv"`) {
			break
		}
	}
	href := eval[string](t, ctx, `document.activeElement.getAttribute("href") || ""`)
	if !strings.HasPrefix(href, "/files/") {
		t.Fatalf("tabbing never reached the link to jobs.csv")
	}
	in.drop("more.csv", "host,name,topic,timeUnit,time\nacme,more,batch-jobs,HOURS,1\n")
	within(t, ctx, "more.csv to show live",
		waitJS(`[...document.querySelectorAll("#files tr")].some(r => r.textContent.includes("more.csv") && r.textContent.includes("injected"))`))
	if s := eval[stop](t, ctx, focused); eval[string](t, ctx, `document.activeElement.getAttribute("href") || ""`) != href || !s.Visible {
		t.Errorf("after a live refresh the focus is on %s (visible: %v), want still on the link to jobs.csv", s.What, s.Visible)
	}
}
