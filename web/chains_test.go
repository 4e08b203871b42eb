package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/net/html"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetest"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web"
)

// chains fills a store with storetest.Chains, through its apply path;
// records added to the feed after it follow its records.
func chains(t *testing.T) *feed {
	t.Helper()
	f := newFeed(t, now)
	if err := (storetest.Chains{Now: now}).Fill(context.Background(), f.st); err != nil {
		t.Fatal(err)
	}
	offsets, err := f.st.Offsets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for topic, parts := range offsets {
		f.next[topic] = parts[0]
	}
	return f
}

// serveWith starts the console over f's store with cfg, at f's time.
func serveWith(t *testing.T, f *feed, cfg web.Config) *httptest.Server {
	t.Helper()
	cfg.Clock = clockwork.NewFakeClockAt(f.now)
	srv, err := web.New(cfg, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func byClass(doc *html.Node, class string) []*html.Node {
	return findAll(doc, func(n *html.Node) bool {
		return n.Type == html.ElementNode && slices.Contains(strings.Fields(attr(n, "class")), class)
	})
}

// TestHeldChainSaysWhereItStoppedAndWhy: the page of a task held by its
// predecessor's failure says why, names the predecessor and its failed
// run, and offers an operator Release, Skip this run and Re-run of the
// predecessor, each a form to the API; a read-only console offers none.
// The tasks it follows and those that follow it are listed with their
// states.
func TestHeldChainSaysWhereItStoppedAndWhy(t *testing.T) {
	f := chains(t)
	ts := serveWith(t, f, web.Config{Commander: &commander{}})
	doc := page(t, ts.URL+"/tasks/etl/load")

	if got := text(byID(t, doc, "chain-held-reason")); got != storetest.ChainsHeld {
		t.Errorf("held reason %q, want %q", got, storetest.ChainsHeld)
	}
	stopped := byClass(doc, "chain-stopped")
	if len(stopped) != 1 || attr(stopped[0], "data-task") != "etl/transform" {
		t.Fatalf("stopped at %d places, want etl/transform alone", len(stopped))
	}
	if got := linkTo(t, stopped[0], "etl/transform"); got != "/tasks/etl/transform" {
		t.Errorf("the predecessor links %q", got)
	}
	if got := attr(byClass(stopped[0], "execution")[0], "href"); got != "/executions/"+storetest.ChainsTransform {
		t.Errorf("its failed run links %q", got)
	}
	for id, want := range map[string]string{"chain-release": "/api/tasks/etl/load/release", "chain-skip": "/api/tasks/etl/load/skip",
		"chain-rerun-1": "/api/tasks/etl/transform/trigger"} {
		form := byID(t, doc, id)
		if attr(form, "action") != want || attr(form, "method") != "post" || attr(form, "data-confirm") == "" {
			t.Errorf("%s: action %q method %q, want a confirmed post to %s", id, attr(form, "action"), attr(form, "method"), want)
		}
	}
	if got := text(byID(t, doc, "chain-rerun-1")); got != "Re-run etl/transform" {
		t.Errorf("re-run button says %q", got)
	}

	preds, _ := rows(t, doc, "task-predecessors")
	if len(preds) != 1 || preds[0][0] != "etl/transform" || preds[0][1] != "failed" || !strings.HasPrefix(preds[0][3], "FAILED") ||
		!strings.Contains(preds[0][3], "not spent yet") {
		t.Errorf("predecessors %q, want transform, failed, its run counted and not spent", preds)
	}
	succs, trs := rows(t, doc, "task-successors")
	if len(succs) != 1 || succs[0][0] != "etl/report" || succs[0][1] != "success" || succs[0][2] != "not run yet" || succs[0][3] != "none yet" {
		t.Errorf("successors %q, want report, waiting for success, not run yet", succs)
	}
	if st := findAll(trs[0], func(n *html.Node) bool { return attr(n, "data-state") != "" }); len(st) != 1 || attr(st[0], "data-state") != "not-run" {
		t.Errorf("report's state is not said in a data-state of not-run")
	}
	if got := text(byID(t, doc, "task-host")); got != "etl" || linkTo(t, byID(t, doc, "task-host"), "etl") != "/hosts/etl" {
		t.Errorf("the host %q links nowhere", got)
	}

	// Read-only: the chain still says why; nothing to click.
	doc = page(t, serveWith(t, f, web.Config{}).URL+"/tasks/etl/load")
	byID(t, doc, "chain-held")
	if n := findAll(doc, func(n *html.Node) bool { return attr(n, "id") == "chain-actions" }); len(n) != 0 {
		t.Error("a read-only console offers the chain's actions")
	}
	// A task that is in no chain says nothing of chains.
	doc = page(t, serveWith(t, history(t), web.Config{}).URL+"/tasks/acme/nightly")
	if n := findAll(doc, func(n *html.Node) bool { return attr(n, "id") == "task-chain" }); len(n) != 0 {
		t.Error("a task in no chain has a chain section")
	}
}

// TestChainIsLateWhileAPredecessorIsOverdue: report follows
// crm/export, whose run has no final status past its timeout: its page
// says it is late and why, and its box in the graph says so too.
func TestChainIsLateWhileAPredecessorIsOverdue(t *testing.T) {
	ts := serveWith(t, chains(t), web.Config{})
	doc := page(t, ts.URL+"/tasks/etl/report")
	late := text(byID(t, doc, "chain-late"))
	if !strings.HasPrefix(late, "late ") || !strings.Contains(late, "crm/export's run is overdue: FIRED, no final status past its 15m0s timeout") {
		t.Errorf("late says %q", late)
	}
	if got := text(byID(t, doc, "chain-waits-for")); got != "It fires once every one of them ended in success, 10m later." {
		t.Errorf("waits for %q", got)
	}
	// Its predecessor's page: the task that follows it is late.
	doc = page(t, ts.URL+"/tasks/crm/export")
	succs, _ := rows(t, doc, "task-successors")
	if len(succs) != 1 || succs[0][2] != "not run yet, late" {
		t.Errorf("crm/export's successors %q, want report not run yet, late", succs)
	}
	if n := findAll(doc, func(n *html.Node) bool { return attr(n, "id") == "chain-late" }); len(n) != 0 {
		t.Error("crm/export follows nothing, yet is late")
	}
}

// drawnNode is a node of a graph as drawn: its state and label,
// whether late and outside, the column it stands in and its link.
type drawnNode struct {
	state, label  string
	late, outside bool
	x             string
	href          string
}

// graphNodes returns the nodes of the graph on doc by task.
func graphNodes(t *testing.T, doc *html.Node) map[string]drawnNode {
	t.Helper()
	fig := byID(t, doc, "chain-graph")
	out := map[string]drawnNode{}
	for _, n := range byClass(fig, "chain-node") {
		rect := findAll(n, element("rect"))
		labels := byClass(n, "label")
		if len(rect) != 1 || len(labels) != 1 || attr(n, "aria-label") == "" {
			t.Errorf("node %s: %d boxes, %d labels, aria-label %q", attr(n, "data-task"), len(rect), len(labels), attr(n, "aria-label"))
			continue
		}
		out[attr(n, "data-task")] = drawnNode{state: attr(n, "data-state"), label: text(labels[0]), late: attr(n, "data-late") != "",
			outside: attr(n, "data-outside") != "", x: attr(rect[0], "x"), href: attr(n, "href")}
	}
	return out
}

// TestFileAndHostDrawTheirChains: a file's page and a host's draw the
// chains of their tasks, left to right by depth, each task's box
// coloured and labelled by its state and linking to its page, the tasks
// outside them dashed; the arrows run from each task to those that
// follow it.
func TestFileAndHostDrawTheirChains(t *testing.T) {
	ts := serveWith(t, chains(t), web.Config{})
	for _, path := range []string{"/files/" + storetest.ChainsBatch, "/hosts/etl"} {
		doc := page(t, ts.URL+path)
		onlyStaticScripts(t, doc)
		nodes := graphNodes(t, doc)
		want := map[string]drawnNode{
			"etl/extract":   {state: "success", label: "success", x: "12", href: "/tasks/etl/extract"},
			"etl/transform": {state: "failed", label: "failed", x: "278", href: "/tasks/etl/transform"},
			"etl/load":      {state: "held", label: "held", x: "544", href: "/tasks/etl/load"},
			"etl/cleanup":   {state: "success", label: "success", x: "544", href: "/tasks/etl/cleanup"},
			"etl/report":    {state: "not-run", label: "not run yet, late", late: true, x: "810", href: "/tasks/etl/report"},
			"crm/export":    {state: "overdue", label: "overdue", outside: true, x: "544", href: "/tasks/crm/export"},
		}
		if len(nodes) != len(want) {
			t.Errorf("%s: %d nodes drawn: %v", path, len(nodes), nodes)
		}
		for key, w := range want {
			if got, ok := nodes[key]; !ok || got != w {
				t.Errorf("%s: node %s = %+v, want %+v", path, key, got, w)
			}
		}
		var edges []string
		for _, e := range byClass(byID(t, doc, "chain-graph"), "edge") {
			edges = append(edges, attr(e, "data-pred")+" > "+attr(e, "data-succ")+" "+attr(e, "class"))
		}
		slices.Sort(edges)
		wantEdges := []string{"crm/export > etl/report edge on-success", "etl/extract > etl/transform edge on-success",
			"etl/load > etl/report edge on-success", "etl/transform > etl/cleanup edge on-failure", "etl/transform > etl/load edge on-success"}
		if !slices.Equal(edges, wantEdges) {
			t.Errorf("%s: edges\n%s\nwant\n%s", path, strings.Join(edges, "\n"), strings.Join(wantEdges, "\n"))
		}
		if got := attr(findAll(byID(t, doc, "chain-graph"), element("svg"))[0], "aria-labelledby"); got != "chain-graph-title chain-graph-desc" {
			t.Errorf("%s: the graph is labelled by %q", path, got)
		}
	}
	// The other host: its task, and the one outside that follows it.
	nodes := graphNodes(t, page(t, ts.URL+"/hosts/crm"))
	if len(nodes) != 2 || nodes["crm/export"].outside || !nodes["etl/report"].outside {
		t.Errorf("crm's graph: %+v", nodes)
	}
	if resp, _ := get(t, ts.URL+"/hosts/nothing.example"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the page of a host with no task: %s", resp.Status)
	}
	// A file without chains draws none.
	doc := page(t, serveWith(t, history(t), web.Config{}).URL+"/files/"+payrollID)
	if n := findAll(doc, func(n *html.Node) bool { return attr(n, "id") == "chain-graph" }); len(n) != 0 {
		t.Error("a file without chains draws a graph")
	}
}

// TestGraphSaysWhatItLeftOut: of a host with more chained tasks than a
// graph draws, the first by name are drawn, the next linked to them
// outside, and the caption says how many were left out.
func TestGraphSaysWhatItLeftOut(t *testing.T) {
	f := newFeed(t, now)
	for i := range 60 {
		d := task.Definition{Host: "long", Name: fmt.Sprintf("step-%02d", i), Action: task.Insert, Topic: "jobs", Cron: "0 2 * * *"}
		if i > 0 {
			d.Cron, d.After = "", []string{fmt.Sprintf("step-%02d", i-1)}
		}
		f.add(topics.State, d.Key(), record.State{Definition: d, Anchor: ms(now), UpdatedAt: ms(now)})
	}
	doc := page(t, serveWith(t, f, web.Config{}).URL+"/hosts/long")
	nodes := graphNodes(t, doc)
	if len(nodes) != 51 || !nodes["long/step-50"].outside || nodes["long/step-49"].outside {
		t.Errorf("%d nodes drawn, step-50 outside %v; want 50 and step-50 linked outside", len(nodes), nodes["long/step-50"].outside)
	}
	if got := text(byID(t, doc, "chain-graph-caption")); !strings.Contains(got, "The first 50 of 60 chained tasks by name are drawn; 10 are left out.") {
		t.Errorf("caption %q", got)
	}
	if x := nodes["long/step-49"].x; x != fmt.Sprint(12+49*266) {
		t.Errorf("step-49 stands at x %s, want the 50th column", x)
	}
}

// TestExecutionShowsItsRunAndReleases: an execution's page says which
// attempt of its run it is, lists the run's attempts, what released it
// and what its run released, each linking its page.
func TestExecutionShowsItsRunAndReleases(t *testing.T) {
	ts := serveWith(t, chains(t), web.Config{})
	doc := page(t, ts.URL+"/executions/"+storetest.ChainsExtract2)
	if got := text(byID(t, doc, "execution-attempt")); got != "2 of 3" {
		t.Errorf("attempt %q, want 2 of 3", got)
	}
	attempts, _ := rows(t, doc, "run-attempts-table")
	if len(attempts) != 2 || attempts[0][1] != "1" || attempts[0][3] != "FAILED" || attempts[1][1] != "2" || attempts[1][3] != "SUCCESS" ||
		!strings.Contains(attempts[1][2], "this one") {
		t.Errorf("attempts %q", attempts)
	}
	if got := linkTo(t, byID(t, doc, "run-attempts-table"), storetest.ChainsExtract1); got != "/executions/"+storetest.ChainsExtract1 {
		t.Errorf("the first attempt links %q", got)
	}
	released, _ := rows(t, doc, "released-table")
	if len(released) != 1 || released[0][0] != "etl/transform" || released[0][2] != storetest.ChainsTransform {
		t.Errorf("released %q, want transform's fire", released)
	}

	doc = page(t, ts.URL+"/executions/"+storetest.ChainsTransform)
	by, _ := rows(t, doc, "released-by-table")
	if len(by) != 1 || by[0][0] != "etl/extract" || by[0][1] != "2" || by[0][2] != storetest.ChainsExtract2 {
		t.Errorf("released by %q, want extract's run as its second attempt", by)
	}
	released, _ = rows(t, doc, "released-table")
	if len(released) != 1 || released[0][0] != "etl/cleanup" {
		t.Errorf("transform's run released %q, want cleanup", released)
	}
	if n := findAll(doc, func(n *html.Node) bool { return attr(n, "id") == "run-attempts" }); len(n) != 0 {
		t.Error("a run of one attempt allowed one lists its attempts")
	}
}

// TestChainActionsAreCommandsOfOperators: Release, Skip this run and
// Re-run, posted as the page's forms, send RELEASE and SKIP for the held
// task and TRIGGER for its predecessor, and come back to the page; a
// viewer is refused, and so is a cross-origin post; release and skip are
// for one chained task only.
func TestChainActionsAreCommandsOfOperators(t *testing.T) {
	cmd := &commander{}
	f := chains(t)
	cfg := web.Config{Users: users(t, bcrypt.MinCost), Commander: cmd, Clock: clockwork.NewFakeClockAt(now)}
	srv, err := web.New(cfg, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	post := func(user, path string, header map[string]string) *http.Response {
		body := url.Values{"back": {"/tasks/etl/load"}}.Encode()
		req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(user, backwards(user))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, _ := send(t, nil, req)
		return resp
	}
	for _, path := range []string{"/api/tasks/etl/load/release", "/api/tasks/etl/load/skip", "/api/tasks/etl/transform/trigger"} {
		if resp := post("vera", path, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("a viewer's %s: %s", path, resp.Status)
		}
		if resp := post("otto", path, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("a cross-origin %s: %s", path, resp.Status)
		}
		if resp := post("otto", path, nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/tasks/etl/load" {
			t.Errorf("an operator's %s: %s to %q, want 303 back to the page", path, resp.Status, resp.Header.Get("Location"))
		}
	}
	var sent []string
	for _, d := range cmd.sent {
		sent = append(sent, string(d.Action)+" "+d.Key())
	}
	if want := []string{"RELEASE etl/load", "SKIP etl/load", "TRIGGER etl/transform"}; !slices.Equal(sent, want) {
		t.Errorf("sent %q, want %q", sent, want)
	}
	if n := len(cmd.audited(record.ActionAccessDenied)); n != 6 {
		t.Errorf("%d refusals audited, want 6", n)
	}
	// Only a chained task is released or skipped, one at a time.
	for path, status := range map[string]int{"/api/tasks/etl/extract/release": http.StatusConflict, "/api/tasks/etl/extract/skip": http.StatusConflict,
		"/api/tasks/release?host=etl": http.StatusNotFound, "/api/tasks/etl/nothing/release": http.StatusNotFound} {
		req := basic("POST", ts.URL+path, "otto", "otto")
		req.SetBasicAuth("otto", backwards("otto"))
		resp, body := send(t, nil, req)
		if resp.StatusCode != status {
			t.Errorf("POST %s: %s %s, want %d", path, resp.Status, body, status)
		}
	}
	// The answer says what was sent, as trigger's does.
	req := basic("POST", ts.URL+"/api/tasks/etl/load/release", "otto", backwards("otto"))
	resp, body := send(t, nil, req)
	var answer struct {
		Action string
		Sent   int
		Tasks  []string
	}
	if json.Unmarshal([]byte(body), &answer) != nil || resp.StatusCode != http.StatusOK || answer.Action != "release" || answer.Sent != 1 ||
		!slices.Equal(answer.Tasks, []string{"etl/load"}) {
		t.Errorf("release answered %s %s", resp.Status, body)
	}
}

// TestAPIAnswersChainsAndRuns: a task's answer carries its chain state
// beside its definition's after, on and delay; an execution's its
// attempt, run, the runs that released it and what its run released.
func TestAPIAnswersChainsAndRuns(t *testing.T) {
	ts := serveWith(t, chains(t), web.Config{})
	var load struct {
		Definition string
		Chain      *storetype.Chain
	}
	_, body := get(t, ts.URL+"/api/tasks/etl/load")
	if err := json.Unmarshal([]byte(body), &load); err != nil {
		t.Fatal(err)
	}
	if load.Chain == nil || load.Chain.Held != storetest.ChainsHeld || len(load.Chain.Preds) != 1 || !load.Chain.Preds[0].Fresh {
		t.Errorf("load's chain: %s", body)
	}
	var def task.Definition
	if json.Unmarshal([]byte(load.Definition), &def) != nil || !slices.Equal(def.After, []string{"transform"}) {
		t.Errorf("load's definition: %s", load.Definition)
	}
	var execs []map[string]any
	_, body = get(t, ts.URL+"/api/executions?task=etl/extract&sort=oldest")
	if err := json.Unmarshal([]byte(body), &execs); err != nil {
		t.Fatal(err)
	}
	if len(execs) != 2 || execs[0]["attempt"] != 1.0 || execs[0]["run"] != nil || execs[1]["attempt"] != 2.0 ||
		execs[1]["run"] != storetest.ChainsExtract1 || fmt.Sprint(execs[1]["released"]) != "["+storetest.ChainsTransform+"]" {
		t.Errorf("extract's executions: %s", body)
	}
	_, body = get(t, ts.URL+"/api/executions?task=etl/cleanup")
	if !strings.Contains(body, `"after": [`+"\n"+`      "`+storetest.ChainsTransform+`"`) {
		t.Errorf("cleanup's execution does not say what released it: %s", body)
	}
}

// TestTaskListSaysAChainIsHeld: the task list says a held chain's reason
// under its state, and a list of one host's tasks leads to its page.
func TestTaskListSaysAChainIsHeld(t *testing.T) {
	doc := page(t, serveWith(t, chains(t), web.Config{}).URL+"/tasks?host=etl")
	row, tr := rowWith(t, doc, "tasks", "etl/load")
	if len(byClass(tr, "chain-held-note")) != 1 || !strings.Contains(row[2], "chain held: "+storetest.ChainsHeld) {
		t.Errorf("load's row %q", row)
	}
	for _, other := range []string{"etl/extract", "etl/report"} {
		if _, tr := rowWith(t, doc, "tasks", other); len(byClass(tr, "chain-held-note")) != 0 {
			t.Errorf("%s is said held", other)
		}
	}
	if got := linkTo(t, byID(t, doc, "host-link"), "etl's page, with its chains"); got != "/hosts/etl" {
		t.Errorf("host link %q", got)
	}
}
