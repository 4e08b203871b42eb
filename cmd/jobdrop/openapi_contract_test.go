package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// contract is the console's OpenAPI document, as the node serves it, and
// what a test did with it: every exchange is validated against it, and
// each operation and answer it describes is counted as exercised.
type contract struct {
	t     *testing.T
	in    *instance
	model *v3.Document
	v     validator.Validator
	opts  *config.ValidationOptions
	// raw is the document as plain JSON, for what the model does not
	// say simply: the x-jobdrop extensions, and which answers are shared
	// components.
	raw openAPIRaw
	// ops are the documented operations by "METHOD /path".
	ops map[string]*documented
	// fallbacks are the documented catch-all routes, by route.
	fallbacks map[string]fallback
	// exchanges counts the answers validated.
	exchanges int
}

// openAPIRaw is what the test reads of the document as JSON.
type openAPIRaw struct {
	Paths     map[string]map[string]json.RawMessage `json:"paths"`
	Fallbacks []fallback                            `json:"x-jobdrop-fallbacks"`
}

// fallback is a catch-all route the document describes apart from its
// operations: OpenAPI paths have no prefix patterns.
type fallback struct {
	Route    string `json:"route"`
	Status   int    `json:"status"`
	Response string `json:"response"`
	seen     bool
}

// documented is one operation of the document and what the test saw of
// it.
type documented struct {
	key   string
	route string
	role  string
	// shared maps a status to the component its answer refers to, when it
	// does; answers of a few generic components count as exercised once
	// seen on any operation (see genericAnswers).
	shared map[string]string
	// statuses are the documented statuses; seen those answered.
	statuses []string
	seen     map[string]bool
	// listener is where the operation is served when not on the
	// console's address (x-jobdrop-listener).
	listener string
	// answeredTo holds the roles of the users whose request was let in
	// (neither 401, 403 nor 429), and refused those answered 403 for
	// their role.
	answeredTo, refused map[string]bool
}

// genericAnswers are the shared answers that any operation may give for a
// reason of the whole console, not of its own: seen once, on any
// operation, they count for all.
var genericAnswers = map[string]bool{
	"#/components/responses/Unauthorized":    true,
	"#/components/responses/TooManyAttempts": true,
	"#/components/responses/Forbidden":       true,
	"#/components/responses/Unavailable":     true,
	"#/components/responses/TooLarge":        true,
	"#/components/responses/LoginRedirect":   true,
}

// unprovoked are the documented answers this test does not bring about,
// each with why. Any other answer not seen fails the test.
var unprovoked = map[string]string{
	"#/components/responses/Unavailable": "Kafka refusing a command, a read-only console or a password check waiting its turn: the faults tests cover those",
	"GET /readyz 503":                    "the node is ready before the test asks; TestReadiness covers the checks",
	"GET /metrics 404":                   "a node always serves metrics; only a console built without them answers 404",
	"POST /api/diff 503":                 "two dry runs at once, or a node watching no folder",
	"POST /upload 503":                   "two dry runs at once, or a node watching no folder",
	"POST /api/tasks/{action} 409":       "a live task whose definition the console does not hold: not made by any path a client has",
	"GET /api/timeline 503":              "before the first computation only, which a node starts as it starts",
	"GET /liveness 500":                  "schedules not being read: before the node joins the group, or with the brokers out of reach",
	"GET /schedules 503":                 "the node's view unreadable: TestDatabaseDeletedWhileRunningIsRebuilt deletes it",
}

// roles are the console users of consoleUsers, by name.
var roles = map[string]string{"vera": "viewer", "otto": "operator", "ada": "admin"}

// roleOrder ranks the roles.
var roleOrder = []string{"viewer", "operator", "admin"}

// loadContract reads the document the node serves, checks that it is
// valid OpenAPI 3.1, that it describes every route the console registers
// and no other, and makes the validator.
func loadContract(t *testing.T, in *instance) *contract {
	t.Helper()
	resp, err := http.Get(in.console + "/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/openapi.json without login = %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	doc, err := libopenapi.NewDocument(body)
	if err != nil {
		t.Fatalf("the OpenAPI document does not parse: %v", err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Errorf("OpenAPI version %q, want 3.1.0", v)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("the OpenAPI document does not build: %v", err)
	}
	c := &contract{t: t, in: in, model: &m.Model, ops: map[string]*documented{}, fallbacks: map[string]fallback{}}
	c.opts = config.NewValidationOptions(config.WithFormatAssertions())
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	c.v = v
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("the document is not valid OpenAPI 3.1: %s", describeError(e.Message, e.Reason, e.SchemaValidationErrors))
		}
		t.FailNow()
	}
	if err := json.Unmarshal(body, &c.raw); err != nil {
		t.Fatal(err)
	}
	c.inventory()
	return c
}

// inventory lists the documented operations and checks them against the
// routes the console registers.
func (c *contract) inventory() {
	t := c.t
	documentedRoutes, adminRoutes := map[string]bool{}, map[string]bool{}
	for path, item := range c.raw.Paths {
		for method, rawOp := range item {
			if !slices.Contains([]string{"get", "put", "post", "delete", "patch", "head", "options"}, method) {
				continue
			}
			var op struct {
				Route     string                     `json:"x-jobdrop-route"`
				Listener  string                     `json:"x-jobdrop-listener"`
				Role      string                     `json:"x-jobdrop-role"`
				Security  *[]map[string][]string     `json:"security"`
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(rawOp, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			key := strings.ToUpper(method) + " " + path
			d := &documented{key: key, route: op.Route, role: op.Role, shared: map[string]string{}, seen: map[string]bool{},
				answeredTo: map[string]bool{}, refused: map[string]bool{}}
			if op.Route == "" {
				t.Errorf("%s names no route (x-jobdrop-route)", key)
			}
			public := op.Security != nil && len(*op.Security) == 0
			if public == (op.Role != "") {
				t.Errorf("%s: open without login (security: []) or with a role (x-jobdrop-role %q), not both nor neither", key, op.Role)
			}
			if op.Role != "" && !slices.Contains(roleOrder, op.Role) {
				t.Errorf("%s: x-jobdrop-role %q", key, op.Role)
			}
			for status, r := range op.Responses {
				d.statuses = append(d.statuses, status)
				var ref struct {
					Ref string `json:"$ref"`
				}
				if json.Unmarshal(r, &ref) == nil && ref.Ref != "" {
					d.shared[status] = ref.Ref
				}
			}
			slices.Sort(d.statuses)
			c.ops[key] = d
			if op.Listener != "" {
				// Served on an address of its own, not the console's.
				if op.Listener != "message_scheduler.listen" {
					t.Errorf("%s: x-jobdrop-listener %q, want message_scheduler.listen", key, op.Listener)
				}
				d.listener = op.Listener
				adminRoutes[op.Route] = true
				continue
			}
			documentedRoutes[op.Route] = true
		}
	}
	for _, f := range c.raw.Fallbacks {
		c.fallbacks[f.Route] = f
		documentedRoutes[f.Route] = true
	}
	registered := map[string]bool{}
	for _, r := range c.in.routes {
		registered[r] = true
		if !documentedRoutes[r] {
			t.Errorf("the console serves %q, which the OpenAPI document does not describe (web/openapi.json: an operation's x-jobdrop-route, or x-jobdrop-fallbacks)", r)
		}
	}
	if len(registered) == 0 {
		t.Fatal("the node said no routes")
	}
	for r := range documentedRoutes {
		if !registered[r] {
			t.Errorf("the OpenAPI document describes %q, which the console does not serve", r)
		}
	}
	if !maps.Equal(adminRoutes, setOf(c.in.messageRoutes)) {
		t.Errorf("the document describes %v on message_scheduler.listen; its admin REST serves %v", slices.Sorted(maps.Keys(adminRoutes)), c.in.messageRoutes)
	}
}

func setOf(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// describeError says what a validation found.
func describeError(msg, reason string, schemaErrs []*liberrors.SchemaValidationFailure) string {
	s := msg + ": " + reason
	for _, e := range schemaErrs {
		s += fmt.Sprintf("\n    at %s (%s): %s", e.FieldPath, e.KeywordLocation, e.Reason)
	}
	return s
}
