package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/list"
)

// Source is what the API reads. Lookups by id return an error wrapping
// storetype.ErrNotFound when there is no such row. The store implements
// it.
type Source interface {
	Summary(ctx context.Context, now time.Time) (storetype.Summary, error)
	Files(ctx context.Context, f storetype.FileFilter) (storetype.Page[storetype.File], error)
	RecentArrivals(ctx context.Context, limit int) ([]storetype.Arrival, error)
	BatchByID(ctx context.Context, id string) (storetype.Batch, error)
	Tasks(ctx context.Context, f storetype.TaskFilter) (storetype.Page[storetype.Task], error)
	EachTask(ctx context.Context, f storetype.TaskFilter, fn func(storetype.Task) error) error
	TaskByKey(ctx context.Context, key string) (storetype.Task, error)
	Executions(ctx context.Context, f storetype.ExecutionFilter) (storetype.Page[storetype.Execution], error)
	ExecutionByFireID(ctx context.Context, fireID string) (storetype.Execution, error)
	ExecutionLog(ctx context.Context, fireID string, from, to time.Time, limit int) (storetype.ExecutionLog, error)
	Audit(ctx context.Context, f storetype.AuditFilter) (storetype.Page[storetype.AuditEvent], error)
}

// Commander carries the API's writes to Kafka: every change goes to the
// input and status topics, never to the store. internal/command's
// Writer implements it.
type Commander interface {
	// Send commits commands in one transaction, the link records of the
	// chained ones first; the engine audits each one under actor.
	Send(ctx context.Context, actor string, defs ...task.Definition) error
	// ReportStatus commits a worker's report on an execution with its
	// audit event.
	ReportStatus(ctx context.Context, actor string, s record.Status) error
	// AppendLogs commits a worker's log lines on an execution (s.Logs;
	// s.Status is empty) to the status topic.
	AppendLogs(ctx context.Context, s record.Status) error
	// Trigger commits a command that fires the task host/name now, and
	// returns the fire id the engine gives that fire.
	Trigger(ctx context.Context, actor, host, name string) (fireID string, err error)
}

// Host is what the API asks of the console that serves it.
type Host interface {
	// Allow reports whether the request's principal has role; when not,
	// it answers 403 and audits the refusal.
	Allow(w http.ResponseWriter, r *http.Request, role auth.Role) bool
	// Audit writes an event of the console's own to the audit trail and
	// returns its id; "" when it could not be written (and was logged).
	Audit(r *http.Request, action, actor, object, outcome, detail string) string
	// Streaming lets an answer run as long as the client reads it: write
	// through what it returns.
	Streaming(w http.ResponseWriter) http.ResponseWriter
	// Abort logs a streamed answer (what) that failed part way and cuts
	// it short; it does nothing when err is nil or the client left.
	Abort(r *http.Request, what string, err error)
}

// Config is what the API serves from.
type Config struct {
	// Source is what it reads. Required.
	Source Source
	// Commander carries every write. Nil makes the API read-only: writes
	// answer 503.
	Commander Commander
	// Reviewer decides held files. Nil: those requests answer 503.
	Reviewer Reviewer
	// Topics are jobdrop's own topics, which no task may fire into but
	// the input topic.
	Topics record.Topics
	// Lists reads the lists' filters and pages. Required.
	Lists list.Reader
	// Clock is the clock. Defaults to the real clock.
	Clock clockwork.Clock
	// Host is the console serving the API. Required.
	Host Host
	// Log is where failures are logged. Defaults to discarding them.
	Log *slog.Logger
}

// Server serves the JSON API, light-scheduler's /schedulers and the
// synchronisation scheduler's /api/v1/tasks.
type Server struct {
	cfg   Config
	src   Source
	cmd   Commander
	lists list.Reader
	host  Host
	log   *slog.Logger
}

// New checks cfg and builds the API's server.
func New(cfg Config) (*Server, error) {
	if cfg.Source == nil || cfg.Host == nil || cfg.Lists.Clock == nil {
		return nil, errors.New("new API: a source, a host and a list reader are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, src: cfg.Source, cmd: cfg.Commander, lists: cfg.Lists, host: cfg.Host, log: cfg.Log}, nil
}

// Mux is where the API's routes are registered.
type Mux interface {
	HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request))
}

// Register registers every route of the API on mux.
func (s *Server) Register(mux Mux) {
	mux.HandleFunc("GET /api/summary", s.apiSummary)
	mux.HandleFunc("GET /api/files", s.apiFiles)
	mux.HandleFunc("GET /api/files/{id}", s.apiFile)
	mux.HandleFunc("GET /api/arrivals", s.apiArrivals)
	mux.HandleFunc("GET /api/tasks", s.apiTasks)
	mux.HandleFunc("GET /api/tasks/{key...}", s.apiTask)
	mux.HandleFunc("GET /api/executions", s.apiExecutions)
	mux.HandleFunc("GET /api/audit", s.apiAudit)
	mux.HandleFunc("GET /schedulers", s.getSchedulers)
	mux.HandleFunc("POST /schedulers", s.postScheduler)
	mux.HandleFunc("POST /api/tasks/{rest...}", s.postTasks)
	mux.HandleFunc("DELETE /api/tasks/{key...}", s.deleteTask)
	mux.HandleFunc("POST /api/executions/{fireId}/status", s.postStatus)
	mux.HandleFunc("POST /api/executions/{fireId}/logs", s.postLogs)
	mux.HandleFunc("GET /api/executions/{fireId}/logs", s.apiExecutionLogs)
	mux.HandleFunc("POST /api/v1/tasks", s.v1PostTask)
	mux.HandleFunc("GET /api/v1/tasks", s.v1ListTasks)
	mux.HandleFunc("GET /api/v1/tasks/{id}", s.v1GetTask)
	mux.HandleFunc("GET /api/v1/tasks/{id}/logs", s.v1TaskLogs)
	mux.HandleFunc("POST /api/files/{id}/apply", s.decideHeld(true))
	mux.HandleFunc("POST /api/files/{id}/reject", s.decideHeld(false))
}

// now is the server clock in UTC.
func (s *Server) now() time.Time { return s.cfg.Clock.Now().UTC() }

func (s *Server) allow(w http.ResponseWriter, r *http.Request, role auth.Role) bool {
	return s.host.Allow(w, r, role)
}

// WriteJSON answers v as indented JSON. When v cannot be encoded it
// answers 500 and returns the error, for the caller to log.
func WriteJSON(w http.ResponseWriter, v any) error {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		Error(w, http.StatusInternalServerError, "internal error")
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(body, '\n'))
	return nil
}

// Error answers status with {"error": msg}.
func Error(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	if err := WriteJSON(w, v); err != nil {
		s.log.Error("encode API answer", "path", r.URL.Path, "err", err)
	}
}

// apiFail answers an API request whose data could not be read.
func (s *Server) apiFail(w http.ResponseWriter, r *http.Request, err error) {
	if list.Refused(err) {
		Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if errors.Is(err, storetype.ErrNotFound) {
		Error(w, http.StatusNotFound, err.Error())
		return
	}
	if r.Context().Err() != nil {
		return
	}
	s.log.Error("read API data", "path", r.URL.Path, "err", err)
	Error(w, http.StatusInternalServerError, "internal error: see the server log")
}

// NonNil makes an empty list encode as [] rather than null.
func NonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// writePage answers an API list: the page's rows as a JSON array (never
// null), and where the page is in its headers (list.Headers).
func writePage[T any](s *Server, w http.ResponseWriter, r *http.Request, params []string, p storetype.Page[T], rows []T) {
	list.Headers(w, r, params, p)
	s.writeJSON(w, r, NonNil(rows))
}

// actor names who sends a command: the logged-in user; with anonymous
// access, "api" for API clients and "local" for the console's forms.
func actor(r *http.Request) string {
	p := auth.Who(r.Context())
	if p.Name == "local" && !isForm(r) {
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

// sendFailed answers a command Kafka did not take.
func (s *Server) sendFailed(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	s.log.Error("send command", "path", r.URL.Path, "err", err)
	Error(w, http.StatusServiceUnavailable, "the command could not be committed to Kafka; see the server log")
}

// writable answers 503 when the API has no commander.
func (s *Server) writable(w http.ResponseWriter) bool {
	if s.cmd == nil {
		Error(w, http.StatusServiceUnavailable, "this console is read-only")
		return false
	}
	return true
}

// FileKnown checks that the file a task filter names exists: a filter
// naming a file that does not is answered as not found rather than as
// an empty list.
func FileKnown(ctx context.Context, src interface {
	BatchByID(ctx context.Context, id string) (storetype.Batch, error)
}, f storetype.TaskFilter) error {
	if f.Batch == "" {
		return nil
	}
	if _, err := src.BatchByID(ctx, f.Batch); err != nil {
		return fmt.Errorf("file %s (the file's id, as its page shows): %w", f.Batch, err)
	}
	return nil
}
