package web

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/jobdrop/jobdrop/web/auth"
)

// schemaRegistryPath is where the console serves the schema registry of
// Config.SchemaRegistry.
const schemaRegistryPath = "/schema-registry"

// routeSchemaRegistry registers the schema registry's routes under
// schemaRegistryPath. Producers log in as any API client does, with HTTP
// basic credentials of a console user (Confluent's clients:
// basic.auth.credentials.source=USER_INFO); pkg/sr: sr.BasicAuth): a
// viewer reads and looks up schemas, registering one takes the role that
// defines tasks, since the schema says how commands are read.
func (s *Server) routeSchemaRegistry(mux *routes) {
	for _, pattern := range slices.Sorted(maps.Keys(s.cfg.SchemaRegistry)) {
		method, path, _ := strings.Cut(pattern, " ")
		role := auth.Viewer
		if method == http.MethodPost && strings.HasSuffix(path, "/versions") {
			role = auth.DefineRole
		}
		h := s.cfg.SchemaRegistry[pattern] // reads only its path values
		mux.HandleFunc(method+" "+schemaRegistryPath+path, func(w http.ResponseWriter, r *http.Request) {
			if s.allow(w, r, role) {
				h.ServeHTTP(w, r)
			}
		})
	}
}
