package schemaregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/jobdrop/jobdrop/internal/avro"
)

// apiError is an answer of Confluent's registry to a request it refuses:
// pkg/sr and Confluent's clients read the code.
type apiError struct {
	status  int
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Message }

var (
	errSubjectNotFound = &apiError{http.StatusNotFound, 40401, "Subject not found."}
	errVersionNotFound = &apiError{http.StatusNotFound, 40402, "Version not found."}
	errSchemaNotFound  = &apiError{http.StatusNotFound, 40403, "Schema not found"}
)

func invalidSchema(why string) *apiError {
	return &apiError{http.StatusUnprocessableEntity, 42201, "Invalid schema: " + why}
}

// contentType is what Confluent's registry answers with.
const contentType = "application/vnd.schemaregistry.v1+json"

// maxSchema bounds a request's body: light-scheduler's schemas are under
// 2 KB.
const maxSchema = 1 << 20

// Routes are the registry's routes ("GET /schemas/ids/{id}"), each with
// its handler, to be served under a prefix: a route that writes is a
// POST, save POST /subjects/{subject}, which only looks up.
func (r *Registry) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /subjects":                              r.handle(r.listSubjects),
		"GET /subjects/{subject}/versions":           r.handle(r.listVersions),
		"POST /subjects/{subject}/versions":          r.handle(r.postVersion),
		"GET /subjects/{subject}/versions/{version}": r.handle(r.getVersion),
		"POST /subjects/{subject}":                   r.handle(r.postLookup),
		"GET /schemas/ids/{id}":                      r.handle(r.getSchema),
		"GET /schemas/ids/{id}/versions":             r.handle(r.getUsages),
	}
}

// Handler serves Routes at the root, answering others as Confluent's
// registry does.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	for p, h := range r.Routes() {
		mux.Handle(p, h)
	}
	mux.Handle("/", r.handle(func(*http.Request) (any, error) {
		return nil, &apiError{http.StatusNotFound, 404, "HTTP 404 Not Found"}
	}))
	return mux
}

// Client is a pkg/sr client of this registry within the process, through
// no network and no login: what jobdrop itself uses.
func (r *Registry) Client() (*sr.Client, error) {
	return sr.NewClient(sr.URLs("http://schema-registry.invalid"), sr.HTTPClient(&http.Client{Transport: inProcess{r.Handler()}}))
}

// inProcess is a transport that serves requests with a handler.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	t.h.ServeHTTP(w, req)
	return w.Result(), nil
}

// handle answers what fn returns as JSON, or its error as Confluent's
// registry does.
func (r *Registry) handle(fn func(*http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		v, err := fn(req)
		status := http.StatusOK
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				r.log.Error("schema registry request failed", "method", req.Method, "path", req.URL.Path, "err", err)
				ae = &apiError{http.StatusInternalServerError, 50001, "Error in the backend data store: " + err.Error()}
			}
			status, v = ae.status, ae
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	})
}

func (r *Registry) listSubjects(*http.Request) (any, error) { return r.subjectNames(), nil }

func (r *Registry) listVersions(req *http.Request) (any, error) {
	vs, ok := r.versions(req.PathValue("subject"))
	if !ok {
		return nil, errSubjectNotFound
	}
	return vs, nil
}

func (r *Registry) getVersion(req *http.Request) (any, error) {
	s := req.PathValue("version")
	n, err := strconv.Atoi(s)
	switch {
	case s == "latest":
		n = -1
	case err != nil || n == 0 || n < -1:
		return nil, &apiError{http.StatusUnprocessableEntity, 42202,
			fmt.Sprintf("The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", s)}
	}
	return r.version(req.PathValue("subject"), n)
}

func (r *Registry) getSchema(req *http.Request) (any, error) {
	text, ok := r.schema(idOf(req))
	if !ok {
		return nil, errSchemaNotFound
	}
	return struct {
		Schema string `json:"schema"`
	}{text}, nil
}

func (r *Registry) getUsages(req *http.Request) (any, error) {
	usages, ok := r.usages(idOf(req))
	if !ok {
		return nil, errSchemaNotFound
	}
	return usages, nil
}

// idOf is the schema id a request's path names; 0, which no schema has,
// when it names none.
func idOf(req *http.Request) int {
	id, _ := strconv.Atoi(req.PathValue("id"))
	return id
}

func (r *Registry) postVersion(req *http.Request) (any, error) {
	text, err := schemaOf(req)
	if err != nil {
		return nil, err
	}
	id, err := r.register(req.Context(), req.PathValue("subject"), text)
	if err != nil {
		return nil, err
	}
	return struct {
		ID int `json:"id"`
	}{id}, nil
}

func (r *Registry) postLookup(req *http.Request) (any, error) {
	text, err := schemaOf(req)
	if err != nil {
		return nil, err
	}
	return r.lookup(req.PathValue("subject"), text)
}

// schemaOf reads the schema a request's body holds: Avro, referring to
// no other.
func schemaOf(req *http.Request) (string, error) {
	var body struct {
		Schema     string            `json:"schema"`
		SchemaType string            `json:"schemaType"`
		References []json.RawMessage `json:"references"`
	}
	b, err := io.ReadAll(http.MaxBytesReader(nil, req.Body, maxSchema))
	if err != nil {
		return "", &apiError{http.StatusRequestEntityTooLarge, 413, fmt.Sprintf("the request is over %d bytes", maxSchema)}
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return "", &apiError{http.StatusUnprocessableEntity, 422, "Unrecognized request body: " + err.Error()}
	}
	switch {
	case body.SchemaType != "" && !strings.EqualFold(body.SchemaType, "AVRO"):
		return "", invalidSchema("schema type " + body.SchemaType + ": this registry holds Avro schemas only")
	case len(body.References) > 0:
		return "", invalidSchema("schema references are not supported here")
	case strings.TrimSpace(body.Schema) == "":
		return "", invalidSchema("empty schema")
	}
	if err := avro.Valid(body.Schema); err != nil {
		return "", invalidSchema(err.Error())
	}
	return body.Schema, nil
}
