package web

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/field"
	"github.com/jobdrop/jobdrop/web/list"
)

// maxBody bounds the body of every request but an upload's.
const maxBody = 1 << 20

// actor names who sends a command: the logged-in user; with anonymous
// access, "api" for API clients and "local" for the console.
func actor(r *http.Request) string {
	p := auth.Who(r.Context())
	if p.Name == "local" && isAPI(r.URL.Path) && !isForm(r) {
		return "api"
	}
	return p.Name
}

// isForm reports whether the request is a browser form post, answered
// with a redirect rather than JSON.
func isForm(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/x-www-form-urlencoded") || strings.HasPrefix(ct, "multipart/form-data")
}

// fieldError is one invalid field, as the API reports it.
type fieldError struct {
	Field  string `json:"field"`
	Value  string `json:"value,omitempty"`
	Reason string `json:"reason"`
}

// writeInvalid answers 400 naming every invalid field.
func (s *Server) writeInvalid(w http.ResponseWriter, err error) {
	var fields []fieldError
	for _, fe := range task.FieldErrors(err) {
		fields = append(fields, fieldError{Field: fe.Field, Value: fe.Value, Reason: fe.Reason})
	}
	if len(fields) == 0 {
		s.writeJSONError(w, http.StatusBadRequest, "invalid task definition: "+strings.ReplaceAll(err.Error(), "\n", "; "))
		return
	}
	s.writeFieldErrors(w, fields...)
}

// decodeFieldError names the field a TaskDefinition's JSON got wrong,
// when the decoder says which: an unknown field, or a value of the wrong
// type.
func decodeFieldError(err error) (fieldError, bool) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		want := te.Type.String()
		switch te.Type.Kind() {
		case reflect.String:
			want = "a string"
		case reflect.Int, reflect.Int32, reflect.Int64:
			want = "a whole number"
		case reflect.Bool:
			want = "true or false"
		case reflect.Map, reflect.Struct, reflect.Pointer:
			want = "an object"
		}
		reason := "must be " + want + ", not a JSON " + te.Value
		if te.Field == "data" {
			reason = `must be an object of strings such as {"team": "ops"}; this one holds a JSON ` + te.Value
		}
		return fieldError{Field: te.Field, Reason: reason}, true
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, _ = strconv.Unquote(name)
		return fieldError{Field: name, Reason: "unknown field; TaskDefinition fields are " + strings.Join(definitionFields, ", ")}, true
	}
	return fieldError{}, false
}

// definitionFields are the JSON names of a TaskDefinition's fields, as
// task.Definition declares them.
var definitionFields = func() []string {
	var names []string
	typ := reflect.TypeFor[task.Definition]()
	for i := range typ.NumField() {
		if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}()

// writeFieldErrors answers 400 with the invalid fields, each named.
func (s *Server) writeFieldErrors(w http.ResponseWriter, fields ...fieldError) {
	var msgs []string
	for _, f := range fields {
		msgs = append(msgs, f.Field+": "+f.Reason)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"error": "invalid task definition: " + strings.Join(msgs, "; "), "fields": fields})
}

// sendFailed answers a command Kafka did not take.
func (s *Server) sendFailed(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	s.log.Error("send command", "path", r.URL.Path, "err", err)
	s.writeJSONError(w, http.StatusServiceUnavailable, "the command could not be committed to Kafka; see the server log")
}

// writable answers 503 when the console has no commander.
func (s *Server) writable(w http.ResponseWriter) bool {
	if s.cmd == nil {
		s.writeJSONError(w, http.StatusServiceUnavailable, "this console is read-only")
		return false
	}
	return true
}

// postScheduler is light-scheduler's POST /schedulers: one TaskDefinition
// as JSON.
func (s *Server) postScheduler(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.DefineRole) || !s.writable(w) {
		return
	}
	var d task.Definition
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		if fe, ok := decodeFieldError(err); ok {
			s.writeFieldErrors(w, fe)
			return
		}
		s.writeJSONError(w, http.StatusBadRequest, "body: want one TaskDefinition as JSON: "+err.Error())
		return
	}
	if dec.More() {
		s.writeJSONError(w, http.StatusBadRequest, "body: want exactly one TaskDefinition")
		return
	}
	if d.Action == "" {
		d.Action = task.Insert
	}
	if d.Message != nil {
		s.writeFieldErrors(w, fieldError{Field: "message", Reason: task.ErrMessageFromSchedules.Error()})
		return
	}
	if err := d.Validate(); err != nil {
		s.writeInvalid(w, err)
		return
	}
	if err := s.cfg.Topics.CheckTarget(d.Topic); err != nil {
		s.writeFieldErrors(w, fieldError{Field: "topic", Value: d.Topic, Reason: err.Error()})
		return
	}
	if err := s.cmd.Send(r.Context(), actor(r), d); err != nil {
		s.sendFailed(w, r, err)
		return
	}
	s.writeJSON(w, r, d)
}

// getSchedulers is light-scheduler's GET /schedulers: the definitions of
// the live tasks, optionally of one host, name or time unit.
func (s *Server) getSchedulers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	unit := q.Get("unit")
	if unit != "" {
		u, err := task.ParseTimeUnit(unit)
		if err != nil {
			s.writeJSONError(w, http.StatusBadRequest, "unit: "+err.Error())
			return
		}
		unit = string(u)
	}
	// Every live definition, however many, streamed as a JSON array.
	w = s.streaming(w)
	w.Header().Set("Content-Type", "application/json")
	bw := bufio.NewWriter(w)
	bw.WriteString("[")
	n := 0
	f := storetype.TaskFilter{Status: storetype.TaskLive, Host: q.Get("host"), Name: q.Get("name")}
	err := s.src.EachTask(r.Context(), f, func(t storetype.Task) error {
		var d task.Definition
		if t.Definition == "" || json.Unmarshal([]byte(t.Definition), &d) != nil {
			return nil
		}
		if name := q.Get("name"); name != "" && d.Name != name {
			return nil
		}
		if unit != "" && (d.Frequency == nil || string(d.Frequency.TimeUnit) != unit) {
			return nil
		}
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		if n > 0 {
			bw.WriteString(",")
		}
		n++
		bw.WriteString("\n  ")
		_, err = bw.Write(b)
		return err
	})
	if err == nil {
		if n > 0 {
			bw.WriteString("\n")
		}
		bw.WriteString("]\n")
		err = bw.Flush()
	}
	s.abortAnswer(r, "list definitions", err)
}

// verbs are what POST /api/tasks/... does to tasks.
var verbs = map[string]string{"pause": "pause", "resume": "resume", "trigger": "trigger", "delete": "delete"}

// postTasks serves POST /api/tasks/{key}/{verb} for one task and
// POST /api/tasks/{verb}?file=ID or ?host=HOST for many.
func (s *Server) postTasks(w http.ResponseWriter, r *http.Request) {
	rest := r.PathValue("rest")
	key, verb := "", rest
	if i := strings.LastIndex(rest, "/"); i >= 0 {
		key, verb = rest[:i], rest[i+1:]
	}
	if _, ok := verbs[verb]; !ok {
		s.writeJSONError(w, http.StatusNotFound, "no such task action "+verb+": want pause, resume, trigger or delete")
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
			s.writeJSONError(w, http.StatusConflict, fmt.Sprintf("task %s is %s", t.Key, t.Status))
			return
		}
		d, ok, err := command(t, verb)
		if err != nil {
			s.writeJSONError(w, http.StatusConflict, err.Error())
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
		w = s.streaming(w)
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
		s.writeJSONError(w, http.StatusBadRequest, err.Error())
		return b, false
	}
	if !bulkSelects(f) {
		s.writeJSONError(w, http.StatusBadRequest, "bulk "+verb+": select the tasks with ?file=ID, ?host=HOST, ?name=PART, ?topic=TOPIC or ?fault=any|paused")
		return b, false
	}
	if err := s.fileKnown(r.Context(), f); err != nil {
		s.apiFail(w, r, err)
		return b, false
	}
	start := s.cfg.Now()
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
	b.event = s.auditBulk(r, verb, filterURL("/tasks", list.Query(r.URL.Query(), list.TaskParams)), b, start, err)
	switch {
	case err == nil:
		return b, true
	case errors.Is(err, errUnknownDefinition) && len(b.sent) == 0:
		s.writeJSONError(w, http.StatusConflict, err.Error())
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
// and delete need only the key. ok is false when there is nothing to do
// (a task paused already, say).
func command(t storetype.Task, verb string) (d task.Definition, ok bool, err error) {
	switch verb {
	case "trigger":
		return task.Definition{Host: t.Host, Name: t.Name, Action: task.Trigger}, true, nil
	case "delete":
		return task.Definition{Host: t.Host, Name: t.Name, Action: task.Delete}, true, nil
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

// statusReport is the body of POST /api/executions/{fireId}/status.
type statusReport struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Worker  string `json:"worker"`
}

// postStatus records a worker's report on an execution.
func (s *Server) postStatus(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.Operator) || !s.writable(w) {
		return
	}
	var body statusReport
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
		s.writeJSONError(w, http.StatusBadRequest, "body: want {\"status\": ..., \"message\": ...}: "+err.Error())
		return
	}
	st := strings.ToUpper(strings.TrimSpace(body.Status))
	switch st {
	case record.StatusRunning, record.StatusSuccess, record.StatusFailed:
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": "status: want RUNNING, SUCCESS or FAILED",
			"fields": []fieldError{{Field: "status", Value: body.Status, Reason: "must be RUNNING, SUCCESS or FAILED"}}})
		return
	}
	fireID := r.PathValue("fireId")
	if _, err := s.src.ExecutionByFireID(r.Context(), fireID); err != nil {
		s.apiFail(w, r, err)
		return
	}
	// The message is the report's audit detail too: bounded and cleaned.
	rep := record.Status{FireID: fireID, Status: st, Message: field.Clean(body.Message, field.MaxDetail),
		Worker: field.Clean(body.Worker, field.MaxName), At: s.cfg.Now().UnixMilli()}
	if rep.Worker == "" {
		rep.Worker = actor(r)
	}
	if err := s.cmd.ReportStatus(r.Context(), actor(r), rep); err != nil {
		s.sendFailed(w, r, err)
		return
	}
	s.writeJSON(w, r, rep)
}

// now is the server clock in UTC.
func (s *Server) now() time.Time { return s.cfg.Now().UTC() }
