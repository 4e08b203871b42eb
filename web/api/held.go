package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/field"
)

// Reviewer decides the files of sync folders held for review because they
// would delete too much of their source. cmd's pipeline implements it.
type Reviewer interface {
	// Apply injects the held file of batch id, whatever it deletes, as
	// actor did it.
	Apply(ctx context.Context, id, actor string) error
	// Reject moves the held file of batch id to failed/ beside reason.
	Reject(ctx context.Context, id, actor, reason string) error
}

// ErrNotHeld is what a Reviewer returns for a batch that has no held file
// (any more): decided by someone else already, or never held. The API
// answers 409.
var ErrNotHeld = errors.New("no held file")

// maxReason bounds a rejection's reason.
const maxReason = 1000

// decideHeld serves POST /api/files/{id}/apply and /reject. Applying a
// file creates and replaces definitions, which takes auth.DefineRole;
// rejecting it changes nothing that runs.
func (s *Server) decideHeld(apply bool) http.HandlerFunc {
	role := auth.Operator
	if apply {
		role = auth.DefineRole
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.allow(w, r, role) || !s.writable(w) {
			return
		}
		if s.cfg.Reviewer == nil {
			Error(w, http.StatusServiceUnavailable, "this node does not decide held files: it watches no folder")
			return
		}
		id := r.PathValue("id")
		var err error
		if apply {
			err = s.cfg.Reviewer.Apply(r.Context(), id, actor(r))
		} else {
			reason := ""
			if isForm(r) {
				reason = r.FormValue("reason")
			} else {
				var body struct {
					Reason string `json:"reason"`
				}
				if err := json.NewDecoder(r.Body).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
					Error(w, http.StatusBadRequest, `body: want {"reason": "..."}: `+err.Error())
					return
				}
				reason = body.Reason
			}
			reason = field.Clean(strings.TrimSpace(reason), maxReason)
			err = s.cfg.Reviewer.Reject(r.Context(), id, actor(r), reason)
		}
		switch {
		case errors.Is(err, ErrNotHeld):
			Error(w, http.StatusConflict, err.Error())
			return
		case err != nil:
			if r.Context().Err() != nil {
				return
			}
			s.log.Error("decide held file", "batch", id, "apply", apply, "err", err)
			Error(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		if isForm(r) {
			http.Redirect(w, r, auth.SafeNext(r.FormValue("back")), http.StatusSeeOther)
			return
		}
		verb := "rejected"
		if apply {
			verb = "applied"
		}
		s.writeJSON(w, r, map[string]string{"batch": id, "outcome": verb})
	}
}
