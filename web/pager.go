package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/web/list"
)

// canonical sends a list page's browser, which a filter form brings with
// every field however empty, to the list's own URL: the same list, with
// only the filters set, in one order, to share. It reports whether it
// did.
func canonical(w http.ResponseWriter, r *http.Request, params []string) bool {
	q := r.URL.Query()
	clean := list.Query(q, params)
	if list.Encode(clean) == r.URL.RawQuery {
		return false
	}
	http.Redirect(w, r, r.URL.Path+list.QueryString(clean), http.StatusSeeOther)
	return true
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
	pg := pager{Noun: noun, Total: p.Total, Shown: len(p.Rows)}
	if len(p.Rows) > 0 {
		pg.From, pg.To = p.Offset+1, p.Offset+len(p.Rows)
	}
	pg.FirstURL, pg.PrevURL, pg.NextURL = list.Links(r, params, p)
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
// null), and where the page is in its headers (list.Headers).
func writePage[T any](s *Server, w http.ResponseWriter, r *http.Request, params []string, p storetype.Page[T], rows []T) {
	list.Headers(w, r, params, p)
	s.writeJSON(w, r, nonNil(rows))
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
