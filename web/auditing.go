package web

import (
	"context"
	"net/http"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/web/field"
)

// audit writes one event of the console's own (a refusal, a login) to
// the audit trail. It outlives the request: a client that hangs up does
// not erase what it did. Whatever a client sent is in its fields, so each
// is cleaned and bounded: no client makes a record large.
func (s *Server) audit(r *http.Request, action, actor, object, outcome, detail string) {
	s.auditBatch(r, action, actor, object, outcome, detail, nil)
}

// auditBatch is audit of an event about the file of batch b.
func (s *Server) auditBatch(r *http.Request, action, actor, object, outcome, detail string, b *record.Batch) {
	s.auditEvent(r, action, actor, object, outcome, detail, b)
}

// auditID is audit, returning the event's id; "" when it could not be
// written.
func (s *Server) auditID(r *http.Request, action, actor, object, outcome, detail string) string {
	return s.auditEvent(r, action, actor, object, outcome, detail, nil)
}

// auditEvent writes the event and returns its id; "" when it could not be
// written, which it logs.
func (s *Server) auditEvent(r *http.Request, action, actor, object, outcome, detail string, b *record.Batch) string {
	if s.cmd == nil {
		return ""
	}
	a := record.NewAudit(s.cfg.Clock.Now(), field.Clean(actor, field.MaxName), action, field.Clean(object, field.MaxName), outcome)
	a.Detail, a.Batch = field.Clean(detail, field.MaxDetail), b
	if err := s.cmd.Audit(context.WithoutCancel(r.Context()), a); err != nil {
		s.log.Error("audit", "action", action, "path", r.URL.Path, "err", err)
		return ""
	}
	return a.ID
}
