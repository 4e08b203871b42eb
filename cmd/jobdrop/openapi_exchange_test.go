package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi-validator/schema_validation"
)

// exchange is one request the test sends.
type exchange struct {
	method, path string
	// user sends basic credentials of a console user (password: the name
	// backwards); password overrides it.
	user, password string
	// cookie sends a session.
	cookie *http.Cookie
	body   []byte
	// contentType of the body; JSON when there is a body and none.
	contentType string
	header      map[string]string
	// offContract marks a request that breaks the document on purpose (a
	// wrong value, a missing credential): its answer is validated, the
	// request is not.
	offContract bool
	// stream reads the answer only up to its first event (/events).
	stream bool
	// messageAdmin sends it to kafka-message-scheduler's admin REST, not
	// the console.
	messageAdmin bool
}

// answer is what came back.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the answer's body into v.
func (a answer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("answer %d %s: %v", a.status, a.body, err)
	}
}

// noRedirects is a client that shows redirects rather than following
// them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// request builds the request of x.
func (c *contract) request(ctx context.Context, x exchange) *http.Request {
	c.t.Helper()
	base := c.in.console
	if x.messageAdmin {
		base = c.in.messageAdmin
	}
	req, err := http.NewRequestWithContext(ctx, x.method, base+x.path, bytes.NewReader(x.body))
	if err != nil {
		c.t.Fatal(err)
	}
	if x.body == nil {
		req.Body = http.NoBody
		req.ContentLength = 0
	}
	if x.user != "" {
		pw := x.password
		if pw == "" {
			pw = reverse(x.user)
		}
		req.SetBasicAuth(x.user, pw)
	}
	if x.cookie != nil {
		req.AddCookie(x.cookie)
	}
	switch {
	case x.contentType != "":
		req.Header.Set("Content-Type", x.contentType)
	case x.body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range x.header {
		req.Header.Set(k, v)
	}
	return req
}

// do sends x, validates the exchange against the document and counts
// what it exercised.
func (c *contract) do(x exchange) answer {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := noRedirects.Do(c.request(ctx, x))
	if err != nil {
		c.t.Fatalf("%s %s: %v", x.method, x.path, err)
	}
	var body []byte
	if x.stream {
		// Up to the end of the first event, then hang up.
		br := bufio.NewReader(resp.Body)
		for !bytes.Contains(body, []byte("\n\n")) {
			line, err := br.ReadBytes('\n')
			body = append(body, line...)
			if err != nil {
				break
			}
		}
		cancel()
	} else if body, err = io.ReadAll(resp.Body); err != nil {
		c.t.Fatalf("%s %s: read the answer: %v", x.method, x.path, err)
	}
	resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header, body: body}
	c.validate(x, a)
	return a
}

// validate checks an answer, and the request unless it is off contract,
// against the document, and counts them.
func (c *contract) validate(x exchange, a answer) {
	t := c.t
	t.Helper()
	req := c.request(context.Background(), x)
	what := fmt.Sprintf("%s %s → %d", x.method, x.path, a.status)
	item, errs, template := paths.FindPath(req, c.model, c.opts)
	if item == nil || len(errs) > 0 {
		t.Errorf("%s: no documented operation: %v", what, errs)
		return
	}
	d := c.ops[x.method+" "+template]
	if d == nil {
		t.Errorf("%s: the document has no %s %s", what, x.method, template)
		return
	}
	resp := &http.Response{StatusCode: a.status, Header: a.header, Body: io.NopCloser(bytes.NewReader(a.body)), Request: req}
	if ok, verrs := c.v.ValidateHttpResponse(req, resp); !ok {
		for _, e := range verrs {
			t.Errorf("%s: the answer breaks the document: %s\n  body: %.600s", what, describeError(e.Message, e.Reason, e.SchemaValidationErrors), a.body)
		}
	}
	if !x.offContract {
		if ok, verrs := c.v.ValidateHttpRequest(c.request(context.Background(), x)); !ok {
			for _, e := range verrs {
				t.Errorf("%s: the request breaks the document: %s", what, describeError(e.Message, e.Reason, e.SchemaValidationErrors))
			}
		}
	}
	c.exchanges++
	status := strconv.Itoa(a.status)
	d.seen[status] = true
	if ref := d.shared[status]; genericAnswers[ref] {
		for _, o := range c.ops {
			for s, r := range o.shared {
				if r == ref {
					o.seen[s] = true
				}
			}
		}
	}
	// Who was let in, and who was refused for their role.
	role := roles[x.user]
	if x.cookie != nil && x.user == "" {
		role = "viewer" // the test's sessions are vera's
	}
	if x.password != "" {
		role = ""
	}
	switch {
	case role == "":
	case a.status == http.StatusForbidden && x.header["Origin"] == "":
		d.refused[role] = true
	case a.status != http.StatusUnauthorized && a.status != http.StatusForbidden && a.status != http.StatusTooManyRequests:
		d.answeredTo[role] = true
	}
}

// fallback sends x to a catch-all route and validates its answer against
// the component the document names for it.
func (c *contract) fallback(route string, x exchange) {
	t := c.t
	t.Helper()
	f, ok := c.fallbacks[route]
	if !ok {
		t.Fatalf("no documented fallback %s", route)
	}
	a := c.send(x)
	what := fmt.Sprintf("%s %s → %d", x.method, x.path, a.status)
	if a.status != f.Status {
		t.Errorf("%s: want %d, as x-jobdrop-fallbacks says", what, f.Status)
	}
	name := strings.TrimPrefix(f.Response, "#/components/responses/")
	r := c.model.Components.Responses.GetOrZero(name)
	if r == nil {
		t.Fatalf("fallback %s: no response %s", route, f.Response)
	}
	ct, _, _ := strings.Cut(a.header.Get("Content-Type"), ";")
	mt := r.Content.GetOrZero(ct)
	if mt == nil {
		t.Errorf("%s: content type %q, not one %s has", what, ct, f.Response)
	} else if ct == "application/json" {
		if ok, verrs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(mt.Schema.Schema(), a.body); !ok {
			for _, e := range verrs {
				t.Errorf("%s: %s", what, describeError(e.Message, e.Reason, e.SchemaValidationErrors))
			}
		}
	}
	c.exchanges++
	f.seen = true
	c.fallbacks[route] = f
}

// send sends x without validating it.
func (c *contract) send(x exchange) answer {
	c.t.Helper()
	resp, err := noRedirects.Do(c.request(context.Background(), x))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: body}
}

// want sends x and fails unless it answers status.
func (c *contract) want(status int, x exchange) answer {
	c.t.Helper()
	a := c.do(x)
	if a.status != status {
		c.t.Errorf("%s %s = %d, want %d\n%.400s", x.method, x.path, a.status, status, a.body)
	}
	return a
}

// covered fails the test for every documented operation, answer, role
// and fallback the test did not exercise, and says what it did.
func (c *contract) covered() {
	t := c.t
	t.Helper()
	var answers, seen int
	for _, key := range slices.Sorted(maps.Keys(c.ops)) {
		d := c.ops[key]
		if len(d.seen) == 0 {
			t.Errorf("%s is documented but the test never called it", key)
			continue
		}
		for _, s := range d.statuses {
			answers++
			if d.seen[s] {
				seen++
				continue
			}
			if unprovoked[key+" "+s] != "" || unprovoked[d.shared[s]] != "" {
				continue
			}
			t.Errorf("%s: the test never saw its documented %s answer", key, s)
		}
		if d.role == "" {
			continue
		}
		if !d.answeredTo[d.role] {
			t.Errorf("%s: no %s (its x-jobdrop-role) was let in", key, d.role)
		}
		if i := slices.Index(roleOrder, d.role); i > 0 && !d.refused[roleOrder[i-1]] {
			t.Errorf("%s: no %s was refused (x-jobdrop-role %s)", key, roleOrder[i-1], d.role)
		}
	}
	for route, f := range c.fallbacks {
		if !f.seen {
			t.Errorf("fallback %s: never exercised", route)
		}
	}
	t.Logf("OpenAPI contract: %d operations and %d fallbacks documented, %d routes served; %d exchanges validated; %d of %d documented answers seen",
		len(c.ops), len(c.fallbacks), len(c.in.routes), c.exchanges, seen, answers)
}

// form is an URL-encoded form body.
func form(kv ...string) []byte {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return []byte(v.Encode())
}

const formType = "application/x-www-form-urlencoded"

// multipartUpload is an upload form of the file name holding content,
// a dry run when dryRun.
func multipartUpload(name, content string, dryRun bool) (body []byte, contentType string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if name != "" {
		fw, _ := mw.CreateFormFile("file", name)
		fw.Write([]byte(content))
	}
	if dryRun {
		mw.WriteField("dryrun", "1")
	}
	mw.Close()
	return b.Bytes(), mw.FormDataContentType()
}
