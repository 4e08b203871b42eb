package web

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// dashboardModel is what the dashboard shows: first what needs someone
// (files held or failed, tasks held back, executions failed or overdue),
// then counts, what fires in the next 24 hours and what happened in the
// last hours, the latest files, the tasks due soonest and the latest
// executions.
type dashboardModel struct {
	Now        time.Time
	Attention  []attention
	Held       []storetype.File
	Summary    storetype.Summary
	Files      []storetype.File
	Tasks      []storetype.Task
	Executions []storetype.Execution
	Hour       storetype.Activity
	Folders    []folderRow
	Glance     glanceModel
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
	if m.Glance.By, err = byParam(r); err != nil {
		h.s.badRequest(w, r, err.Error())
		return
	}
	m.Glance.Timeline, m.Glance.Chart = h.s.glance.last()
	// To the second: the counts' links filter the lists from the moment
	// the counts began.
	if m.Hour, err = h.s.src.ActivitySince(ctx, m.Now.Add(-time.Hour).Truncate(time.Second)); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Summary, err = h.s.src.Summary(ctx, m.Now); err != nil {
		h.s.fail(w, r, err)
		return
	}
	files, err := h.s.src.Files(ctx, storetype.FileFilter{Limit: limit})
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	tasks, err := h.s.src.Tasks(ctx, storetype.TaskFilter{Status: storetype.TaskActive, Limit: limit})
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	executions, err := h.s.src.Executions(ctx, storetype.ExecutionFilter{Now: m.Now, Limit: limit})
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	m.Files, m.Tasks, m.Executions = files.Rows, tasks.Rows, executions.Rows
	if m.Summary.FilesHeld > 0 {
		held, err := h.s.src.Files(ctx, storetype.FileFilter{Status: storetype.BatchHeld, Sort: storetype.SortOldest, Limit: 5})
		if err != nil {
			h.s.fail(w, r, err)
			return
		}
		m.Held = held.Rows
	}
	m.Attention = needs(m.Summary, m.Hour)
	h.s.page(w, r, http.StatusOK, "Dashboard", "dashboard", dashboardView(m))
}

// attention is one kind of thing that needs someone, counted, with the
// list of them.
type attention struct {
	ID   string
	N    int
	Text string
	Href string
	// one is Text for a count of 1.
	one string
}

// needs lists what needs someone, worst first: what waits for a decision,
// then what failed, then what is late; nothing that counts none.
func needs(sum storetype.Summary, hour storetype.Activity) []attention {
	since := sinceParam(hour.Since)
	all := []attention{
		{"attention-held", sum.FilesHeld, "files held for review: their sync would remove too much of what runs; apply or reject each", "/files?status=held",
			"file held for review: its sync would remove too much of what runs; apply or reject it"},
		{"attention-files-failed", sum.FilesFailed, "files failed before they could be read", "/files?status=failed",
			"file failed before it could be read"},
		{"attention-rejected", hour.Rejected, "files rejected in the last hour", "/files?status=rejected&from=" + since,
			"file rejected in the last hour"},
		{"attention-fault-paused", sum.TasksPausedByFaultPolicy, "tasks paused by the fault policy: the brokers kept refusing their fires", "/tasks?fault=paused",
			"task paused by the fault policy: the brokers kept refusing its fires"},
		{"attention-failed", hour.Failures, "executions failed in the last hour", "/executions?status=FAILED&from=" + since,
			"execution failed in the last hour"},
		{"attention-overdue", sum.ExecutionsOverdue, "executions overdue: no final status past their timeout", "/executions?status=OVERDUE",
			"execution overdue: no final status past its timeout"},
	}
	var out []attention
	for _, a := range all {
		if a.N == 1 {
			a.Text = a.one
		}
		if a.N > 0 {
			out = append(out, a)
		}
	}
	return out
}

// sinceParam writes a moment for a list's ?from=, escaped.
func sinceParam(t time.Time) string { return url.QueryEscape(t.UTC().Format(time.RFC3339)) }

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
