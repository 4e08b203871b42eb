package web

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

type filesHandler struct{ s *Server }

// ServeHTTP renders the latest files.
func (h filesHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	files, err := h.s.recentFiles(r.Context(), h.s.cfg.ListLimit)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, "Files", "files", filesView(files))
}

// fileRow is one line of a files list: a file on its way in, or a file
// whose batch is recorded.
type fileRow struct {
	Arrival *storetype.Arrival
	Batch   *storetype.Batch
}

func (f fileRow) updatedAt() time.Time {
	if f.Batch != nil {
		return f.Batch.UpdatedAt
	}
	return f.Arrival.UpdatedAt
}

// recentFiles lists the files arriving and recorded, newest first.
func (s *Server) recentFiles(ctx context.Context, limit int) ([]fileRow, error) {
	arrivals, err := s.src.RecentArrivals(ctx, limit)
	if err != nil {
		return nil, err
	}
	batches, err := s.src.RecentBatches(ctx, limit)
	if err != nil {
		return nil, err
	}
	rows := make([]fileRow, 0, len(arrivals)+len(batches))
	for i := range arrivals {
		rows = append(rows, fileRow{Arrival: &arrivals[i]})
	}
	for i := range batches {
		rows = append(rows, fileRow{Batch: &batches[i]})
	}
	slices.SortStableFunc(rows, func(a, b fileRow) int { return b.updatedAt().Compare(a.updatedAt()) })
	return rows[:min(len(rows), cmp.Or(limit, len(rows)))], nil
}

// fileModel is one file's page: the file, the tasks it defines and its
// audit trail.
type fileModel struct {
	Now        time.Time
	File       storetype.Batch
	Tasks      []storetype.Task
	Executions []storetype.Execution
	Audit      []storetype.AuditEvent
	CanOperate bool
	// CanDefine offers Apply on a held file: it creates and replaces
	// definitions.
	CanDefine bool
	Back      string
}

type fileHandler struct{ s *Server }

// ServeHTTP renders the page of the file /files/{id}.
func (h fileHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	m := fileModel{Now: h.s.now(), CanOperate: h.s.canOperate(r), CanDefine: h.s.canDefine(r), Back: r.URL.RequestURI()}
	var err error
	if m.File, err = h.s.src.BatchByID(ctx, r.PathValue("id")); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Tasks, err = h.s.src.Tasks(ctx, storetype.TaskFilter{Batch: m.File.ID, Limit: h.s.cfg.ListLimit}); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Executions, err = h.s.src.ExecutionsByBatch(ctx, m.File.ID, h.s.cfg.ListLimit); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Audit, err = h.s.src.AuditByBatch(ctx, m.File.ID, h.s.cfg.ListLimit); err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, m.File.File, "files", fileView(m))
}
