package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// browser starts headless Chromium for one test, in its own profile.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		}
		t.Skip("chromium is not installed")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// within runs steps with a deadline, failing the test with what was
// being waited for.
func within(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.body ? document.body.innerText : "")`))
		t.Fatalf("%s: %v\npage: %s", what, err, page)
	}
}

// waitJS waits until a JavaScript expression is truthy, across page
// loads: an evaluation that fails while the page navigates is retried. It
// waits for the page to be parsed whole, too: an element found while the
// page still loads may sit above rows not yet there.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		var last error
		for {
			ok, err := chromedp.Evaluate[bool](`document.readyState !== "loading" && Boolean(`+expr+")")(ctx, t)
			if err == nil && ok {
				return nil
			}
			if err != nil {
				last = err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for %s (last error %v): %w", expr, last, ctx.Err())
			case <-tick.C:
			}
		}
	})
}

// clickJS clicks the element sel selects once there is one. The click is
// one step in the page, so a live refresh cannot swap the element away
// between finding and clicking it.
func clickJS(sel string) chromedp.Action[chromedp.Void] {
	return waitJS(`((b) => b ? (b.click(), true) : false)(document.querySelector(` + js(sel) + `))`)
}

// eval evaluates an expression, awaiting a promise.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// screenshot saves the page as NAME.png under $JOBDROP_SCREENSHOTS, when
// set, for the README; a name may hold a folder, as "390/dashboard" does.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("JOBDROP_SCREENSHOTS")
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		// Relative to the repository, not to the package under test.
		dir = filepath.Join("..", "..", dir)
	}
	// A live refresh may be swapping the page: wait for it to have a
	// size, and try again while it has none.
	var shot []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		within(t, ctx, "a laid-out page", waitJS(`document.body && document.body.scrollWidth > 0 && document.body.scrollHeight > 0`))
		var err error
		if shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("screenshot %s: %v", name, err)
		}
	}
	small, err := smallPNG(shot, screenshotHeight)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, filepath.FromSlash(name)+".png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, small, 0o644); err != nil {
		t.Fatal(err)
	}
}

// screenshotHeight bounds a screenshot: a long list shows its first
// screens.
const screenshotHeight = 1600

// smallPNG cuts a screenshot to at most height pixels and draws it in its
// 256 most frequent colours, nearest for the others: a page of flat
// colours and text looks the same, in a tenth of the bytes or less.
func smallPNG(b []byte, height int) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	r := img.Bounds()
	r.Max.Y = min(r.Max.Y, r.Min.Y+height)
	rgba := image.NewRGBA(r)
	draw.Draw(rgba, r, img, r.Min, draw.Src)
	count := map[color.RGBA]int{}
	for i := 0; i < len(rgba.Pix); i += 4 {
		count[color.RGBA{rgba.Pix[i], rgba.Pix[i+1], rgba.Pix[i+2], 0xff}]++
	}
	colours := slices.SortedFunc(maps.Keys(count), func(a, b color.RGBA) int {
		return cmp.Or(count[b]-count[a], cmp.Compare(a.R, b.R), cmp.Compare(a.G, b.G), cmp.Compare(a.B, b.B))
	})
	palette := make(color.Palette, 0, 256)
	for _, c := range colours[:min(len(colours), 256)] {
		palette = append(palette, c)
	}
	out := image.NewPaletted(r, palette)
	draw.Draw(out, r, rgba, r.Min, draw.Src)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func login(t *testing.T, ctx context.Context, base, user, next string) {
	t.Helper()
	within(t, ctx, "log in as "+user,
		chromedp.Navigate(base+"/login?next="+next),
		chromedp.WaitVisible(chromedp.CSS("#login-user")),
		chromedp.SendKeys(chromedp.CSS("#login-user"), user),
		chromedp.SendKeys(chromedp.CSS("#login-password"), reverse(user)),
		chromedp.Click(chromedp.CSS("#login-submit")),
		waitJS(`document.getElementById("user") && document.getElementById("user").textContent.startsWith(`+js(user)+`)`),
	)
}

func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestConsoleInBrowser(t *testing.T) {
	// The watcher's default stability (two checks 500 ms apart): a file
	// must show on the page before it could possibly be taken.
	env := append(consoleUsers(t), "JOBDROP_WATCHER_STABLE_CHECKS=2", "JOBDROP_WATCHER_CHECK_INTERVAL=500ms")
	in := startInstanceEnv(t, env, kafkatest.Cluster(t)...)
	ctx := browser(t)
	base := in.console
	t0 := in.clock.Now()

	// A page asks for a login; the operator logs in and lands on Files.
	login(t, ctx, base, "otto", "/files")
	within(t, ctx, "the files page to go live",
		chromedp.WaitVisible(chromedp.CSS("main")),
		waitJS(`document.documentElement.getAttribute("data-live-connected") === "true"`),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`),
	)

	// A file dropped into the inbox shows up on the open page within a
	// second, no reload: received at first, injected once stable.
	dropped := time.Now()
	in.drop("dropped.csv", "host,name,topic,start,timeUnit,time\n"+
		"acme,every-minute,batch-jobs,"+t0.Add(time.Minute).UTC().Format(time.RFC3339)+",MINUTES,1\n"+
		"acme,<script>window.pwned=1</script>,batch-jobs,,HOURS,1\n"+
		"acme,one-shot,batch-jobs,"+t0.Add(time.Minute).UTC().Format(time.RFC3339)+",,\n")
	within(t, ctx, "dropped.csv to appear live on the files page",
		waitJS(`document.querySelector("#files") && document.querySelector("#files").textContent.includes("dropped.csv") && window.notReloaded === true`))
	if took := time.Since(dropped); took > time.Second {
		t.Errorf("dropped.csv appeared on the open files page %v after the drop, want within 1s", took.Round(time.Millisecond))
	} else {
		t.Logf("dropped.csv appeared on the open files page %v after the drop", took.Round(time.Millisecond))
	}
	within(t, ctx, "dropped.csv to turn injected live",
		waitJS(`[...document.querySelectorAll("#files tr")].some(r => r.textContent.includes("dropped.csv") && r.textContent.includes("injected")) && window.notReloaded === true`))

	// Upload through the browser: the file takes the watcher's path. It
	// creates definitions, which takes an admin.
	upload := filepath.Join(t.TempDir(), "uploaded.csv")
	if err := os.WriteFile(upload, []byte("host,name,topic,timeUnit,time\nbeta,hourly-report,reports,HOURS,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	login(t, ctx, base, "ada", "/upload")
	within(t, ctx, "upload uploaded.csv",
		chromedp.WaitVisible(chromedp.CSS("#upload-file")),
		chromedp.SetUploadFiles(chromedp.CSS("#upload-file"), []string{upload}),
		chromedp.Click(chromedp.CSS("#upload-submit")),
		waitJS(`location.pathname === "/files"`),
	)
	within(t, ctx, "uploaded.csv on the files page",
		waitJS(`document.querySelector("#files") && document.querySelector("#files").textContent.includes("uploaded.csv")`),
	)
	in.waitFile("archive", "uploaded.csv")
	login(t, ctx, base, "otto", "/tasks")

	// A task named with markup is shown as text and never runs.
	within(t, ctx, "the task list",
		chromedp.Navigate(base+"/tasks?host=acme"),
		waitJS(`document.querySelector("#tasks") && document.querySelector("#tasks").textContent.includes("<script>window.pwned=1</script>")`),
	)
	if pwned := eval[bool](t, ctx, `window.pwned === 1`); pwned {
		t.Fatal("a task name ran as a script")
	}

	// Pause a task from its page; the page shows it paused.
	within(t, ctx, "pause acme/every-minute",
		chromedp.Navigate(base+"/tasks/acme/every-minute"),
		clickJS(`#task-actions button[data-action="Pause"]`),
		waitJS(`document.querySelector("#task-status") && document.querySelector("#task-status").textContent.includes("paused")`),
	)

	// The dashboard counts fires as they happen.
	within(t, ctx, "resume acme/every-minute",
		clickJS(`#task-actions button[data-action="Resume"]`),
		waitJS(`document.querySelector("#task-status") && !document.querySelector("#task-status").textContent.includes("paused")`),
		chromedp.Navigate(base+"/"),
		waitJS(`document.documentElement.getAttribute("data-live-connected") === "true"`),
	)
	in.advanceTo(t0.Add(time.Minute))
	kafkatest.Eventually(t, 60*time.Second, "a fire to be recorded", func() bool {
		var execs []json.RawMessage
		_, body := in.call("GET", "/api/executions", "vera", "")
		return json.Unmarshal([]byte(body), &execs) == nil && len(execs) >= 1
	})
	within(t, ctx, "the fire count to go up live",
		waitJS(`Number(document.querySelector("#executions-total").textContent) >= 1`))

	// A worker's log lines show on the execution's open page as they come.
	var execs []struct{ FireID string }
	_, listed := in.call("GET", "/api/executions", "vera", "")
	if err := json.Unmarshal([]byte(listed), &execs); err != nil || len(execs) == 0 {
		t.Fatalf("executions: %v %s", err, listed)
	}
	within(t, ctx, "the execution's page to go live",
		chromedp.Navigate(base+"/executions/"+execs[0].FireID),
		waitJS(`document.querySelector("#log-empty") && document.documentElement.getAttribute("data-live-connected") === "true"`),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`),
	)
	for _, line := range []string{"fetched 120 orders", "page 2 <refused>"} {
		if code, body := in.call("POST", "/api/executions/"+execs[0].FireID+"/logs", "otto", `{"message":`+js(line)+`,"level":"error"}`); code != http.StatusOK {
			t.Fatalf("POST log line: %d %s", code, body)
		}
		within(t, ctx, "the log line "+line+" to appear live",
			waitJS(`document.querySelector("#log") && document.querySelector("#log").textContent.includes(`+js(line)+`) && window.notReloaded === true`))
	}

	// A browser page of another origin cannot post in the user's name.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><form method="post" action="%s/api/tasks/acme/every-minute/delete"><button id="go">go</button></form>`, base)
	}))
	defer evil.Close()
	within(t, ctx, "a cross-origin form post",
		chromedp.Navigate(evil.URL),
		waitJS(`document.forms.length === 1 && (setTimeout(() => document.forms[0].submit(), 0), true)`),
	)
	kafkatest.Eventually(t, 60*time.Second, "the cross-origin post to be refused and audited", func() bool {
		_, body := in.call("GET", "/api/audit?action=access.denied&actor=otto", "vera", "")
		return strings.Contains(body, "cross-origin") && strings.Contains(body, "/api/tasks/acme/every-minute/delete")
	})
	if code, body := in.call("GET", "/api/tasks/acme/every-minute", "vera", ""); code != http.StatusOK || !strings.Contains(body, `"status": "active"`) {
		t.Errorf("the cross-origin post changed the task: %d %s", code, body)
	}

	// The export holds the pause, the refusal and no live formula.
	login(t, ctx, base, "otto", "/audit")
	var body string
	kafkatest.Eventually(t, 60*time.Second, "the export to hold the pause and the refusal", func() bool {
		body = eval[string](t, ctx, `fetch("/audit/export.csv").then(r => r.text())`)
		return strings.Contains(body, "otto,task.paused,acme/every-minute") && strings.Contains(body, "access.denied")
	})

	// A viewer's write is refused and audited.
	login(t, ctx, base, "vera", "/")
	if code := eval[int](t, ctx, `fetch("/api/tasks/acme/every-minute/trigger", {method: "POST"}).then(r => r.status)`); code != http.StatusForbidden {
		t.Errorf("viewer trigger = %d, want 403", code)
	}
	kafkatest.Eventually(t, 60*time.Second, "the viewer's refusal in the audit trail", func() bool {
		_, body := in.call("GET", "/api/audit?actor=vera&action=access.denied", "vera", "")
		return strings.Contains(body, "/api/tasks/acme/every-minute/trigger")
	})
	within(t, ctx, "the upload page", chromedp.Navigate(base+"/upload"), chromedp.WaitVisible(chromedp.CSS("main")))
}

// TestConsoleInBrowserOnLoopbackDefaults drives the default setup, open
// on loopback with no users, behind its Host check and with short server
// timeouts: the console answers at localhost as at 127.0.0.1, a file is
// dry-run and uploaded, and an open page keeps its one live-update stream
// past the timeouts that close every other idle connection.
func TestConsoleInBrowserOnLoopbackDefaults(t *testing.T) {
	in := startInstanceEnv(t, []string{"JOBDROP_WATCHER_STABLE_CHECKS=2", "JOBDROP_WATCHER_CHECK_INTERVAL=500ms",
		"JOBDROP_CONSOLE_TIMEOUTS_READ=1s", "JOBDROP_CONSOLE_TIMEOUTS_WRITE=1s", "JOBDROP_CONSOLE_TIMEOUTS_IDLE=1s"})
	ctx := browser(t)
	addr := strings.TrimPrefix(in.console, "http://")
	_, port, _ := net.SplitHostPort(addr)
	base := "http://localhost:" + port

	within(t, ctx, "the files page at localhost to go live",
		chromedp.Navigate(base+"/files"),
		chromedp.WaitVisible(chromedp.CSS("main")),
		waitJS(`document.documentElement.getAttribute("data-live-connected") === "true"`),
		// A stream opened again would set it back to "true".
		chromedp.Evaluate[chromedp.Void](`document.documentElement.setAttribute("data-live-connected", "first stream"); window.notReloaded = true`),
	)
	// The server's timeouts pass: an idle connection of our own is
	// closed. The page's stream is older than that by now.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	closedWithin(t, "an idle connection", conn, 30*time.Second)
	in.drop("live.csv", "host,name,topic,timeUnit,time\nloop,live,batch-jobs,HOURS,1\n")
	within(t, ctx, "live.csv to show on the open page, through its first stream",
		waitJS(`[...document.querySelectorAll("#files tr")].some(r => r.textContent.includes("live.csv") && r.textContent.includes("injected"))`),
		waitJS(`window.notReloaded === true && document.documentElement.getAttribute("data-live-connected") === "first stream"`),
	)

	// A dry run, then the upload itself, as the local admin.
	upload := filepath.Join(t.TempDir(), "local.csv")
	if err := os.WriteFile(upload, []byte("host,name,topic,timeUnit,time\nloop,uploaded,batch-jobs,HOURS,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, "a dry run of local.csv",
		chromedp.Navigate(base+"/upload"),
		chromedp.WaitVisible(chromedp.CSS("#upload-file")),
		chromedp.SetUploadFiles(chromedp.CSS("#upload-file"), []string{upload}),
		clickJS("#upload-dryrun"),
		chromedp.Click(chromedp.CSS("#upload-submit")),
		waitJS(`document.querySelector("#upload-message") && document.querySelector("#upload-message").textContent.includes("1 added") && document.querySelector("#upload-message").textContent.includes("Nothing was injected")`),
		waitJS(`document.querySelector("#preview") && document.querySelector("#preview").textContent.includes("loop/uploaded")`),
	)
	within(t, ctx, "the upload of local.csv",
		// The dry run's answer is a new document: its message, found through
		// chromedp's own node tree, says that tree is the new one, so the
		// file input below is the answer's and not the page it replaced.
		chromedp.WaitVisible(chromedp.CSS("#upload-message")),
		chromedp.SetUploadFiles(chromedp.CSS("#upload-file"), []string{upload}),
		chromedp.Click(chromedp.CSS("#upload-submit")),
		waitJS(`location.pathname === "/files"`),
	)

	// The same console at 127.0.0.1: the task list, live too, shows the
	// uploaded task once it is recorded.
	within(t, ctx, "the uploaded task on the task list at 127.0.0.1",
		chromedp.Navigate(in.console+"/tasks?host=loop"),
		waitJS(`document.documentElement.getAttribute("data-live-connected") === "true"`),
		waitJS(`document.querySelector("#tasks") && document.querySelector("#tasks").textContent.includes("uploaded")`),
	)
}
