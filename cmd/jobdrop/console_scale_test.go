package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/internal/store/storetest"
)

var (
	scaleTasks      = flag.Int("console-scale-tasks", 50_000, "tasks of TestConsoleInBrowserAtScale")
	scaleExecutions = flag.Int("console-scale-executions", 200_000, "executions of TestConsoleInBrowserAtScale")
)

// nightDataDir is a data dir whose database holds a night of work
// (storetest.Night, lean), filled through the store's apply path: a view
// of records no topic holds, which the engine knows nothing of. Where the
// recorder would resume reading each topic is forgotten, so that it reads
// the node's real topics from their start.
func nightDataDir(t *testing.T, tasks, executions int, now time.Time) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, dbFile)
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if err := (storetest.Night{Tasks: tasks, Executions: executions, Now: now, Lean: true}).Fill(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM topic_offsets`); err != nil {
		t.Fatal(err)
	}
	t.Logf("filled %d tasks and %d executions in %s", tasks, executions, time.Since(started).Round(100*time.Millisecond))
	return dir
}

// fillAndSubmit sets fields of the form sel selects and submits it, in one
// step in the page, so that a live refresh cannot swap the form away
// between the two.
func fillAndSubmit(sel string, fields map[string]string) chromedp.Action[chromedp.Void] {
	b, _ := json.Marshal(fields)
	return waitJS(`((f, v) => { if (!f) return false; for (const k in v) f.elements[k].value = v[k]; f.requestSubmit(); return true })(document.querySelector(` + js(sel) + `), ` + string(b) + `)`)
}

// pageTotal is what the list's pager says it holds: "1,500 executions:
// 1–50" is 1500.
func pageTotal(t *testing.T, ctx context.Context) int {
	t.Helper()
	line := eval[string](t, ctx, `document.querySelector("#pager .total").textContent`)
	if strings.HasPrefix(line, "no ") {
		return 0
	}
	n, err := strconv.Atoi(strings.ReplaceAll(strings.Fields(line)[0], ",", ""))
	if err != nil {
		t.Fatalf("pager says %q", line)
	}
	return n
}

// TestConsoleInBrowserAtScale drives the console over 50,000 tasks and
// 200,000 executions as the operator on call would: follow a dashboard
// count to its list; filter the executions to the FAILED ones of one
// host in the last hour and page to the end; pause every task of a host
// and find the one audit event that says so, and from it each task's.
func TestConsoleInBrowserAtScale(t *testing.T) {
	dataDir := nightDataDir(t, *scaleTasks, *scaleExecutions, time.Now().UTC().Truncate(time.Second))
	in := startInstanceEnv(t, append(consoleUsers(t), "JOBDROP_DATA_DIR="+dataDir))
	// A few tasks the engine holds, to pause.
	var csv strings.Builder
	csv.WriteString("host,name,topic,timeUnit,time\n")
	for i := range 20 {
		csv.WriteString("ops,report-" + strconv.Itoa(i) + ",reports,HOURS,1\n")
	}
	in.drop("ops.csv", csv.String())
	in.waitFile("archive", "ops.csv")
	ctx := browser(t)
	base := in.console
	login(t, ctx, base, "otto", "/")

	// What comes next and what happened, at a glance: computed in the
	// background, they come to the open dashboard by themselves, and say
	// in words what they draw.
	took := time.Now()
	within(t, ctx, "the timeline and the charts on the open dashboard",
		waitJS(`document.querySelector("#timeline-summary") && document.querySelector("#activity-summary")`))
	t.Logf("the timeline and the charts came to the open dashboard %s after the login", time.Since(took).Round(time.Millisecond))
	checkGlance(t, ctx, in, "host")
	within(t, ctx, "the timeline by topic",
		clickJS(`#next-day nav a[href="/?by=topic"]`),
		waitJS(`location.search === "?by=topic" && document.querySelector("#timeline-summary")`))
	checkGlance(t, ctx, in, "topic")
	within(t, ctx, "back to the dashboard", chromedp.Navigate(base+"/"), waitJS(`document.querySelector("#timeline-summary")`))
	screenshot(t, ctx, "dashboard-at-scale")

	// A dashboard count leads to a list of as many.
	failed := eval[string](t, ctx, `document.querySelector("#executions-failed").textContent`)
	took = time.Now()
	within(t, ctx, "the failed count to its list",
		clickJS(`#executions-failed`),
		waitJS(`location.pathname === "/executions" && location.search === "?status=FAILED" && document.querySelector("#pager")`))
	t.Logf("dashboard count %s led to /executions?status=FAILED in %s", failed, time.Since(took).Round(time.Millisecond))
	if n := pageTotal(t, ctx); strconv.Itoa(n) != strings.ReplaceAll(failed, ",", "") || n == 0 {
		t.Errorf("the dashboard counts %s failed executions; its list holds %d", failed, n)
	}

	// The FAILED ones of host-07 in the last hour, through the form, then
	// every page to the last.
	var latest []struct{ Host string }
	if code, body := in.call("GET", "/api/executions?status=FAILED&from=-1h&limit=1", "vera", ""); code != 200 ||
		json.Unmarshal([]byte(body), &latest) != nil || len(latest) != 1 {
		t.Fatalf("the latest failed execution: %d %s", code, body)
	}
	host := latest[0].Host
	within(t, ctx, "filter the executions",
		fillAndSubmit(`#execution-filters`, map[string]string{"host": host, "from": "-1h"}),
		waitJS(`location.search === "?status=FAILED&host=`+host+`&from=-1h" && document.querySelector("#pager")`))
	total := pageTotal(t, ctx)
	var want []json.RawMessage
	if code, body := in.call("GET", "/api/executions?status=FAILED&host="+host+"&from=-1h&limit=1000", "vera", ""); code != 200 ||
		json.Unmarshal([]byte(body), &want) != nil {
		t.Fatalf("API: %d %s", code, body)
	}
	if total == 0 || total != len(want) {
		t.Fatalf("the filtered list says %d executions, the API lists %d", total, len(want))
	}
	seen, pages := 0, 0
	for {
		pages++
		rows := eval[[][]string](t, ctx, `[...document.querySelectorAll("#executions tbody tr")].map(r => [...r.cells].map(c => c.textContent.trim()))`)
		for _, r := range rows {
			if len(r) < 4 || !strings.HasPrefix(r[0], host+"/") || !strings.HasPrefix(r[3], "FAILED") {
				t.Fatalf("page %d holds %q", pages, r)
			}
		}
		seen += len(rows)
		if !eval[bool](t, ctx, `!!document.querySelector('#pager a[rel=next]')`) {
			break
		}
		start := time.Now()
		within(t, ctx, "the next page",
			chromedp.Evaluate[chromedp.Void](`window.pageMark = location.href`),
			clickJS(`#pager a[rel=next]`),
			waitJS(`location.href !== window.pageMark && document.querySelector("#pager")`))
		t.Logf("page %d in %s", pages+1, time.Since(start).Round(time.Millisecond))
	}
	if seen != total || pages != (total+49)/50 {
		t.Errorf("paged through %d executions in %d pages, want %d in %d", seen, pages, total, (total+49)/50)
	}

	// Pause every task of host ops from the task list, then find the one
	// event that says so.
	within(t, ctx, "pause every task of host ops",
		chromedp.Navigate(base+"/tasks?host=ops"),
		waitJS(`document.querySelectorAll("#tasks tbody tr").length === 20`),
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		clickJS(`#bulk button[data-action="Pause all"]`),
		waitJS(`location.pathname === "/tasks" && document.querySelector("#tasks")`))
	kafkatest.Eventually(t, 60*time.Second, "the bulk pause's action among the audit's", func() bool {
		within(t, ctx, "the audit page", chromedp.Navigate(base+"/audit"), waitJS(`document.querySelector("#audit-filters")`))
		return eval[bool](t, ctx, `!!document.querySelector('#audit-filters option[value="tasks.pause"]')`)
	})
	within(t, ctx, "the bulk pause's one event",
		fillAndSubmit(`#audit-filters`, map[string]string{"action": "tasks.pause"}),
		waitJS(`location.search === "?action=tasks.pause" && document.querySelector("#audit")`))
	event := eval[[][]string](t, ctx, `[...document.querySelectorAll("#audit tbody tr")].map(r => [...r.cells].map(c => c.textContent.trim()))`)
	if len(event) != 1 || event[0][1] != "otto" || event[0][3] != "/tasks?host=ops" || event[0][4] != "ok" ||
		!strings.HasPrefix(event[0][5], "20 tasks selected, 20 sent") {
		t.Fatalf("events of action tasks.pause: %q; want otto's one, of /tasks?host=ops, 20 sent", event)
	}
	kafkatest.Eventually(t, 60*time.Second, "each task's event, from the bulk event", func() bool {
		within(t, ctx, "each task's event",
			chromedp.Navigate(base+"/audit?action=tasks.pause"),
			clickJS(`#audit a.per-task`),
			waitJS(`location.search.includes("action=task.paused") && document.querySelector("#pager")`))
		return pageTotal(t, ctx) == 20
	})
	screenshot(t, ctx, "audit-bulk")

	// This browser is in Japan: times show there once asked, on every
	// page after.
	if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"}); err != nil {
		t.Fatal(err)
	}
	firstTime := `document.querySelector("#executions tbody tr td:nth-child(3) time")`
	within(t, ctx, "the failed executions in UTC",
		chromedp.Navigate(base+"/executions?status=FAILED&host="+host),
		waitJS(firstTime+` && `+firstTime+`.textContent.endsWith("Z")`))
	instant := eval[string](t, ctx, firstTime+`.getAttribute("datetime")`)
	within(t, ctx, "times in the browser's zone",
		waitJS(`((s) => s ? (s.value = "local", s.dispatchEvent(new Event("change")), true) : false)(document.querySelector("#tz-select"))`),
		waitJS(`document.querySelector("#tz-label") && document.querySelector("#tz-label").textContent.includes("Asia/Tokyo")`))
	shownAt := eval[string](t, ctx, firstTime+`.textContent`)
	at, err := time.Parse(time.RFC3339, shownAt)
	if want, _ := time.Parse(time.RFC3339, instant); err != nil || !strings.HasSuffix(shownAt, "+09:00") || !at.Equal(want) {
		t.Errorf("the first fire shows as %q in the browser's zone; want %s at +09:00", shownAt, instant)
	}
	within(t, ctx, "the dashboard in the browser's zone too",
		chromedp.Navigate(base+"/"),
		waitJS(`document.querySelector("#executions time") && document.querySelector("#executions time").textContent.endsWith("+09:00")`))
}

// checkGlance checks the dashboard's timeline by by (host or topic) and
// its charts of the last hours, as the open page shows them, against the
// API: the figures in words, the charts titled and described.
func checkGlance(t *testing.T, ctx context.Context, in *instance, by string) {
	t.Helper()
	type timeline struct {
		ComputedAt time.Time `json:"computedAt"`
		Tasks      int       `json:"tasks"`
		Fires      int       `json:"fires"`
		Busiest    struct {
			At     time.Time `json:"at"`
			Groups []struct {
				Name string `json:"name"`
			} `json:"groups"`
		} `json:"busiest"`
		Groups []struct {
			Name string `json:"name"`
		} `json:"groups"`
	}
	// The page and the API must show the same computation: it is made
	// again every minute, and after changes.
	var tl timeline
	var summary string
	kafkatest.Eventually(t, 3*time.Minute, "the dashboard and /api/timeline showing the same computation", func() bool {
		if code, body := in.call("GET", "/api/timeline?by="+by, "vera", ""); code != 200 || json.Unmarshal([]byte(body), &tl) != nil {
			t.Fatalf("/api/timeline?by=%s: %d %s", by, code, body)
		}
		shown := eval[string](t, ctx, `((e) => e ? e.getAttribute("datetime") : "")(document.querySelector("#timeline-computed time"))`)
		summary = strings.ReplaceAll(eval[string](t, ctx, `document.querySelector("#timeline-summary").textContent`), ",", "")
		at, err := time.Parse(time.RFC3339, shown)
		return err == nil && at.Equal(tl.ComputedAt.Truncate(time.Second))
	})
	for _, want := range []string{
		strconv.Itoa(tl.Fires) + " fires of " + strconv.Itoa(tl.Tasks) + " tasks in the next 24 hours",
		"Busiest minute " + tl.Busiest.At.UTC().Format("15:04") + " UTC: ",
		"(" + by + " " + tl.Busiest.Groups[0].Name + ": ",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("by %s the timeline says %q; want %q in it", by, summary, want)
		}
	}
	if desc := strings.ReplaceAll(eval[string](t, ctx, `document.querySelector("#timeline-desc").textContent`), ",", ""); desc != summary {
		t.Errorf("by %s the timeline's chart is described as %q, and says %q beside it", by, desc, summary)
	}
	for _, id := range []string{"timeline", "chart-fires", "chart-failures", "chart-lateness"} {
		title := eval[string](t, ctx, `((s) => s && s.getAttribute("role") === "img" ? s.querySelector("title").textContent : "")(document.querySelector("#`+id+` svg"))`)
		desc := eval[string](t, ctx, `((s) => s ? s.querySelector("desc").textContent : "")(document.querySelector("#`+id+` svg"))`)
		if title == "" || desc == "" {
			t.Errorf("by %s the chart %s has title %q and description %q", by, id, title, desc)
		}
	}
	if rows := eval[int](t, ctx, `document.querySelectorAll("#timeline svg g.row").length`); rows < 1+min(len(tl.Groups), 8) {
		t.Errorf("by %s the timeline draws %d rows for %d %ss", by, rows, len(tl.Groups), by)
	}
	words := eval[string](t, ctx, `document.querySelector("#activity-summary").textContent`)
	if !strings.Contains(words, " executions, ") || !strings.Contains(words, " failed (") || !strings.Contains(words, "Lateness: median ") {
		t.Errorf("the charts of the last hours say %q", words)
	}
	answered := eval[float64](t, ctx, `((n) => n.responseEnd - n.requestStart)(performance.getEntriesByType("navigation")[0])`)
	t.Logf("the dashboard by %s answered in %.0f ms: %s", by, answered, summary)
}
