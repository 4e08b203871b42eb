package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/jobdrop/jobdrop/internal/record"
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
			s.writeJSONError(w, http.StatusServiceUnavailable, "this node does not decide held files: it watches no folder")
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
					s.writeJSONError(w, http.StatusBadRequest, `body: want {"reason": "..."}: `+err.Error())
					return
				}
				reason = body.Reason
			}
			reason = field.Clean(strings.TrimSpace(reason), maxReason)
			err = s.cfg.Reviewer.Reject(r.Context(), id, actor(r), reason)
		}
		switch {
		case errors.Is(err, ErrNotHeld):
			s.writeJSONError(w, http.StatusConflict, err.Error())
			return
		case err != nil:
			if r.Context().Err() != nil {
				return
			}
			s.log.Error("decide held file", "batch", id, "apply", apply, "err", err)
			s.writeJSONError(w, http.StatusServiceUnavailable, err.Error())
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

// Differ says what the file at path, dropped as name into the watched
// folder (the first when empty), would change of the tasks that run now: the counts and
// every change, one per line. A file with invalid rows answers an error
// whose message lists them.
type Differ func(ctx context.Context, folder, name, path string) (d record.Diff, lines []string, err error)

// diffAnswer is the answer of POST /api/diff.
type diffAnswer struct {
	File string `json:"file"`
	record.Diff
	Lines []string `json:"lines"`
}

// postDiff serves POST /api/diff?name=NAME[&folder=DIR]: the body is a
// file, and the answer what it would change if dropped into the watched
// folder (the first by default) as NAME, injecting nothing. 422 names the
// invalid rows.
func (s *Server) postDiff(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.Viewer) {
		return
	}
	if s.cfg.Differ == nil || s.cfg.UploadDir == "" {
		s.writeJSONError(w, http.StatusServiceUnavailable, "this node compares no file: it watches no folder")
		return
	}
	name := r.URL.Query().Get("name")
	if !plainName(name) {
		s.writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("name: %q is not a usable file name: want ?name=FILE, the name the file would be dropped as", name))
		return
	}
	if !s.dryRunSlot(w) {
		s.writeJSONError(w, http.StatusServiceUnavailable, fmt.Sprintf("%d dry runs are running already: try again in a moment", s.cfg.DryRuns))
		return
	}
	defer s.dryRuns.Release(1)
	path, done, err := s.stageNamed(r.Body, name)
	if err != nil {
		switch {
		case isTooLarge(err):
			s.writeJSONError(w, http.StatusRequestEntityTooLarge, "the file is too large: at most "+byteSize(maxUpload))
		case r.Context().Err() == nil:
			s.log.Error("stage diff", "file", name, "err", err)
			s.writeJSONError(w, http.StatusInternalServerError, "the file could not be stored; see the server log")
		}
		return
	}
	defer done()
	folder := r.URL.Query().Get("folder")
	if folder != "" {
		if _, ok := s.watchedFolder(folder); !ok {
			s.writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("folder: %q is not a folder this node watches", folder))
			return
		}
	}
	d, lines, err := s.cfg.Differ(r.Context(), folder, name, path)
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		var rows interface{ RowLines() []string }
		if errors.As(err, &rows) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": firstLine(err.Error()), "rows": rows.RowLines()})
			return
		}
		s.writeJSONError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	d.Lines = nil
	s.writeJSON(w, r, diffAnswer{File: name, Diff: d, Lines: nonNil(lines)})
}

// firstLine is the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
