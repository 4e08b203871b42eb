package web

import (
	"net/http"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

type filesHandler struct{ s *Server }

// ServeHTTP renders the latest files.
func (h filesHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	files, err := h.s.src.RecentBatches(r.Context(), h.s.cfg.ListLimit)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, "Files", "files", filesView(files))
}

// fileModel is one file's page: the file, the tasks it defines and its
// audit trail.
type fileModel struct {
	Now        time.Time
	File       storetype.Batch
	Tasks      []storetype.Task
	Audit      []storetype.AuditEvent
	CanOperate bool
	Back       string
}

type fileHandler struct{ s *Server }

// ServeHTTP renders the page of the file /files/{id}.
func (h fileHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	m := fileModel{Now: h.s.now(), CanOperate: h.s.canOperate(r), Back: r.URL.RequestURI()}
	var err error
	if m.File, err = h.s.src.BatchByID(ctx, r.PathValue("id")); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Tasks, err = h.s.src.Tasks(ctx, storetype.TaskFilter{Batch: m.File.ID, Limit: h.s.cfg.ListLimit}); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Audit, err = h.s.src.AuditByBatch(ctx, m.File.ID, h.s.cfg.ListLimit); err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, m.File.File, "files", fileView(m))
}
