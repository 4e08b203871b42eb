package web

import (
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// dashboardModel is what the dashboard shows: counts, the latest files,
// the tasks due soonest and the latest executions.
type dashboardModel struct {
	Now        time.Time
	Summary    storetype.Summary
	Files      []fileRow
	Tasks      []storetype.Task
	Executions []storetype.Execution
	Hour       storetype.Activity
	Folders    []folderRow
}

// FolderQueue is how the files of one watched folder drain: what the
// dashboard shows of a folder with files waiting.
type FolderQueue struct {
	// Dir is the folder as configured.
	Dir string
	// Queued counts the files waiting for their turn.
	Queued int
	// PerMinute is how many files the folder takes a minute lately; 0
	// when it cannot tell yet.
	PerMinute float64
	// Left estimates the time it takes to handle the files waiting and
	// the one being handled, at PerMinute.
	Left time.Duration
}

// line says what q is to a person: "480 files queued, 95 handled a
// minute: about 5m left".
func (q FolderQueue) line() string {
	files := fmt.Sprintf("%d files queued", q.Queued)
	if q.Queued == 1 {
		files = "1 file queued"
	}
	// Rounded, not cut: 2m57s is about 3m.
	about := q.Left.Round(time.Second)
	if about >= time.Minute {
		about = q.Left.Round(time.Minute)
	}
	left := "about " + coarse(about) + " left"
	switch {
	case q.PerMinute <= 0:
		return files + ": estimating the time left"
	case q.Left < time.Second:
		left = "less than a second left"
	}
	return fmt.Sprintf("%s, %s handled a minute: %s", files, perMinute(q.PerMinute), left)
}

// folderRow is a watched folder on the dashboard, with its queue when
// files wait.
type folderRow struct {
	Dir   string
	Queue *FolderQueue
}

type dashboardHandler struct{ s *Server }

// ServeHTTP renders the dashboard.
func (h dashboardHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	limit := min(h.s.cfg.ListLimit, 20)
	m := dashboardModel{Now: h.s.now(), Folders: h.s.folderRows()}
	var err error
	if m.Hour, err = h.s.src.ActivitySince(ctx, m.Now.Add(-time.Hour)); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Summary, err = h.s.src.Summary(ctx); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Files, err = h.s.recentFiles(ctx, limit); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Tasks, err = h.s.src.Tasks(ctx, storetype.TaskFilter{Status: storetype.TaskActive, Limit: limit}); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Executions, err = h.s.src.RecentExecutions(ctx, limit); err != nil {
		h.s.fail(w, r, err)
		return
	}
	h.s.page(w, r, http.StatusOK, "Dashboard", "dashboard", dashboardView(m))
}

// folderRows lists the watched folders, each with its queue when files
// wait in it.
func (s *Server) folderRows() []folderRow {
	queues := map[string]FolderQueue{}
	if s.cfg.Queues != nil {
		for _, q := range s.cfg.Queues() {
			queues[filepath.Clean(q.Dir)] = q
		}
	}
	var rows []folderRow
	for _, dir := range s.cfg.Folders {
		row := folderRow{Dir: dir}
		if q, ok := queues[filepath.Clean(dir)]; ok && q.Queued > 0 {
			row.Queue = &q
		}
		rows = append(rows, row)
	}
	return rows
}
