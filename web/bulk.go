package web

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
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
	return s.auditID(r, bulkPrefix+verb, actor(r), tasks, outcome, detail)
}

// bulkSinceRE finds the moment a bulk event's per-task events follow from.
var bulkSinceRE = regexp.MustCompile(regexp.QuoteMeta(bulkSince) + `(\S+)$`)

// bulkEventsURL is the audit list of the per-task events of the bulk
// action of event a, oldest first; "" when a is no bulk action's event.
func bulkEventsURL(a storetype.AuditEvent) string {
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

// bulkListURL is the task list a bulk action's event names, when it is
// one.
func bulkListURL(a storetype.AuditEvent) string {
	if !strings.HasPrefix(a.Action, bulkPrefix) || !strings.HasPrefix(a.Object, "/tasks") {
		return ""
	}
	return a.Object
}
