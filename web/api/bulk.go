package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/field"
	"github.com/jobdrop/jobdrop/web/list"
)

// A bulk action (pause, resume, trigger or delete every task a list's
// filters select) is one event of the audit trail: its action is
// "tasks." and the verb, its object the task list it acted on, its detail
// the counts and the moment it began. The engine still audits each task
// it changes, under the same actor, from that moment to the bulk event's:
// the bulk event links them.

// bulkPrefix starts the action of a bulk action's audit event.
const bulkPrefix = "tasks."

// perTaskAction is the engine's audit action for one task of a bulk
// action's verb.
var perTaskAction = map[string]string{
	"pause":   record.ActionTaskPaused,
	"resume":  record.ActionTaskResumed,
	"trigger": record.ActionTaskTriggered,
	"delete":  record.ActionTaskDeleted,
}

// bulkSince is how a bulk event's detail ends: the moment from which its
// per-task events follow.
const bulkSince = "; per-task events from "

// auditBulk writes the one audit event of a bulk action on the tasks of
// tasks (the task list's URL with its filters) that began at start and
// ended with err, and returns its id ("" when it could not be written,
// which is logged).
func (s *Server) auditBulk(r *http.Request, verb, tasks string, b bulk, start time.Time, err error) string {
	outcome, detail := record.OutcomeOK, fmt.Sprintf("%s tasks selected, %s sent", list.Thousands(b.selected), list.Thousands(len(b.sent)))
	if skipped := b.selected - len(b.sent); err == nil && skipped > 0 {
		detail += fmt.Sprintf(", %s %s already", list.Thousands(skipped), perTaskAction[verb][len("task."):])
	}
	switch {
	case err != nil:
		outcome, detail = record.OutcomeFailed, detail+": "+err.Error()
	case len(b.sent) == 0:
		outcome = record.OutcomeNoChange
	}
	// The detail is cut at its end by the audit's bound: the moment goes
	// first.
	detail = field.Clean(detail, field.MaxDetail-len(bulkSince)-len(time.RFC3339Nano)) + bulkSince + start.UTC().Format(time.RFC3339Nano)
	return s.host.Audit(r, bulkPrefix+verb, actor(r), tasks, outcome, detail)
}

// bulkSinceRE finds the moment a bulk event's per-task events follow from.
var bulkSinceRE = regexp.MustCompile(regexp.QuoteMeta(bulkSince) + `(\S+)$`)

// BulkEventsURL is the audit list of the per-task events of the bulk
// action of event a, oldest first; "" when a is no bulk action's event.
func BulkEventsURL(a storetype.AuditEvent) string {
	verb, ok := strings.CutPrefix(a.Action, bulkPrefix)
	if !ok || perTaskAction[verb] == "" {
		return ""
	}
	m := bulkSinceRE.FindStringSubmatch(a.Detail)
	if m == nil {
		return ""
	}
	since, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		return ""
	}
	q := url.Values{"actor": {a.Actor}, "action": {perTaskAction[verb]}, "from": {since.UTC().Format(time.RFC3339Nano)},
		"to": {a.At.Add(time.Millisecond).UTC().Format(time.RFC3339Nano)}, "sort": {storetype.SortOldest}}
	return "/audit" + list.QueryString(q)
}

// BulkSelects reports whether a task list's filters select tasks enough
// for a bulk action: a file, host, name, topic or fault, not merely a
// status.
func BulkSelects(f storetype.TaskFilter) bool {
	return f.Batch != "" || f.Host != "" || f.Name != "" || f.Topic != "" || f.Fault != ""
}

// BulkListURL is the task list a bulk action's event names, when it is
// one.
func BulkListURL(a storetype.AuditEvent) string {
	if !strings.HasPrefix(a.Action, bulkPrefix) || !strings.HasPrefix(a.Object, "/tasks") {
		return ""
	}
	return a.Object
}

// verbs are what POST /api/tasks/... does to tasks; oneTask those it
// does to one task only, named in the path.
var (
	verbs   = map[string]bool{"pause": true, "resume": true, "trigger": true, "delete": true, "release": true, "skip": true}
	oneTask = map[string]bool{"release": true, "skip": true}
)

// postTasks serves POST /api/tasks/{key}/{verb} for one task and
// POST /api/tasks/{verb}?file=ID or ?host=HOST for many.
func (s *Server) postTasks(w http.ResponseWriter, r *http.Request) {
	rest := r.PathValue("rest")
	key, verb := "", rest
	if i := strings.LastIndex(rest, "/"); i >= 0 {
		key, verb = rest[:i], rest[i+1:]
	}
	switch {
	case !verbs[verb]:
		Error(w, http.StatusNotFound, "no such task action "+verb+": want pause, resume, trigger, delete, or release or skip of one chained task")
		return
	case key == "" && oneTask[verb]:
		Error(w, http.StatusNotFound, "no such task action "+verb+" of many tasks: release and skip act on one chained task, POST /api/tasks/{host}/{name}/"+verb)
		return
	}
	s.changeTasks(w, r, key, verb)
}

// deleteTask serves DELETE /api/tasks/{key}.
func (s *Server) deleteTask(w http.ResponseWriter, r *http.Request) {
	s.changeTasks(w, r, r.PathValue("key"), "delete")
}

func (s *Server) changeTasks(w http.ResponseWriter, r *http.Request, key, verb string) {
	if !s.allow(w, r, auth.Operator) || !s.writable(w) {
		return
	}
	var sent []string
	event := ""
	if key != "" {
		t, err := s.src.TaskByKey(r.Context(), key)
		if err != nil {
			s.apiFail(w, r, err)
			return
		}
		if !t.Live() {
			Error(w, http.StatusConflict, fmt.Sprintf("task %s is %s", t.Key, t.Status))
			return
		}
		d, ok, err := command(t, verb)
		if err != nil {
			Error(w, http.StatusConflict, err.Error())
			return
		}
		if ok {
			if err := s.cmd.Send(r.Context(), actor(r), d); err != nil {
				s.sendFailed(w, r, err)
				return
			}
			sent = append(sent, key)
		}
	} else {
		// A bulk action on many tasks may take longer than an answer
		// may: its answer is written when it is done.
		w = s.host.Streaming(w)
		b, ok := s.changeSelected(w, r, verb)
		if !ok {
			return
		}
		sent, event = b.sent, b.event
	}
	if isForm(r) {
		http.Redirect(w, r, auth.SafeNext(r.FormValue("back")), http.StatusSeeOther)
		return
	}
	answer := map[string]any{"action": verb, "sent": len(sent), "tasks": sent}
	if event != "" {
		answer["audit"] = event
	}
	if len(sent) > list.MaxLimit {
		// The count says how many; the keys of a large bulk action would
		// make an answer of megabytes.
		answer["tasks"], answer["tasksCut"] = sent[:list.MaxLimit], true
	}
	s.writeJSON(w, r, answer)
}

// bulkChunk is how many commands of a bulk action go to Kafka together:
// each chunk is one transaction, so a bulk action on a million tasks
// holds a chunk's definitions in memory, not a million.
const bulkChunk = 5000

// errUnknownDefinition stops a bulk action on a task whose definition the
// console does not hold, which pause and resume need.
var errUnknownDefinition = errors.New("its definition is not known here")

// bulk is what a bulk action did: the keys of the tasks it sent a command
// for, how many live tasks its filters selected, and the id of its audit
// event.
type bulk struct {
	sent     []string
	selected int
	event    string
}

// changeSelected applies verb to every live task the list filters of the
// request select (those of the task list), however many, and writes one
// audit event for all of it: the filters, the counts and the outcome,
// with the time from which the engine's event for each task follows.
// Tasks already paused or resumed are skipped. On an error it answers and
// returns false; commands sent before it stay sent, and the event says
// how many.
func (s *Server) changeSelected(w http.ResponseWriter, r *http.Request, verb string) (bulk, bool) {
	var b bulk
	f, err := s.lists.Tasks(r.URL.Query())
	if err != nil {
		Error(w, http.StatusBadRequest, err.Error())
		return b, false
	}
	if !BulkSelects(f) {
		Error(w, http.StatusBadRequest, "bulk "+verb+": select the tasks with ?file=ID, ?host=HOST, ?name=PART, ?topic=TOPIC or ?fault=any|paused")
		return b, false
	}
	if err := FileKnown(r.Context(), s.src, f); err != nil {
		s.apiFail(w, r, err)
		return b, false
	}
	start := s.cfg.Clock.Now()
	var chunk []task.Definition
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if err := s.cmd.Send(r.Context(), actor(r), chunk...); err != nil {
			return err
		}
		for _, d := range chunk {
			b.sent = append(b.sent, d.Key())
		}
		chunk = chunk[:0]
		return nil
	}
	err = s.src.EachTask(r.Context(), f, func(t storetype.Task) error {
		if !t.Live() {
			return nil
		}
		b.selected++
		d, ok, err := command(t, verb)
		if err != nil || !ok {
			return err
		}
		if chunk = append(chunk, d); len(chunk) >= bulkChunk {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	b.event = s.auditBulk(r, verb, list.FilterURL("/tasks", list.Query(r.URL.Query(), list.TaskParams)), b, start, err)
	switch {
	case err == nil:
		return b, true
	case errors.Is(err, errUnknownDefinition) && len(b.sent) == 0:
		Error(w, http.StatusConflict, err.Error())
	default:
		if len(b.sent) > 0 {
			err = fmt.Errorf("after %d tasks: %w", len(b.sent), err)
		}
		s.sendFailed(w, r, err)
	}
	return b, false
}

// command is the command that applies verb to a live task: pause and
// resume replace the stored definition with active false or true; trigger
// and delete need only the key, and so do release (fire a chained task
// now) and skip (let its current run go unfired), which only a task that
// follows others takes. ok is false when there is nothing to do (a task
// paused already, say).
func command(t storetype.Task, verb string) (d task.Definition, ok bool, err error) {
	switch verb {
	case "trigger":
		return task.Definition{Host: t.Host, Name: t.Name, Action: task.Trigger}, true, nil
	case "delete":
		return task.Definition{Host: t.Host, Name: t.Name, Action: task.Delete}, true, nil
	case "release", "skip":
		if t.Definition == "" || json.Unmarshal([]byte(t.Definition), &d) != nil {
			return d, false, fmt.Errorf("task %s: %w", t.Key, errUnknownDefinition)
		}
		if !d.Chained() {
			return d, false, fmt.Errorf("task %s follows no other task: %s is for a chained task (one with after)", t.Key, verb)
		}
		action := task.Release
		if verb == "skip" {
			action = task.SkipRun
		}
		return task.Definition{Host: t.Host, Name: t.Name, Action: action}, true, nil
	}
	// pause, resume
	if err := json.Unmarshal([]byte(t.Definition), &d); err != nil || t.Definition == "" {
		return d, false, fmt.Errorf("task %s: %w", t.Key, errUnknownDefinition)
	}
	if d.Paused() == (verb == "pause") {
		return d, false, nil
	}
	d.Action = task.Update
	d.Active = task.Ptr(verb == "resume")
	return d, true, nil
}
