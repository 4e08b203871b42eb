package main

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// dryRun posts content as name for a dry run, as user, and returns the
// page it answers.
func (in *instance) dryRun(user, name, content string) string {
	in.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write([]byte(content))
	mw.WriteField("dryrun", "1")
	mw.Close()
	code, page := in.call("POST", "/upload", user, "", "Content-Type", mw.FormDataContentType(), "body", body.String())
	if code != http.StatusOK {
		in.t.Fatalf("dry run of %s = %d\n%s", name, code, page)
	}
	return page
}

// nodeText is the text of n and all it holds, as a reader sees it: no
// tags (a <wbr> break point splits no word), entities decoded.
func nodeText(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(nodeText(c))
	}
	return b.String()
}

// pageText is the text of an HTML page.
func pageText(t *testing.T, page string) string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return nodeText(doc)
}

// tableRows is the text of each cell of the body rows of the table with
// this id in page, keyed by the text of the row's column key.
func tableRows(t *testing.T, page, id string, key int) map[string][]string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	text := nodeText
	out := map[string][]string{}
	var walk func(n *html.Node, in bool)
	walk = func(n *html.Node, in bool) {
		if n.Type == html.ElementNode && n.Data == "table" {
			for _, a := range n.Attr {
				in = in || a.Key == "id" && a.Val == id
			}
		}
		if in && n.Type == html.ElementNode && n.Data == "tr" && n.Parent.Data == "tbody" {
			var cells []string
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && c.Data == "td" {
					cells = append(cells, strings.Join(strings.Fields(text(c)), " "))
				}
			}
			if key < len(cells) {
				out[cells[key]] = cells
			}
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, in)
		}
	}
	walk(doc, false)
	return out
}

// TestDryRunTellsAddedChangedAndUnchangedRowsApart dry-runs a new version
// of a job list against what runs now: each row says what it would do to
// its task (add, change, delete, leave it as it is), and nothing says an
// unchanged row would be created or changed.
func TestDryRunTellsAddedChangedAndUnchangedRowsApart(t *testing.T) {
	in := startInstanceEnv(t, consoleUsers(t))
	const header = "host,name,action,topic,timeUnit,time\n"
	in.drop("jobs.csv", header+"acme,keep,INSERT,batch-jobs,HOURS,1\nacme,change,INSERT,batch-jobs,HOURS,1\nacme,gone,INSERT,batch-jobs,HOURS,1\n")
	in.waitFile("archive", "jobs.csv")
	kafkatest.Eventually(t, 60*time.Second, "the three tasks in the console", func() bool {
		var tasks []json.RawMessage
		_, body := in.call("GET", "/api/tasks?host=acme&status=live", "vera", "")
		return json.Unmarshal([]byte(body), &tasks) == nil && len(tasks) == 3
	})

	page := in.dryRun("otto", "jobs.csv", header+
		"acme,keep,INSERT,batch-jobs,HOURS,1\n"+
		"acme,change,INSERT,batch-jobs,HOURS,2\n"+
		"acme,new,INSERT,batch-jobs,MINUTES,5\n"+
		"acme,gone,DELETE,,,\n")
	if strings.Contains(page, "created or changed") {
		t.Error("the dry run says its rows would be created or changed")
	}
	if want := "1 added, 1 changed, 1 removed, 1 unchanged"; !strings.Contains(page, want) {
		t.Errorf("the dry run does not say %q", want)
	}
	rows := tableRows(t, page, "preview", 0)
	for row, want := range map[string]string{"2": "unchanged", "3": "changes it", "4": "adds it", "5": "deletes it"} {
		if r := rows[row]; len(r) < 3 || r[2] != want {
			t.Errorf("row %s of the dry run = %q, want its effect %q", row, r, want)
		}
	}
}
