package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/field"
)

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
		Error(w, http.StatusBadRequest, "invalid task definition: "+strings.ReplaceAll(err.Error(), "\n", "; "))
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
		Error(w, http.StatusBadRequest, "body: want one TaskDefinition as JSON: "+err.Error())
		return
	}
	if dec.More() {
		Error(w, http.StatusBadRequest, "body: want exactly one TaskDefinition")
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
	if !s.checkChain(w, r, &d) {
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
			Error(w, http.StatusBadRequest, "unit: "+err.Error())
			return
		}
		unit = string(u)
	}
	// Every live definition, however many, streamed as a JSON array.
	w = s.host.Streaming(w)
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
	s.host.Abort(r, "list definitions", err)
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
		Error(w, http.StatusBadRequest, "body: want {\"status\": ..., \"message\": ...}: "+err.Error())
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
		Worker: field.Clean(body.Worker, field.MaxName), At: s.cfg.Clock.Now().UnixMilli()}
	if rep.Worker == "" {
		rep.Worker = actor(r)
	}
	if err := s.cmd.ReportStatus(r.Context(), actor(r), rep); err != nil {
		s.sendFailed(w, r, err)
		return
	}
	s.writeJSON(w, r, rep)
}
