package web

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/web/list"
)

// filesModel is the files list: its filters as asked and a page of the
// files, recorded or on their way in.
type filesModel struct {
	Query url.Values
	Rows  []storetype.File
	Pager list.Pager
}

type filesHandler struct{ s *Server }

// ServeHTTP renders a page of the files its filters select: status,
// folder, name, from and to.
func (h filesHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if canonical(w, r, list.FileParams) {
		return
	}
	f, err := h.s.lists.Files(r.URL.Query())
	if err != nil {
		h.s.badRequest(w, r, err.Error())
		return
	}
	p, err := h.s.src.Files(r.Context(), f)
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, "Files", "files", filesView(filesModel{Query: list.Query(r.URL.Query(), list.FileParams),
		Rows: p.Rows, Pager: list.PagerOf(r, list.FileParams, p, "files")}))
}

// fileModel is one file's page: the file, the tasks it defines and its
// audit trail.
type fileModel struct {
	Now        time.Time
	File       storetype.Batch
	Tasks      storetype.Page[storetype.Task]
	Executions storetype.Page[storetype.Execution]
	Audit      []storetype.AuditEvent
	Chains     chainGraph
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
	if m.Executions, err = h.s.src.Executions(ctx, storetype.ExecutionFilter{Batch: m.File.ID, Now: m.Now, Limit: h.s.cfg.ListLimit}); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Audit, err = h.s.src.AuditByBatch(ctx, m.File.ID, h.s.cfg.ListLimit); err != nil {
		h.s.fail(w, r, err)
		return
	}
	g, err := h.s.src.ChainGraph(ctx, storetype.ChainGraphFilter{Batch: m.File.ID})
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	m.Chains = newChainGraph("chain-graph", g, m.Now, "this file", func(n storetype.ChainNode) bool { return n.Batch == m.File.ID })
	h.s.page(w, r, http.StatusOK, m.File.File, "files", fileView(m))
}

// fileCounts is what the files list says a recorded file injected, as
// text: "—" where a number would mislead.
type fileCounts struct {
	Rows, Injected, Rejected, Invalid, Tasks string
}

// countsOf says what b injected. A file rejected whole had every row
// rejected, its invalid ones said apart; a file that injected nothing
// (rejected, held, or a duplicate whose original is not known here) made
// no task; a duplicate was not read.
func countsOf(b *storetype.Batch) fileCounts {
	c := fileCounts{Rows: strconv.Itoa(b.Rows), Injected: strconv.Itoa(b.Accepted), Rejected: strconv.Itoa(b.Rejected), Tasks: strconv.Itoa(b.Tasks)}
	switch b.Status {
	case storetype.BatchInjected:
	case storetype.BatchRejected:
		c.Rejected, c.Tasks = strconv.Itoa(b.Rows), "—"
		switch {
		case b.Rejected == 0 && b.Rows > 0:
			// No row is wrong on its own: a cycle of chains, a sync that
			// would leave followers without their predecessor, a held
			// file an operator rejected.
			c.Invalid = "(none invalid on its own)"
		case b.Rejected < b.Rows:
			c.Invalid = "(" + strconv.Itoa(b.Rejected) + " invalid)"
		}
	case storetype.BatchDuplicate:
		c.Rows, c.Rejected, c.Tasks = "—", "—", "—"
	default:
		c.Tasks = "—"
	}
	return c
}
