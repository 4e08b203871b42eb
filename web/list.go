package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// Every list (executions, tasks, files, audit) reads its filters, order
// and page from its URL, the same way in the pages and the API: a URL is
// the list as it was seen, to share or bookmark. A page is a cursor into
// the list (?cursor=, from the page before), so it costs the same at the
// millionth row as at the first.

// listParams are the URL parameters of every list besides its filters.
var listParams = []string{"sort", "cursor", "limit"}

// Filter parameters of each list, in the order a URL shows them.
var (
	executionParams = []string{"status", "host", "name", "task", "topic", "file", "from", "to"}
	taskParams      = []string{"status", "fault", "host", "name", "topic", "file", "from", "to"}
	fileParams      = []string{"status", "folder", "name", "from", "to"}
	auditParams     = []string{"from", "to", "actor", "action", "object", "outcome"}
)

// pageParams reads ?sort=, ?cursor= and ?limit=; the limit defaults to the
// configured list limit and is at most 1000.
func (s *Server) pageParams(q url.Values) (sort, cursor string, limit int, err error) {
	limit = s.cfg.ListLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return "", "", 0, fmt.Errorf("limit %q: want a positive whole number", v)
		}
		limit = min(n, maxListLimit)
	}
	return q.Get("sort"), q.Get("cursor"), limit, nil
}

// timeParam reads a time of a list's filter: RFC 3339, YYYY-MM-DD,
// YYYY-MM-DDTHH:MM[:SS] (UTC), or a signed duration from now ("-1h",
// "-30m", "+24h"). A day as the end of a range includes that day.
func timeParam(q url.Values, name string, end bool, now time.Time) (time.Time, error) {
	v := strings.TrimSpace(q.Get(name))
	if v == "" {
		return time.Time{}, nil
	}
	if v[0] == '-' || v[0] == '+' {
		if d, err := time.ParseDuration(v); err == nil {
			return now.Add(d).UTC(), nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	if d, err := time.Parse("2006-01-02", v); err == nil {
		if end {
			d = d.AddDate(0, 0, 1)
		}
		return d, nil
	}
	return time.Time{}, fmt.Errorf("%s %q: want RFC 3339, YYYY-MM-DD, YYYY-MM-DDTHH:MM or a duration from now such as -1h", name, v)
}

// timeRange reads ?from= and ?to=.
func timeRange(q url.Values, now time.Time) (from, to time.Time, err error) {
	if from, err = timeParam(q, "from", false, now); err != nil {
		return
	}
	to, err = timeParam(q, "to", true, now)
	return
}

// oneOf checks a filter's value against the values it may have.
func oneOf(name, v string, values ...string) error {
	if v == "" || slices.Contains(values, v) {
		return nil
	}
	return fmt.Errorf("%s %q: want %s", name, v, orList(values))
}

// orList says "a, b or c".
func orList(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// executionFilter reads the executions list's filters from its URL.
func (s *Server) executionFilter(q url.Values) (storetype.ExecutionFilter, error) {
	f := storetype.ExecutionFilter{Status: strings.ToUpper(q.Get("status")), Host: q.Get("host"), Name: q.Get("name"),
		Task: q.Get("task"), Topic: q.Get("topic"), Batch: q.Get("file"), Now: s.now()}
	var err error
	if f.Sort, f.Cursor, f.Limit, err = s.pageParams(q); err != nil {
		return f, err
	}
	if err := oneOf("status", f.Status, storetype.ExecutionStates...); err != nil {
		return f, err
	}
	if err := oneOf("sort", f.Sort, storetype.SortNewest, storetype.SortOldest); err != nil {
		return f, err
	}
	f.From, f.To, err = timeRange(q, f.Now)
	return f, err
}

// taskStates are the states a task list filters on.
var taskStates = []string{storetype.TaskActive, storetype.TaskPaused, storetype.TaskLive, storetype.TaskCompleted, storetype.TaskDeleted}

// taskFilter reads the task list's filters from its URL.
func (s *Server) taskFilter(q url.Values) (storetype.TaskFilter, error) {
	f := storetype.TaskFilter{Status: q.Get("status"), Fault: q.Get("fault"), Host: q.Get("host"), Name: q.Get("name"), Batch: q.Get("file"), Topic: q.Get("topic")}
	var err error
	if f.Sort, f.Cursor, f.Limit, err = s.pageParams(q); err != nil {
		return f, err
	}
	if err := oneOf("status", f.Status, taskStates...); err != nil {
		return f, err
	}
	if err := oneOf("fault", f.Fault, storetype.TaskFaultAny, storetype.TaskFaultPaused); err != nil {
		return f, err
	}
	if err := oneOf("sort", f.Sort, storetype.TaskSortNext, storetype.TaskSortKey); err != nil {
		return f, err
	}
	f.From, f.To, err = timeRange(q, s.now())
	return f, err
}

// fileStates are the states a files list filters on.
var fileStates = []string{storetype.ArrivalReceived, storetype.ArrivalConverting, storetype.BatchInjected, storetype.BatchRejected,
	storetype.BatchDuplicate, storetype.BatchHeld, storetype.ArrivalFailed}

// fileFilter reads the files list's filters from its URL.
func (s *Server) fileFilter(q url.Values) (storetype.FileFilter, error) {
	f := storetype.FileFilter{Status: q.Get("status"), Folder: q.Get("folder"), Name: q.Get("name")}
	var err error
	if f.Sort, f.Cursor, f.Limit, err = s.pageParams(q); err != nil {
		return f, err
	}
	if err := oneOf("status", f.Status, fileStates...); err != nil {
		return f, err
	}
	if err := oneOf("sort", f.Sort, storetype.SortNewest, storetype.SortOldest); err != nil {
		return f, err
	}
	f.From, f.To, err = timeRange(q, s.now())
	return f, err
}

// auditFilter reads the audit list's filters from its URL.
func (s *Server) auditFilter(q url.Values) (storetype.AuditFilter, error) {
	f := storetype.AuditFilter{Actor: q.Get("actor"), Action: q.Get("action"), Object: q.Get("object"), Outcome: q.Get("outcome")}
	var err error
	if f.Sort, f.Cursor, f.Limit, err = s.pageParams(q); err != nil {
		return f, err
	}
	if err := oneOf("sort", f.Sort, storetype.SortNewest, storetype.SortOldest); err != nil {
		return f, err
	}
	f.From, f.To, err = timeRange(q, s.now())
	return f, err
}

// listQuery is the query of a list's URL with only the parameters it
// knows (params, then sort, cursor and limit), none empty.
func listQuery(q url.Values, params []string) url.Values {
	out := url.Values{}
	for _, k := range append(slices.Clone(params), listParams...) {
		if v := strings.TrimSpace(q.Get(k)); v != "" {
			out.Set(k, v)
		}
	}
	return out
}

// canonical sends a list page's browser, which a filter form brings with
// every field however empty, to the list's own URL: the same list, with
// only the filters set, in one order, to share. It reports whether it
// did.
func canonical(w http.ResponseWriter, r *http.Request, params []string) bool {
	q := r.URL.Query()
	clean := listQuery(q, params)
	if encodeQuery(clean) == r.URL.RawQuery {
		return false
	}
	http.Redirect(w, r, r.URL.Path+queryString(clean), http.StatusSeeOther)
	return true
}

// encodeQuery encodes q in the order of its parameters as the lists name
// them, which url.Values.Encode (sorted by key) does not keep.
func encodeQuery(q url.Values) string {
	var order []string
	for _, params := range [][]string{executionParams, taskParams, fileParams, auditParams, listParams} {
		for _, k := range params {
			if !slices.Contains(order, k) {
				order = append(order, k)
			}
		}
	}
	var parts []string
	for _, k := range order {
		if v := q.Get(k); v != "" {
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
		}
	}
	return strings.Join(parts, "&")
}

// queryString is "?" and q encoded, or "" for none.
func queryString(q url.Values) string {
	if e := encodeQuery(q); e != "" {
		return "?" + e
	}
	return ""
}

// pager is a list's paging as a page shows it: rows From to To of Total,
// and links to the first, previous and next pages.
type pager struct {
	Noun                       string
	Total, From, To            int
	FirstURL, PrevURL, NextURL string
	// Shown is the number of rows of the page; Offset where it starts.
	Shown int
}

// pagerOf is the paging of page p of the list at r's URL.
func pagerOf[T any](r *http.Request, params []string, p storetype.Page[T], noun string) pager {
	q := listQuery(r.URL.Query(), params)
	at := func(cursor string) string {
		c := listQuery(q, params)
		c.Del("cursor")
		if cursor != "" {
			c.Set("cursor", cursor)
		}
		return r.URL.Path + queryString(c)
	}
	pg := pager{Noun: noun, Total: p.Total, Shown: len(p.Rows)}
	if len(p.Rows) > 0 {
		pg.From, pg.To = p.Offset+1, p.Offset+len(p.Rows)
	}
	if q.Get("cursor") != "" {
		pg.FirstURL = at("")
	}
	if p.Prev != "" {
		pg.PrevURL = at(p.Prev)
	}
	if p.Next != "" {
		pg.NextURL = at(p.Next)
	}
	return pg
}

// Line says where the page is in the list: "1,234 executions: 51–100",
// "no executions".
func (p pager) Line() string {
	switch {
	case p.Total == 0 && p.Shown == 0:
		return "no " + p.Noun
	case p.Shown == 0:
		return thousands(p.Total) + " " + p.Noun + ": none on this page"
	case p.From == 1 && p.To == p.Total:
		return thousands(p.Total) + " " + p.Noun
	}
	return fmt.Sprintf("%s %s: %s–%s", thousands(p.Total), p.Noun, thousands(p.From), thousands(p.To))
}

// thousands writes n with a comma every three digits: 1,234,567.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// writePage answers an API list: the page's rows as a JSON array (never
// null), the total in X-Total-Count, and the first, previous and next
// pages as Link headers (RFC 8288), relative to the API's root.
func writePage[T any](s *Server, w http.ResponseWriter, r *http.Request, params []string, p storetype.Page[T], rows []T) {
	pageHeaders(w, r, params, p)
	s.writeJSON(w, r, nonNil(rows))
}

// pageHeaders says where a page of a list is: the Link header leads to
// the next, previous and first pages, X-Total-Count counts the list.
func pageHeaders[T any](w http.ResponseWriter, r *http.Request, params []string, p storetype.Page[T]) {
	pg := pagerOf(r, params, p, "")
	var links []string
	for _, l := range []struct{ url, rel string }{{pg.NextURL, "next"}, {pg.PrevURL, "prev"}, {pg.FirstURL, "first"}} {
		if l.url != "" {
			links = append(links, "<"+l.url+`>; rel="`+l.rel+`"`)
		}
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(p.Total))
}

// sortOption is one order a list's form offers; Value "" is the default.
type sortOption struct{ Value, Label string }

// Orders the lists offer.
var (
	newestOldest = []sortOption{{"", "newest first"}, {storetype.SortOldest, "oldest first"}}
	taskOrders   = []sortOption{{"", "due soonest first"}, {storetype.TaskSortKey, "by key"}}
)

// executionStateOptions are the states the executions list filters on.
var executionStateOptions = storetype.ExecutionStates

// auditOutcomes are the outcomes an audit event has.
var auditOutcomes = []string{record.OutcomeOK, record.OutcomeRejected, record.OutcomeNoChange, record.OutcomeFailed}

// fileQuery filters a list to the tasks of one file, and taskQuery to one
// task.
func fileQuery(id string) url.Values  { return url.Values{"file": {id}} }
func taskQuery(key string) url.Values { return url.Values{"task": {key}} }

// taskStateLabel names a task state in the filter.
func taskStateLabel(st string) string {
	if st == storetype.TaskLive {
		return "live (active or paused)"
	}
	return st
}

// fileStateLabel names a file state in the filter.
func fileStateLabel(st string) string {
	switch st {
	case storetype.BatchDuplicate:
		return "dropped again"
	case storetype.BatchHeld:
		return "held for review"
	case storetype.ArrivalFailed:
		return "failed before read"
	}
	return st
}
