package web

import (
	_ "embed"
	"net/http"
	"slices"
)

// openAPIDocument is the OpenAPI 3.1 document of every route the console
// serves, written by hand. cmd/jobdrop's TestOpenAPIContract drives every
// operation it describes against a running node and validates each answer
// against it, and fails on a route served here that it does not describe,
// so that it says what the code does.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPIPath serves the document. It answers without login, like the
// probes (see opsPaths): it tells the shape of the API, the same for every
// node and published with the source, and nothing of any task, file or
// user; client generators and contract checkers fetch it before they hold
// credentials.
const openAPIPath = "/api/openapi.json"

// serveOpenAPI answers the OpenAPI document.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPIDocument)
}

// routes is a ServeMux that remembers the patterns registered on it, so
// that the server can say which routes it serves.
type routes struct {
	*http.ServeMux
	patterns []string
}

// newRoutes is the console's ServeMux; Routes lists what is registered on
// it.
func (s *Server) newRoutes() *routes {
	s.routes = &routes{ServeMux: http.NewServeMux()}
	return s.routes
}

// Handle registers pattern as http.ServeMux does and remembers it.
func (m *routes) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

// HandleFunc registers pattern as http.ServeMux does and remembers it.
func (m *routes) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.HandleFunc(pattern, h)
}

// Routes lists the patterns the console serves, as registered on its
// ServeMux ("GET /api/tasks/{key...}"), in the order they were.
func (s *Server) Routes() []string { return slices.Clone(s.routes.patterns) }
