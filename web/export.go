package web

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/web/api"
	"github.com/jobdrop/jobdrop/web/auth"
	"github.com/jobdrop/jobdrop/web/report"
)

// sheetRows is the most rows an exported sheet is given (a variable so
// that tests can reach it).
var sheetRows = report.MaxSheetRows

// auditReport is the audit trail the filters select, oldest first.
func (s *Server) auditReport(f storetype.AuditFilter) report.Report {
	rep := report.Report{
		Name:   "audit",
		Header: []string{"at", "actor", "action", "object", "outcome", "detail", "batch", "id"},
		Loc:    time.UTC,
		Each: func(ctx context.Context, row func([]report.Cell) error) error {
			return s.src.EachAudit(ctx, f, func(a storetype.AuditEvent) error {
				return row([]report.Cell{report.When(&a.At), report.Text(a.Actor), report.Text(a.Action), report.Text(a.Object),
					report.Text(a.Outcome), report.Text(a.Detail), report.Text(a.Batch), report.Text(a.ID)})
			})
		},
	}
	rep.Cut = func(last []report.Cell) string {
		return "events after " + last[0].String(rep.Loc) + " are left out: export from that time on, or the CSV"
	}
	return rep
}

// taskReport is every task the list's filters select, in key order: what
// a team signs off after moving a schedule, one row per task with the file
// and row it came from.
func (s *Server) taskReport(f storetype.TaskFilter) report.Report {
	rep := report.Report{
		Name: "tasks",
		Header: []string{"key", "host", "name", "topic", "status", "paused", "schedule", "next fire", "last fire",
			"fires", "file", "row", "updated", "definition"},
		Loc: time.UTC,
		Each: func(ctx context.Context, row func([]report.Cell) error) error {
			return s.src.EachTask(ctx, f, func(t storetype.Task) error {
				sourceRow := report.Cell{}
				if t.SourceRow > 0 {
					sourceRow = report.Number(int64(t.SourceRow))
				}
				return row([]report.Cell{report.Text(t.Key), report.Text(t.Host), report.Text(t.Name), report.Text(t.Topic), report.Text(t.Status), report.Text(strconv.FormatBool(t.Paused)),
					report.Text(t.Schedule), report.WhenSecs(t.NextFire), report.WhenSecs(t.LastFire), report.Number(t.FireCount), report.Text(t.SourceFile), sourceRow,
					report.WhenSecs(&t.UpdatedAt), report.Text(t.Definition)})
			})
		},
	}
	rep.Cut = func(last []report.Cell) string {
		return "tasks after " + last[0].String(rep.Loc) + " are left out: narrow the filters, or export the CSV"
	}
	return rep
}

// executionReport is every execution the list's filters select, in the
// list's order, each with the status it shows now.
func (s *Server) executionReport(f storetype.ExecutionFilter) report.Report {
	rep := report.Report{
		Name: "executions",
		Header: []string{"fire id", "task", "host", "name", "topic", "status", "recorded status", "scheduled", "fired", "reported",
			"message", "worker", "partition", "offset", "file", "timeout (s)"},
		Loc: time.UTC,
		Each: func(ctx context.Context, row func([]report.Cell) error) error {
			return s.src.EachExecution(ctx, f, func(e storetype.Execution) error {
				e = e.AsOf(f.Now)
				timeout := report.Cell{}
				if e.Timeout > 0 {
					timeout = report.Decimal(e.Timeout.Seconds())
				}
				return row([]report.Cell{report.Text(e.FireID), report.Text(e.TaskKey()), report.Text(e.Host), report.Text(e.Name), report.Text(e.Topic), report.Text(e.Status), report.Text(e.Recorded),
					report.When(e.ScheduledAt), report.When(e.FiredAt), report.When(e.StatusAt), report.Text(e.StatusMessage), report.Text(e.Worker),
					report.Number(int64(e.TargetPartition)), report.Number(e.TargetOffset), report.Text(e.Batch), timeout})
			})
		},
	}
	rep.Cut = func(last []report.Cell) string {
		return "executions after " + last[8].String(rep.Loc) + " are left out: narrow the filters, or export the CSV"
	}
	return rep
}

func (s *Server) exportExecutionsCSV(w http.ResponseWriter, r *http.Request) {
	if f, err := s.lists.Executions(r.URL.Query()); err != nil {
		s.badRequest(w, r, err.Error())
	} else {
		s.exportCSV(w, r, s.executionReport(f))
	}
}

func (s *Server) exportExecutionsXLSX(w http.ResponseWriter, r *http.Request) {
	if f, err := s.lists.Executions(r.URL.Query()); err != nil {
		s.badRequest(w, r, err.Error())
	} else {
		s.exportXLSX(w, r, s.executionReport(f))
	}
}

// exportCSV streams a report as CSV, one row at a time.
func (s *Server) exportCSV(w http.ResponseWriter, r *http.Request, rep report.Report) {
	rep.Loc = exportZone(r)
	w = s.streaming(w)
	s.attach(w, rep, "csv", report.CSVType)
	s.abortAnswer(r, "export "+rep.Name+" csv", report.WriteCSV(r.Context(), w, rep))
}

// exportXLSX streams a report as an Excel sheet, one row at a time. A
// report longer than a sheet's million rows ends with a row saying where
// it was cut.
func (s *Server) exportXLSX(w http.ResponseWriter, r *http.Request, rep report.Report) {
	rep.Loc, rep.SheetRows = exportZone(r), sheetRows
	w = s.streaming(w)
	s.attach(w, rep, "xlsx", report.XLSXType)
	s.abortAnswer(r, "export "+rep.Name+" xlsx", report.WriteXLSX(r.Context(), w, rep))
}

// exportZone is the zone a report's times are in: the user's, when it is
// one zone (UTC, or their browser's); UTC when they see each task in its
// own, since a column of a sheet holds times of one zone. CSV writes each
// time with its offset, a sheet names the zone in its time columns'
// headers.
func exportZone(r *http.Request) *time.Location {
	if z := readZone(r, auth.Who(r.Context()).Name); z.Mode == zoneLocal {
		return z.in("")
	}
	return time.UTC
}

// attach sends the headers of a report's download.
func (s *Server) attach(w http.ResponseWriter, rep report.Report, ext, contentType string) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Disposition", `attachment; filename="jobdrop-`+rep.Name+"-"+
		s.now().UTC().Format("20060102T150405Z")+"."+ext+`"`)
}

// abortAnswer logs a streamed answer (what) that failed part way and cuts
// it short: its status is sent, so no status can say so any more.
func (s *Server) abortAnswer(r *http.Request, what string, err error) {
	if err != nil && r.Context().Err() == nil {
		s.log.Error(what, "err", err)
		panic(http.ErrAbortHandler)
	}
}

func (s *Server) exportAuditCSV(w http.ResponseWriter, r *http.Request) {
	if f, err := s.lists.Audit(r.URL.Query()); err != nil {
		s.badRequest(w, r, err.Error())
	} else {
		s.exportCSV(w, r, s.auditReport(f))
	}
}

func (s *Server) exportAuditXLSX(w http.ResponseWriter, r *http.Request) {
	if f, err := s.lists.Audit(r.URL.Query()); err != nil {
		s.badRequest(w, r, err.Error())
	} else {
		s.exportXLSX(w, r, s.auditReport(f))
	}
}

// taskReportFilter reads a task report's filters; a file that does not
// exist is answered as not found rather than as an empty report.
func (s *Server) taskReportFilter(w http.ResponseWriter, r *http.Request) (storetype.TaskFilter, bool) {
	f, err := s.lists.Tasks(r.URL.Query())
	if err != nil {
		s.badRequest(w, r, err.Error())
		return f, false
	}
	if err := api.FileKnown(r.Context(), s.src, f); err != nil {
		s.fail(w, r, err)
		return f, false
	}
	return f, true
}

func (s *Server) exportTasksCSV(w http.ResponseWriter, r *http.Request) {
	if f, ok := s.taskReportFilter(w, r); ok {
		s.exportCSV(w, r, s.taskReport(f))
	}
}

func (s *Server) exportTasksXLSX(w http.ResponseWriter, r *http.Request) {
	if f, ok := s.taskReportFilter(w, r); ok {
		s.exportXLSX(w, r, s.taskReport(f))
	}
}
