package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/net/html"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/web"
)

// The store is the console's source in production.
var _ web.Source = (*store.Store)(nil)

var topics = record.Topics{}.WithDefaults()

// feed applies records to the store through its own apply path, numbering
// them per partition as a broker would.
type feed struct {
	t    *testing.T
	st   *store.Store
	next map[string]int64
	now  time.Time
}

func (f *feed) add(topic string, key string, value any, headers ...kgo.RecordHeader) {
	f.t.Helper()
	r := &kgo.Record{Topic: topic, Key: []byte(key), Headers: headers, Timestamp: f.now}
	if value != nil {
		b, err := json.Marshal(value)
		if err != nil {
			f.t.Fatal(err)
		}
		r.Value = b
	}
	r.Offset = f.next[topic]
	f.next[topic]++
	skipped, err := f.st.Apply(context.Background(), topics, []*kgo.Record{r})
	if err != nil {
		f.t.Fatalf("apply: %v", err)
	}
	if len(skipped) > 0 {
		f.t.Fatalf("record skipped: %v", skipped)
	}
}

func newFeed(t *testing.T, now time.Time) *feed {
	st, err := store.Open(filepath.Join(t.TempDir(), "jobdrop.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &feed{t: t, st: st, next: make(map[string]int64), now: now}
}

// serve starts the console over the store with a fixed clock.
func serve(t *testing.T, f *feed) *httptest.Server {
	t.Helper()
	srv, err := web.New(web.Config{Clock: clockwork.NewFakeClockAt(f.now)}, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// page GETs a page that must answer 200 with HTML, and parses it.
func page(t *testing.T, url string) *html.Node {
	t.Helper()
	resp, body := get(t, url)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("GET %s: content type %q", url, ct)
	}
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return doc
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func element(tag string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == tag }
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func byID(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	found := findAll(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && attr(n, "id") == id })
	if len(found) != 1 {
		t.Fatalf("%d elements with id %q", len(found), id)
	}
	return found[0]
}

// text is what a person reads in n: its text, whitespace collapsed. A
// wbr, where a long word may fold, joins the text around it.
func text(n *html.Node) string {
	var b strings.Builder
	for _, t := range findAll(n, func(n *html.Node) bool {
		return n.Type == html.TextNode || n.Type == html.ElementNode && n.Data == "wbr"
	}) {
		if t.Type == html.ElementNode {
			joined := strings.TrimSuffix(b.String(), " ")
			b.Reset()
			b.WriteString(joined)
			continue
		}
		b.WriteString(t.Data)
		b.WriteString(" ")
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// rows returns the text of every cell of the body rows of the table with
// this id, and the rows themselves.
func rows(t *testing.T, doc *html.Node, id string) ([][]string, []*html.Node) {
	t.Helper()
	table := byID(t, doc, id)
	var cells [][]string
	var trs []*html.Node
	for _, body := range findAll(table, element("tbody")) {
		for _, tr := range findAll(body, element("tr")) {
			var row []string
			for _, td := range findAll(tr, element("td")) {
				row = append(row, text(td))
			}
			cells = append(cells, row)
			trs = append(trs, tr)
		}
	}
	return cells, trs
}

// rowWith returns the row whose first cell is first.
func rowWith(t *testing.T, doc *html.Node, table, first string) ([]string, *html.Node) {
	t.Helper()
	cells, trs := rows(t, doc, table)
	for i, r := range cells {
		if len(r) > 0 && r[0] == first {
			return r, trs[i]
		}
	}
	t.Fatalf("table %s has no row for %q; rows: %q", table, first, cells)
	return nil, nil
}

func linkTo(t *testing.T, n *html.Node, label string) string {
	t.Helper()
	for _, a := range findAll(n, element("a")) {
		if text(a) == label {
			return attr(a, "href")
		}
	}
	t.Fatalf("no link %q in %q", label, text(n))
	return ""
}

// onlyStaticScripts fails unless every script element loads a file from
// /static/ and holds no code of its own: the page runs nothing the data
// put there.
func onlyStaticScripts(t *testing.T, doc *html.Node) {
	t.Helper()
	for _, n := range findAll(doc, element("script")) {
		src := ""
		for _, a := range n.Attr {
			if a.Key == "src" {
				src = a.Val
			}
		}
		if !strings.HasPrefix(src, "/static/") || n.FirstChild != nil {
			t.Errorf("script element with src %q and content %v", src, n.FirstChild != nil)
		}
	}
}
