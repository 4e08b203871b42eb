package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/web/api"
	"github.com/jobdrop/jobdrop/web/auth"
)

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
		api.Error(w, http.StatusServiceUnavailable, "this node compares no file: it watches no folder")
		return
	}
	name := r.URL.Query().Get("name")
	if !plainName(name) {
		api.Error(w, http.StatusBadRequest, fmt.Sprintf("name: %q is not a usable file name: want ?name=FILE, the name the file would be dropped as", name))
		return
	}
	if !s.dryRunSlot(w) {
		api.Error(w, http.StatusServiceUnavailable, fmt.Sprintf("%d dry runs are running already: try again in a moment", s.cfg.DryRuns))
		return
	}
	defer s.dryRuns.Release(1)
	path, done, err := s.stageNamed(r.Body, name)
	if err != nil {
		switch {
		case isTooLarge(err):
			api.Error(w, http.StatusRequestEntityTooLarge, "the file is too large: at most "+byteSize(maxUpload))
		case r.Context().Err() == nil:
			s.log.Error("stage diff", "file", name, "err", err)
			api.Error(w, http.StatusInternalServerError, "the file could not be stored; see the server log")
		}
		return
	}
	defer done()
	folder := r.URL.Query().Get("folder")
	if folder != "" {
		if _, ok := s.watchedFolder(folder); !ok {
			api.Error(w, http.StatusBadRequest, fmt.Sprintf("folder: %q is not a folder this node watches", folder))
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
		api.Error(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	d.Lines = nil
	s.writeJSON(w, r, diffAnswer{File: name, Diff: d, Lines: api.NonNil(lines)})
}

// firstLine is the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
