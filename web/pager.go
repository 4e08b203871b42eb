package web

import (
	"net/http"
	"net/url"

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
