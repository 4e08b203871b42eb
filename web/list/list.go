package list

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// MaxLimit is the largest list the store answers.
const MaxLimit = 1000

// Params are the URL parameters of every list besides its filters.
var Params = []string{"sort", "cursor", "limit"}

// Filter parameters of each list, in the order a URL shows them.
var (
	ExecutionParams = []string{"status", "host", "name", "task", "topic", "file", "from", "to"}
	TaskParams      = []string{"status", "fault", "host", "name", "topic", "file", "from", "to"}
	FileParams      = []string{"status", "folder", "name", "from", "to"}
	AuditParams     = []string{"from", "to", "actor", "action", "object", "outcome"}
)

// TaskStates are the states a task list filters on.
var TaskStates = []string{storetype.TaskActive, storetype.TaskPaused, storetype.TaskLive, storetype.TaskCompleted, storetype.TaskDeleted}

// FileStates are the states a files list filters on.
var FileStates = []string{storetype.ArrivalReceived, storetype.ArrivalConverting, storetype.BatchInjected, storetype.BatchRejected,
	storetype.BatchDuplicate, storetype.BatchHeld, storetype.ArrivalFailed}

// Reader reads the lists' filters, order and page from their URLs.
type Reader struct {
	// Limit is the rows of a page unless a URL asks for another number
	// (?limit=, at most MaxLimit).
	Limit int
	// Clock is the clock relative times ("-1h") are counted from.
	// Required.
	Clock clockwork.Clock
}

// now is the clock's time in UTC.
func (rd Reader) now() time.Time { return rd.Clock.Now().UTC() }

// Page reads ?sort=, ?cursor= and ?limit=; the limit defaults to
// rd.Limit and is at most MaxLimit.
func (rd Reader) Page(q url.Values) (sort, cursor string, limit int, err error) {
	limit = rd.Limit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return "", "", 0, fmt.Errorf("limit %q: want a positive whole number", v)
		}
		limit = min(n, MaxLimit)
	}
	return q.Get("sort"), q.Get("cursor"), limit, nil
}

// Time reads a time of a list's filter: RFC 3339, YYYY-MM-DD,
// YYYY-MM-DDTHH:MM[:SS] (UTC), or a signed duration from now ("-1h",
// "-30m", "+24h"). A day as the end of a range includes that day.
func Time(q url.Values, name string, end bool, now time.Time) (time.Time, error) {
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
	if from, err = Time(q, "from", false, now); err != nil {
		return
	}
	to, err = Time(q, "to", true, now)
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

// Executions reads the executions list's filters from its URL.
func (rd Reader) Executions(q url.Values) (storetype.ExecutionFilter, error) {
	f := storetype.ExecutionFilter{Status: strings.ToUpper(q.Get("status")), Host: q.Get("host"), Name: q.Get("name"),
		Task: q.Get("task"), Topic: q.Get("topic"), Batch: q.Get("file"), Now: rd.now()}
	var err error
	if f.Sort, f.Cursor, f.Limit, err = rd.Page(q); err != nil {
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

// Tasks reads the task list's filters from its URL.
func (rd Reader) Tasks(q url.Values) (storetype.TaskFilter, error) {
	f := storetype.TaskFilter{Status: q.Get("status"), Fault: q.Get("fault"), Host: q.Get("host"), Name: q.Get("name"), Batch: q.Get("file"), Topic: q.Get("topic")}
	var err error
	if f.Sort, f.Cursor, f.Limit, err = rd.Page(q); err != nil {
		return f, err
	}
	if err := oneOf("status", f.Status, TaskStates...); err != nil {
		return f, err
	}
	if err := oneOf("fault", f.Fault, storetype.TaskFaultAny, storetype.TaskFaultPaused); err != nil {
		return f, err
	}
	if err := oneOf("sort", f.Sort, storetype.TaskSortNext, storetype.TaskSortKey); err != nil {
		return f, err
	}
	f.From, f.To, err = timeRange(q, rd.now())
	return f, err
}

// Files reads the files list's filters from its URL.
func (rd Reader) Files(q url.Values) (storetype.FileFilter, error) {
	f := storetype.FileFilter{Status: q.Get("status"), Folder: q.Get("folder"), Name: q.Get("name")}
	var err error
	if f.Sort, f.Cursor, f.Limit, err = rd.Page(q); err != nil {
		return f, err
	}
	if err := oneOf("status", f.Status, FileStates...); err != nil {
		return f, err
	}
	if err := oneOf("sort", f.Sort, storetype.SortNewest, storetype.SortOldest); err != nil {
		return f, err
	}
	f.From, f.To, err = timeRange(q, rd.now())
	return f, err
}

// Audit reads the audit list's filters from its URL.
func (rd Reader) Audit(q url.Values) (storetype.AuditFilter, error) {
	f := storetype.AuditFilter{Actor: q.Get("actor"), Action: q.Get("action"), Object: q.Get("object"), Outcome: q.Get("outcome")}
	var err error
	if f.Sort, f.Cursor, f.Limit, err = rd.Page(q); err != nil {
		return f, err
	}
	if err := oneOf("sort", f.Sort, storetype.SortNewest, storetype.SortOldest); err != nil {
		return f, err
	}
	f.From, f.To, err = timeRange(q, rd.now())
	return f, err
}

// Query is the query of a list's URL with only the parameters it knows
// (params, then sort, cursor and limit), none empty.
func Query(q url.Values, params []string) url.Values {
	out := url.Values{}
	for _, k := range append(slices.Clone(params), Params...) {
		if v := strings.TrimSpace(q.Get(k)); v != "" {
			out.Set(k, v)
		}
	}
	return out
}

// Encode encodes q in the order of its parameters as the lists name
// them, which url.Values.Encode (sorted by key) does not keep.
func Encode(q url.Values) string {
	var order []string
	for _, params := range [][]string{ExecutionParams, TaskParams, FileParams, AuditParams, Params} {
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

// QueryString is "?" and q encoded, or "" for none.
func QueryString(q url.Values) string {
	if e := Encode(q); e != "" {
		return "?" + e
	}
	return ""
}

// Links are the URLs of the first, previous and next pages around page
// p of the list at r's URL; "" for each there is none of (the first, on
// the first page).
func Links[T any](r *http.Request, params []string, p storetype.Page[T]) (first, prev, next string) {
	q := Query(r.URL.Query(), params)
	at := func(cursor string) string {
		c := Query(q, params)
		c.Del("cursor")
		if cursor != "" {
			c.Set("cursor", cursor)
		}
		return r.URL.Path + QueryString(c)
	}
	if q.Get("cursor") != "" {
		first = at("")
	}
	if p.Prev != "" {
		prev = at(p.Prev)
	}
	if p.Next != "" {
		next = at(p.Next)
	}
	return first, prev, next
}

// Headers say where a page of a list is: the Link header leads to the
// next, previous and first pages (RFC 8288), relative to the API's root,
// X-Total-Count counts the list.
func Headers[T any](w http.ResponseWriter, r *http.Request, params []string, p storetype.Page[T]) {
	first, prev, next := Links(r, params, p)
	var links []string
	for _, l := range []struct{ url, rel string }{{next, "next"}, {prev, "prev"}, {first, "first"}} {
		if l.url != "" {
			links = append(links, "<"+l.url+`>; rel="`+l.rel+`"`)
		}
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(p.Total))
}

// FilterURL is path with a list's filters, not its order or page, as its
// query: the bulk actions' API routes, a report's downloads.
func FilterURL(path string, q url.Values) string {
	f := url.Values{}
	for k, v := range q {
		if !slices.Contains(Params, k) {
			f[k] = v
		}
	}
	return path + QueryString(f)
}

// Refused reports whether a list refused its cursor or a filter's value:
// the request is wrong, not the server.
func Refused(err error) bool {
	return errors.Is(err, storetype.ErrBadCursor) || errors.Is(err, storetype.ErrBadFilter)
}
