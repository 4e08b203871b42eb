package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/jonboulle/clockwork"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/jobdrop/jobdrop/internal/pace"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web/api"
	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/list"
)

//go:embed static
var staticFiles embed.FS

// Source is what the console reads: files, tasks, executions and the
// audit trail. Lookups by id return an error wrapping
// storetype.ErrNotFound when there is no such row. The store implements
// it.
type Source interface {
	// What the API reads.
	api.Source
	EachExecution(ctx context.Context, f storetype.ExecutionFilter, fn func(storetype.Execution) error) error
	AuditByBatch(ctx context.Context, batchID string, limit int) ([]storetype.AuditEvent, error)
	EachAudit(ctx context.Context, f storetype.AuditFilter, fn func(storetype.AuditEvent) error) error
	AuditActions(ctx context.Context) ([]string, error)
	ActivitySince(ctx context.Context, since time.Time) (storetype.Activity, error)
	ActivityChart(ctx context.Context, from, to time.Time, step time.Duration) (storetype.ActivityChart, error)
	TaskSchedules(ctx context.Context, before time.Time, fn func(storetype.TaskSchedule) error) error
	// Chains: what a task follows and what follows it, the chains of a
	// file's or a host's tasks, and the run an execution belongs to.
	TaskChain(ctx context.Context, key string, limit int) (storetype.TaskChain, error)
	ChainGraph(ctx context.Context, f storetype.ChainGraphFilter) (storetype.ChainGraph, error)
	ExecutionRun(ctx context.Context, fireID string, limit int) (storetype.ExecutionRun, error)
}

// Config tunes the console.
type Config struct {
	// Title names the console in the header and page titles. Defaults to
	// "jobdrop".
	Title string
	// ListLimit is the rows of a page of every list, pages and API alike,
	// unless a request asks for another number (?limit=, at most 1000).
	// Defaults to 50; at most 1000.
	ListLimit int
	// Clock is the clock relative times ("in 4m") are counted from.
	// Defaults to the real clock.
	Clock clockwork.Clock
	// Topics are jobdrop's own topics, which no task may fire into but
	// the input topic. Defaults to the default names.
	Topics record.Topics
	// Commander carries every write to Kafka. Nil makes the console
	// read-only: writes answer 503.
	Commander Commander
	// Reviewer decides held files (Apply, Reject). Nil: those requests
	// answer 503.
	Reviewer api.Reviewer
	// Differ says what a file would change of the tasks that run now, for
	// the upload's dry run and POST /api/diff. Nil: neither shows a diff.
	Differ Differ
	// Users are the local accounts. With none, Anonymous is implied.
	Users []auth.User
	// Anonymous lets everyone in as an admin named "local": only for a
	// console listening on a loopback address (cmd refuses to start
	// otherwise). Not with Users.
	Anonymous bool
	// SecureCookies marks the session cookie Secure, for a console
	// served over TLS.
	SecureCookies bool
	// Hosts are the names (without port) the console answers to, besides
	// localhost and IP addresses, which it always answers to: a request
	// naming any other Host is refused with 421 before any handler runs,
	// so that no web page can reach the console by pointing a name of its
	// own at it (DNS rebinding).
	Hosts []string
	// TrustedProxies are the addresses of reverse proxies in front of the
	// console: of a request from one of them, the client's address (for
	// login throttling and the audit trail) is read from X-Forwarded-For.
	TrustedProxies []netip.Prefix
	// Timeouts bound slow clients; see HTTPServer.
	Timeouts Timeouts
	// Changes returns a channel closed at the next change of the data:
	// open pages refresh when it closes. Nil: pages do not refresh.
	Changes func() <-chan struct{}
	// Late, if set, says how hard this node's scheduler's fires press
	// now (scheduler.Engine.Pressure). While they press longer than
	// Pacing.RecorderLateness, the dashboard's timeline and charts,
	// which read every task, wait to be computed again, and a
	// computation under way waits between two tasks, at most
	// Pacing.MaxWait plus Pacing.Ahead each time: a burst of fires due at the top of a
	// minute comes when they are due too.
	Late   func() time.Duration
	Pacing pace.Pacing
	// Folders are the watched folders; originals and error reports are
	// downloaded from their archive/ and failed/ subfolders only.
	Folders []string
	// UploadDir is where uploaded files are dropped, atomically, for the
	// watcher to inject. Empty: no upload.
	UploadDir string
	// Uploader, if set, learns who uploads each file, so that its
	// injection is audited under that user rather than the watcher.
	Uploader Uploader
	// NameProblem, if set, says why the watcher would never take a file
	// of this name ("" when it would): such an upload is refused with the
	// reason rather than left in the folder.
	NameProblem func(name string) string
	// Preview converts a file without injecting it, for the upload's
	// dry run, calling emit for every row. Nil: no dry run.
	Preview Preview
	// PreviewFires is how many next fires a dry run and a task page
	// show. Defaults to 5.
	PreviewFires int
	// DryRuns is how many dry runs (of uploads, and POST /api/diff) may
	// run at once; more are answered 503. Defaults to 2.
	DryRuns int
	// Metrics serves GET /metrics, open without login like /healthz and
	// /readyz. Nil: /metrics answers 404.
	Metrics http.Handler
	// Ready checks, for GET /readyz, whether the node is ready. Nil: ready
	// whenever the console serves.
	Ready Readiness
	// Notice, if set, returns a warning every page shows above its
	// content, such as the data being rebuilt; empty: none. Pages show a
	// notice that comes or goes at their next live refresh.
	Notice func() string
	// Queues, if set, says how the files of each watched folder drain,
	// for the dashboard. Nil: it lists the folders alone.
	Queues func() []FolderQueue
	// SchemaRegistry, if set, are the routes of a schema registry
	// ("GET /schemas/ids/{id}": handler), served under /schema-registry
	// (schemaregistry.go).
	SchemaRegistry map[string]http.Handler
}

// Preview converts the file at path, dropped as name, calling emit with
// every row's line, definition and error (nil for a valid row).
type Preview func(ctx context.Context, name, path string, emit func(line int, def task.Definition, err error) error) error

// Uploader learns who uploads each file through the console. cmd's
// pipeline implements it.
type Uploader interface {
	// Uploading says that actor drops the file at path (UploadDir joined
	// with its name) now; undo withdraws it when the drop fails.
	Uploading(path, actor string) (undo func())
}

// Server serves the console and its JSON API.
type Server struct {
	cfg     Config
	src     Source
	cmd     Commander
	auth    *auth.Authenticator
	events  *events
	log     *slog.Logger
	handler http.Handler
	// hosts are the configured Hosts, lower case.
	hosts map[string]bool
	// hostRefusals logs refused Host names, at most once a minute.
	hostRefusals rate.Sometimes
	// dryRuns bounds the dry runs that run at once.
	dryRuns *semaphore.Weighted
	// glance holds the dashboard's timeline and charts; see Run.
	glance glance
	// lists reads the lists' filters and pages from their URLs.
	lists list.Reader
	// routes are the routes registered; see Routes.
	routes *routes
}

// New validates cfg, applies its defaults and builds the routes.
func New(cfg Config, src Source, log *slog.Logger) (*Server, error) {
	if src == nil {
		return nil, errors.New("new console: nil source")
	}
	if cfg.Title == "" {
		cfg.Title = "jobdrop"
	}
	switch {
	case cfg.ListLimit < 0:
		return nil, fmt.Errorf("new console: negative list limit %d", cfg.ListLimit)
	case cfg.ListLimit == 0:
		cfg.ListLimit = 50
	case cfg.ListLimit > list.MaxLimit:
		return nil, fmt.Errorf("new console: list limit %d is above %d", cfg.ListLimit, list.MaxLimit)
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	cfg.Topics = cfg.Topics.WithDefaults()
	cfg.Pacing = cfg.Pacing.WithDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.PreviewFires <= 0 {
		cfg.PreviewFires = 5
	}
	if cfg.DryRuns <= 0 {
		cfg.DryRuns = 2
	}
	cfg.Timeouts = cfg.Timeouts.withDefaults()
	if len(cfg.Users) == 0 && !cfg.Anonymous {
		// The zero Config keeps serving tests and tools on loopback.
		cfg.Anonymous = true
	}
	a, err := auth.New(auth.Config{Users: cfg.Users, Anonymous: cfg.Anonymous, SecureCookies: cfg.SecureCookies, Clock: cfg.Clock})
	if err != nil {
		return nil, fmt.Errorf("new console: %w", err)
	}
	s := &Server{cfg: cfg, src: src, cmd: cfg.Commander, auth: a, events: newEvents(cfg.Changes), log: log.With("component", "console"),
		hosts: map[string]bool{}, hostRefusals: rate.Sometimes{Interval: time.Minute}, dryRuns: semaphore.NewWeighted(int64(cfg.DryRuns))}
	s.lists = list.Reader{Limit: cfg.ListLimit, Clock: cfg.Clock}
	for _, h := range cfg.Hosts {
		s.hosts[strings.TrimSuffix(strings.ToLower(h), ".")] = true
	}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, fmt.Errorf("new console: %w", err)
	}

	apis, err := api.New(api.Config{Source: src, Commander: cfg.Commander, Reviewer: cfg.Reviewer, Topics: cfg.Topics,
		Lists: s.lists, Clock: cfg.Clock, Host: apiHost{s}, Log: s.log})
	if err != nil {
		return nil, fmt.Errorf("new console: %w", err)
	}
	mux := s.newRoutes()
	mux.Handle("GET /{$}", dashboardHandler{s})
	mux.Handle("GET /files", filesHandler{s})
	mux.Handle("GET /files/{id}", fileHandler{s})
	mux.Handle("GET /tasks", tasksHandler{s})
	mux.Handle("GET /tasks/{key...}", taskHandler{s})
	mux.Handle("GET /hosts/{host}", hostHandler{s})
	mux.Handle("GET /executions", executionsHandler{s})
	mux.Handle("GET /executions/{fireId}", executionHandler{s})
	mux.Handle("GET /audit", auditHandler{s})
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))

	apis.Register(mux)
	mux.HandleFunc("GET /login", s.loginForm)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)
	mux.HandleFunc("GET /events", s.serveEvents)
	mux.HandleFunc("GET /audit/export.csv", s.exportAuditCSV)
	mux.HandleFunc("GET /audit/export.xlsx", s.exportAuditXLSX)
	mux.HandleFunc("GET /executions/export.csv", s.exportExecutionsCSV)
	mux.HandleFunc("GET /executions/export.xlsx", s.exportExecutionsXLSX)
	// Task keys hold a "/": no task is called export.csv.
	mux.HandleFunc("GET /tasks/export.csv", s.exportTasksCSV)
	mux.HandleFunc("GET /tasks/export.xlsx", s.exportTasksXLSX)
	mux.HandleFunc("GET /files/{id}/original", s.downloadOriginal)
	mux.HandleFunc("GET /files/{id}/errors.txt", s.downloadErrors)
	mux.HandleFunc("GET /upload", s.uploadForm)
	mux.HandleFunc("POST /upload", s.upload)

	mux.HandleFunc("POST /api/diff", s.postDiff)
	mux.HandleFunc("GET /api/activity", s.apiActivity)
	mux.HandleFunc("GET /api/timeline", s.apiTimeline)
	mux.HandleFunc("POST /settings/timezone", s.setZone)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /metrics", s.metrics)
	mux.HandleFunc("GET "+openAPIPath, s.serveOpenAPI)
	s.routeSchemaRegistry(mux)
	mux.HandleFunc("GET /api/", func(w http.ResponseWriter, r *http.Request) {
		api.Error(w, http.StatusNotFound, "no such API route: "+r.URL.Path)
	})
	mux.Handle("GET /", notFoundHandler{s})

	s.handler = secureHeaders(s.checkHost(s.crossOrigin(s.requireLogin(s.bounded(mux)))))
	return s, nil
}

// Handler serves every route of the console and the API.
func (s *Server) Handler() http.Handler { return s.handler }

// secureHeaders forbids what the console never needs: inline or foreign
// scripts, framing, content sniffing, resources from elsewhere, and
// keeping any answer but a static file in a browser's or proxy's cache.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		if isNoStore(r.URL.Path) {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// page renders a view inside the layout. It renders into a buffer first so
// a failure yields a clean error page, not half a page.
func (s *Server) page(w http.ResponseWriter, r *http.Request, status int, title string, nav string, view templ.Component) {
	var buf bytes.Buffer
	live := ""
	if r.Method == http.MethodGet && status == http.StatusOK && nav != "" && nav != "upload" && s.cfg.Changes != nil {
		live = r.URL.RequestURI()
	}
	notice := ""
	if s.cfg.Notice != nil {
		notice = s.cfg.Notice()
	}
	r = withZone(r)
	if err := layout(s.cfg.Title, title, nav, auth.Who(r.Context()), live, notice, zoneOf(r.Context()), r.URL.RequestURI(), view).Render(r.Context(), &buf); err != nil {
		s.log.Error("render page", "path", r.URL.Path, "err", err)
		http.Error(w, "internal error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// fail answers a request whose data could not be read: not found, or an
// internal error logged here, once.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if list.Refused(err) {
		s.badRequest(w, r, err.Error())
		return
	}
	if errors.Is(err, storetype.ErrNotFound) {
		s.page(w, r, http.StatusNotFound, "Not found", "", messageView("Not found", "There is nothing at "+r.URL.Path+"."))
		return
	}
	if r.Context().Err() != nil {
		return // the client went away
	}
	s.log.Error("read console data", "path", r.URL.Path, "err", err)
	s.page(w, r, http.StatusInternalServerError, "Error", "", messageView("Something went wrong", "The data for this page could not be read; the error is in the server log."))
}

// badRequest answers a request with a wrong parameter.
func (s *Server) badRequest(w http.ResponseWriter, r *http.Request, msg string) {
	s.page(w, r, http.StatusBadRequest, "Bad request", "", messageView("Bad request", msg))
}

type notFoundHandler struct{ s *Server }

// ServeHTTP answers every unknown path with the not-found page.
func (h notFoundHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.s.fail(w, r, storetype.ErrNotFound)
}

// writeJSON answers v as JSON, as the API does.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	if err := api.WriteJSON(w, v); err != nil {
		s.log.Error("encode API answer", "path", r.URL.Path, "err", err)
	}
}

// apiFail answers an API request whose data could not be read.
func (s *Server) apiFail(w http.ResponseWriter, r *http.Request, err error) {
	if list.Refused(err) {
		api.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if errors.Is(err, storetype.ErrNotFound) {
		api.Error(w, http.StatusNotFound, err.Error())
		return
	}
	if r.Context().Err() != nil {
		return
	}
	s.log.Error("read API data", "path", r.URL.Path, "err", err)
	api.Error(w, http.StatusInternalServerError, "internal error: see the server log")
}

// now is the server clock in UTC.
func (s *Server) now() time.Time { return s.cfg.Clock.Now().UTC() }

// apiHost is what the API asks of the console.
type apiHost struct{ s *Server }

var _ api.Host = apiHost{}

func (h apiHost) Allow(w http.ResponseWriter, r *http.Request, role auth.Role) bool {
	return h.s.allow(w, r, role)
}

func (h apiHost) Audit(r *http.Request, action, actor, object, outcome, detail string) string {
	return h.s.auditID(r, action, actor, object, outcome, detail)
}

func (h apiHost) Streaming(w http.ResponseWriter) http.ResponseWriter { return h.s.streaming(w) }

func (h apiHost) Abort(r *http.Request, what string, err error) { h.s.abortAnswer(r, what, err) }
