package web_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// pagingLimit is the page size the paging tests read with: a list of
// 1,001 to 1,200 rows takes 3 pages, the last reached by a cursor past
// row 1,000.
const pagingLimit = 400

// filterCase is one filtered list: its query and which of the generated
// rows it should hold. A case selects more than 1,000 rows, so that its
// last ones come from a cursor past 1,000, unless it says few: a state
// of few rows, or the whole list.
type filterCase[R any] struct {
	query string
	holds func(R) bool
	few   bool
}

// checkPagedList reads api?query&limit=400 page by page to its end, by
// rel="next", and checks that it lists exactly the rows of all that the
// case holds, in the order of all (reversed for sort=oldest), each once,
// with their number in X-Total-Count.
func checkPagedList[R, T any](t *testing.T, base, api string, all []R, idOf func(R) string, rowID func(T) string, cases []filterCase[R]) {
	t.Helper()
	for _, c := range cases {
		var want []string
		for _, r := range all {
			if c.holds(r) {
				want = append(want, idOf(r))
			}
		}
		if strings.Contains(c.query, "sort=oldest") {
			slices.Reverse(want)
		}
		if !c.few && (len(want) <= 1000 || len(want) == len(all)) {
			t.Fatalf("%s?%s selects %d of %d rows: the test needs more than 1,000 and fewer than all", api, c.query, len(want), len(all))
		}
		path := api + "?limit=" + fmt.Sprint(pagingLimit)
		if c.query != "" {
			path = api + "?" + c.query + "&limit=" + fmt.Sprint(pagingLimit)
		}
		rows, total, pages := apiPages[T](t, base, path)
		var got []string
		for _, r := range rows {
			got = append(got, rowID(r))
		}
		if wantPages := max(1, (len(want)+pagingLimit-1)/pagingLimit); total != len(want) || pages != wantPages {
			t.Errorf("%s?%s: %d rows in %d pages, X-Total-Count %d; want %d rows in %d pages", api, c.query, len(got), pages, total, len(want), wantPages)
		}
		if !slices.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s?%s: %d rows, want %d; they differ from row %d on: %q, want %q", api, c.query, len(got), len(want), i+1,
				got[i:min(len(got), i+3)], want[i:min(len(want), i+3)])
		}
	}
}

// TestExecutionsAPIPagesEveryFilterPastAThousand: /api/executions pages
// each of its filters, alone and together, past 1,000 rows by cursor, and
// lists exactly the executions each selects, newest first (oldest first
// when asked), each once.
func TestExecutionsAPIPagesEveryFilterPastAThousand(t *testing.T) {
	type execution struct {
		id, host, name, topic, batch, status string
		at                                   time.Time
	}
	fileA, fileB := fmt.Sprintf("%064x", 0xa), fmt.Sprintf("%064x", 0xb)
	var all []execution
	f := newFeed(t, now)
	var recs []*kgo.Record
	for i := range 1500 {
		// One a second, newest first, half a second off the second so
		// that no bound of a filter falls on one.
		e := execution{id: fmt.Sprintf("x%05d", i), host: "acme", name: "report", topic: "other", batch: fileB,
			status: record.StatusSuccess, at: now.Add(-time.Duration(i)*time.Second - 500*time.Millisecond)}
		if i%5 == 0 {
			e.host = "beta"
		}
		if i%11 != 0 {
			e.name = "nightly-backup"
		}
		if i%6 != 0 {
			e.topic = "jobs"
		}
		if i%8 != 0 {
			e.batch = fileA
		}
		ex := record.Execution{FireID: e.id, Host: e.host, Name: e.name, Topic: e.topic, ScheduledAt: ms(e.at), FiredAt: ms(e.at), Batch: e.batch}
		switch {
		case i%100 == 97:
			e.status = storetype.ExecutionFired // no report yet
		case i%100 == 98:
			e.status, ex.Timeout = storetype.ExecutionOverdue, 100 // no report 100 ms after it fired
		case i%100 == 99:
			e.status = record.StatusRunning
		case i%7 != 0:
			e.status = record.StatusFailed
		}
		all = append(all, e)
		recs = append(recs, rec(t, topics.Executions, e.id, ex))
		if e.status != storetype.ExecutionFired && e.status != storetype.ExecutionOverdue {
			recs = append(recs, rec(t, topics.Status, e.id, record.Status{FireID: e.id, Status: e.status, At: ms(e.at) + 100}))
		}
	}
	f.addAll(recs)
	ts := serve(t, f)

	ago20m, ago5m := now.Add(-20*time.Minute), now.Add(-5*time.Minute)
	checkPagedList(t, ts.URL, "/api/executions", all, func(e execution) string { return e.id },
		func(e struct {
			FireID string `json:"fireId"`
		}) string {
			return e.FireID
		}, []filterCase[execution]{
			{"status=FAILED", func(e execution) bool { return e.status == record.StatusFailed }, false},
			{"status=SUCCESS", func(e execution) bool { return e.status == record.StatusSuccess }, true},
			{"status=RUNNING", func(e execution) bool { return e.status == record.StatusRunning }, true},
			{"status=FIRED", func(e execution) bool { return e.status == storetype.ExecutionFired }, true},
			{"status=overdue", func(e execution) bool { return e.status == storetype.ExecutionOverdue }, true},
			{"host=acme", func(e execution) bool { return e.host == "acme" }, false},
			{"name=NIGHT", func(e execution) bool { return strings.Contains(e.name, "night") }, false},
			{"task=acme%2Fnightly-backup", func(e execution) bool { return e.host == "acme" && e.name == "nightly-backup" }, false},
			{"topic=jobs", func(e execution) bool { return e.topic == "jobs" }, false},
			{"file=" + fileA, func(e execution) bool { return e.batch == fileA }, false},
			{"from=-20m", func(e execution) bool { return !e.at.Before(ago20m) }, false},
			{"to=" + url.QueryEscape(ago5m.Format(time.RFC3339)), func(e execution) bool { return e.at.Before(ago5m) }, false},
			{"status=FAILED&name=backup&from=-24m", func(e execution) bool {
				return e.status == record.StatusFailed && e.name == "nightly-backup" && !e.at.Before(now.Add(-24*time.Minute))
			}, false},
			{"file=" + fileA + "&sort=oldest", func(e execution) bool { return e.batch == fileA }, false},
		})
}

// TestTasksAPIPagesEveryFilterPastAThousand: /api/tasks pages each of its
// filters, alone and together, past 1,000 rows by cursor, and lists
// exactly the tasks each selects, due soonest first (then the ended ones,
// most recently ended first; by key when asked), each once.
func TestTasksAPIPagesEveryFilterPastAThousand(t *testing.T) {
	type taskRow struct {
		key, host, name, topic, batch, status, fault string
		next                                         time.Time // zero once ended
	}
	fileA, fileB := fmt.Sprintf("%064x", 0xa), fmt.Sprintf("%064x", 0xb)
	var all []taskRow
	f := newFeed(t, now)
	var recs []*kgo.Record
	for i := range 1600 {
		r := taskRow{host: "acme", name: fmt.Sprintf("hourly-%04d", i), topic: "reports", batch: fileB,
			status: storetype.TaskActive, next: now.Add(time.Duration(i+1) * time.Minute)}
		if i%4 == 3 {
			r.host = "beta"
		}
		if i%5 != 0 {
			r.name = fmt.Sprintf("nightly-%04d", i)
		}
		if i%7 != 0 {
			r.topic = "jobs"
		}
		if i%6 != 5 {
			r.batch = fileA
		}
		d := task.Definition{Host: r.host, Name: r.name, Action: task.Insert, Topic: r.topic, Frequency: &task.Frequency{TimeUnit: task.Days, Time: 1}}
		if i%4 == 0 {
			r.status = storetype.TaskPaused
			d.Active = task.Ptr(false)
		}
		st := record.State{Definition: d, Anchor: ms(now), NextFire: ms(r.next), Source: record.Source{Batch: r.batch, File: "jobs.csv", Row: i + 1}, UpdatedAt: ms(now)}
		if i%3 != 0 {
			// A fire refused; every tenth of them paused for it by the
			// fault policy.
			st.Fault = &record.Fault{Occurrence: ms(now), Attempts: 3, Reason: "topic missing", At: ms(now), Paused: i%10 == 1}
			r.fault = "refused"
			if st.Fault.Paused {
				r.fault = "paused"
			}
		}
		r.key = d.Key()
		all = append(all, r)
		recs = append(recs, rec(t, topics.State, r.key, st))
	}
	// 100 tasks ended, each a second apart: the list shows them last,
	// the most recently ended first.
	for i := range 100 {
		r := taskRow{host: "acme", name: fmt.Sprintf("ended-%03d", i), status: storetype.TaskDeleted}
		r.key = r.host + "/" + r.name
		end := &kgo.Record{Topic: topics.State, Key: []byte(r.key), Timestamp: now.Add(-time.Duration(i) * time.Second)}
		if i%2 == 0 {
			r.status = storetype.TaskCompleted
			end.Headers = []kgo.RecordHeader{{Key: record.HeaderEnd, Value: []byte(record.EndCompleted)}}
		}
		all = append(all, r)
		recs = append(recs, end)
	}
	f.addAll(recs)
	ts := serve(t, f)

	type row struct {
		Key string `json:"key"`
	}
	key := func(r taskRow) string { return r.key }
	checkPagedList(t, ts.URL, "/api/tasks", all, key, func(r row) string { return r.Key }, []filterCase[taskRow]{
		{"status=active", func(r taskRow) bool { return r.status == storetype.TaskActive }, false},
		{"status=paused", func(r taskRow) bool { return r.status == storetype.TaskPaused }, true},
		{"status=live", func(r taskRow) bool { return !r.next.IsZero() }, false},
		{"status=completed", func(r taskRow) bool { return r.status == storetype.TaskCompleted }, true},
		{"status=deleted", func(r taskRow) bool { return r.status == storetype.TaskDeleted }, true},
		{"fault=any", func(r taskRow) bool { return r.fault != "" }, false},
		{"fault=paused", func(r taskRow) bool { return r.fault == "paused" }, true},
		{"host=acme", func(r taskRow) bool { return r.host == "acme" }, false},
		{"name=NIGHTLY-", func(r taskRow) bool { return strings.Contains(r.name, "nightly-") }, false},
		{"topic=jobs", func(r taskRow) bool { return r.topic == "jobs" }, false},
		{"file=" + fileA, func(r taskRow) bool { return r.batch == fileA }, false},
		{"from=%2B500m", func(r taskRow) bool { return !r.next.IsZero() && !r.next.Before(now.Add(500*time.Minute)) }, false},
		{"to=%2B1200m", func(r taskRow) bool { return !r.next.IsZero() && r.next.Before(now.Add(1200*time.Minute)) }, false},
		{"status=live&topic=jobs&name=night&from=-1h", func(r taskRow) bool {
			return r.topic == "jobs" && strings.Contains(r.name, "night") && !r.next.IsZero()
		}, false},
	})
	// By key: a list of its own order.
	byKey := slices.Clone(all)
	slices.SortFunc(byKey, func(a, b taskRow) int { return strings.Compare(a.key, b.key) })
	checkPagedList(t, ts.URL, "/api/tasks", byKey, key, func(r row) string { return r.Key }, []filterCase[taskRow]{
		{"host=acme&sort=key", func(r taskRow) bool { return r.host == "acme" }, false},
	})
}

// TestFilesAPIPagesEveryFilterPastAThousand: /api/files pages each of its
// filters, alone and together, past 1,000 rows by cursor, and lists
// exactly the files each selects, recorded or on their way in, newest
// first (oldest first when asked), each once.
func TestFilesAPIPagesEveryFilterPastAThousand(t *testing.T) {
	type file struct {
		id, name, folder, status string
		at                       time.Time
	}
	folder := func(i int) string {
		if i%5 == 0 {
			return "/in/a"
		}
		return "/in/b"
	}
	var all []file
	f := newFeed(t, now)
	var recs []*kgo.Record
	// 100 files on their way in, in the last 100 seconds, newest first.
	for i := range 100 {
		r := file{name: fmt.Sprintf("incoming-%03d.csv", i), folder: folder(i), status: storetype.ArrivalReceived,
			at: now.Add(-time.Duration(i)*time.Second - 500*time.Millisecond)}
		action := record.ActionFileReceived
		if i%2 == 1 {
			r.status, action = storetype.ArrivalFailed, record.ActionFileFailed
		}
		r.id = record.ArrivalID(r.folder, r.name)
		all = append(all, r)
		recs = append(recs, rec(t, topics.Audit, "watcher", record.Audit{ID: "arrival-" + r.name, At: ms(r.at), Actor: "watcher",
			Action: action, Object: r.name, Outcome: record.OutcomeOK, Arrival: &record.Arrival{ID: r.id, File: r.name, Folder: r.folder}}))
	}
	// 1,300 files read, one a minute before them.
	for i := range 1300 {
		r := file{id: fmt.Sprintf("%064d", i), name: fmt.Sprintf("stock-%04d.csv", i), folder: folder(i),
			status: storetype.BatchInjected, at: now.Add(-time.Duration(i+2)*time.Minute - 500*time.Millisecond)}
		if i%9 != 0 {
			r.name = fmt.Sprintf("payroll-%04d.csv", i)
		}
		action := record.ActionFileInjected
		if i%16 == 0 {
			r.status, action = storetype.BatchRejected, record.ActionFileRejected
		}
		all = append(all, r)
		recs = append(recs, rec(t, topics.Audit, "watcher", record.Audit{ID: "file-" + r.id, At: ms(r.at), Actor: "watcher",
			Action: action, Object: r.name, Outcome: record.OutcomeOK, Batch: &record.Batch{ID: r.id, File: r.name, Folder: r.folder, Rows: 1}}))
	}
	f.addAll(recs)
	ts := serve(t, f)

	ago200m := now.Add(-200 * time.Minute)
	checkPagedList(t, ts.URL, "/api/files", all, func(r file) string { return r.id },
		func(r struct {
			ID string `json:"id"`
		}) string {
			return r.ID
		}, []filterCase[file]{
			{"status=injected", func(r file) bool { return r.status == storetype.BatchInjected }, false},
			{"status=rejected", func(r file) bool { return r.status == storetype.BatchRejected }, true},
			{"status=received", func(r file) bool { return r.status == storetype.ArrivalReceived }, true},
			{"status=failed", func(r file) bool { return r.status == storetype.ArrivalFailed }, true},
			{"folder=%2Fin%2Fb", func(r file) bool { return r.folder == "/in/b" }, false},
			{"name=PAYROLL", func(r file) bool { return strings.Contains(r.name, "payroll") }, false},
			{"from=-1200m", func(r file) bool { return !r.at.Before(now.Add(-1200 * time.Minute)) }, false},
			{"to=" + url.QueryEscape(ago200m.Format(time.RFC3339)), func(r file) bool { return r.at.Before(ago200m) }, false},
			{"status=injected&name=payroll&sort=oldest", func(r file) bool {
				return r.status == storetype.BatchInjected && strings.Contains(r.name, "payroll")
			}, false},
		})
}

// TestAuditAPIPagesEveryFilterPastAThousand: /api/audit pages each of its
// filters, alone and together, past 1,000 rows by cursor, and lists
// exactly the events each selects, newest first (oldest first when
// asked), each once.
func TestAuditAPIPagesEveryFilterPastAThousand(t *testing.T) {
	type event struct {
		id, actor, action, object, outcome string
		at                                 time.Time
	}
	var all []event
	f := newFeed(t, now)
	var recs []*kgo.Record
	for i := range 1500 {
		e := event{id: fmt.Sprintf("e%05d", i), actor: "ada", action: record.ActionTaskPaused,
			object: fmt.Sprintf("acme/job-%04d", i), outcome: record.OutcomeOK, at: now.Add(-time.Duration(i)*10*time.Second - 5*time.Second)}
		if i%8 == 0 {
			e.actor = "otto"
		}
		if i%7 == 0 {
			e.action = record.ActionTaskResumed
		}
		if i%9 == 0 {
			e.object = fmt.Sprintf("beta/job-%04d", i)
		}
		if i%10 == 0 {
			e.outcome = record.OutcomeRejected
		}
		all = append(all, e)
		recs = append(recs, rec(t, topics.Audit, "api", record.Audit{ID: e.id, At: ms(e.at), Actor: e.actor, Action: e.action,
			Object: e.object, Outcome: e.outcome}))
	}
	f.addAll(recs)
	ts := serve(t, f)

	ago1h := now.Add(-time.Hour)
	checkPagedList(t, ts.URL, "/api/audit", all, func(e event) string { return e.id },
		func(e struct {
			ID string `json:"id"`
		}) string {
			return e.ID
		}, []filterCase[event]{
			{"actor=ada", func(e event) bool { return e.actor == "ada" }, false},
			{"action=task.paused", func(e event) bool { return e.action == record.ActionTaskPaused }, false},
			{"object=ACME%2F", func(e event) bool { return strings.HasPrefix(e.object, "acme/") }, false},
			{"outcome=ok", func(e event) bool { return e.outcome == record.OutcomeOK }, false},
			{"outcome=rejected", func(e event) bool { return e.outcome == record.OutcomeRejected }, true},
			{"from=-3h", func(e event) bool { return !e.at.Before(now.Add(-3 * time.Hour)) }, false},
			{"to=" + url.QueryEscape(ago1h.Format(time.RFC3339)), func(e event) bool { return e.at.Before(ago1h) }, false},
			{"actor=ada&outcome=ok&from=-4h&to=-1m", func(e event) bool {
				return e.actor == "ada" && e.outcome == record.OutcomeOK && !e.at.Before(now.Add(-4*time.Hour)) && e.at.Before(now.Add(-time.Minute))
			}, false},
			{"action=task.paused&object=job&sort=oldest", func(e event) bool { return e.action == record.ActionTaskPaused }, false},
		})
}
