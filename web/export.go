package web

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// report is a table exported whole, in CSV or as a sheet, one row at a
// time however long it is.
type report struct {
	name   string // in the file name and, capitalised, the sheet's: "audit"
	header []string
	widths []int // of the sheet's columns, in characters
	// each calls row with every row of the report, in order.
	each func(ctx context.Context, row func([]string) error) error
	// cut says, in the last row of a sheet that is full, which rows are
	// left out, after the last row written.
	cut func(last []string) string
}

// auditReport is the audit trail the filters select, oldest first.
func (s *Server) auditReport(f storetype.AuditFilter) report {
	return report{
		name:   "audit",
		header: []string{"at", "actor", "action", "object", "outcome", "detail", "batch", "id"},
		widths: []int{26, 14, 16, 36, 10, 60, 16, 30},
		each: func(ctx context.Context, row func([]string) error) error {
			return s.src.EachAudit(ctx, f, func(a storetype.AuditEvent) error {
				return row([]string{a.At.UTC().Format(time.RFC3339Nano), a.Actor, a.Action, a.Object, a.Outcome, a.Detail, a.Batch, a.ID})
			})
		},
		cut: func(last []string) string {
			return "events after " + last[0] + " are left out: export from that time on, or the CSV"
		},
	}
}

// taskReport is every task the list's filters select, in key order: what
// a team signs off after moving a schedule, one row per task with the file
// and row it came from.
func (s *Server) taskReport(f storetype.TaskFilter) report {
	at := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	return report{
		name: "tasks",
		header: []string{"key", "host", "name", "topic", "status", "paused", "schedule", "next fire", "last fire",
			"fires", "file", "row", "updated", "definition"},
		widths: []int{36, 14, 28, 20, 10, 7, 30, 22, 22, 8, 24, 7, 22, 60},
		each: func(ctx context.Context, row func([]string) error) error {
			return s.src.EachTask(ctx, f, func(t storetype.Task) error {
				sourceRow := ""
				if t.SourceRow > 0 {
					sourceRow = strconv.Itoa(t.SourceRow)
				}
				return row([]string{t.Key, t.Host, t.Name, t.Topic, t.Status, strconv.FormatBool(t.Paused), t.Schedule,
					at(t.NextFire), at(t.LastFire), strconv.FormatInt(t.FireCount, 10), t.SourceFile, sourceRow,
					t.UpdatedAt.UTC().Format(time.RFC3339), t.Definition})
			})
		},
		cut: func(last []string) string {
			return "tasks after " + last[0] + " are left out: narrow the filters, or export the CSV"
		},
	}
}

// executionReport is every execution the list's filters select, in the
// list's order, each with the status it shows now.
func (s *Server) executionReport(f storetype.ExecutionFilter) report {
	at := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	return report{
		name: "executions",
		header: []string{"fire id", "task", "host", "name", "topic", "status", "recorded status", "scheduled", "fired", "reported",
			"message", "worker", "partition", "offset", "file", "timeout (s)"},
		widths: []int{34, 36, 14, 28, 20, 10, 10, 24, 24, 24, 40, 16, 9, 10, 16, 10},
		each: func(ctx context.Context, row func([]string) error) error {
			return s.src.EachExecution(ctx, f, func(e storetype.Execution) error {
				e = e.AsOf(f.Now)
				return row([]string{e.FireID, e.TaskKey(), e.Host, e.Name, e.Topic, e.Status, e.Recorded, at(e.ScheduledAt), at(e.FiredAt),
					at(e.StatusAt), e.StatusMessage, e.Worker, strconv.Itoa(int(e.TargetPartition)), strconv.FormatInt(e.TargetOffset, 10),
					e.Batch, strconv.FormatFloat(e.Timeout.Seconds(), 'f', -1, 64)})
			})
		},
		cut: func(last []string) string {
			return "executions after " + last[8] + " are left out: narrow the filters, or export the CSV"
		},
	}
}

func (s *Server) exportExecutionsCSV(w http.ResponseWriter, r *http.Request) {
	if f, err := s.executionFilter(r.URL.Query()); err != nil {
		s.badRequest(w, r, err.Error())
	} else {
		s.exportCSV(w, r, s.executionReport(f))
	}
}

func (s *Server) exportExecutionsXLSX(w http.ResponseWriter, r *http.Request) {
	if f, err := s.executionFilter(r.URL.Query()); err != nil {
		s.badRequest(w, r, err.Error())
	} else {
		s.exportXLSX(w, r, s.executionReport(f))
	}
}

// neutralise keeps a cell from being read as a formula by a spreadsheet
// (OWASP CSV injection): a cell starting with = + - @, tab or CR gets a
// leading apostrophe.
func neutralise(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return "'" + v
	}
	return v
}

// exportCSV streams a report as CSV, one row at a time.
func (s *Server) exportCSV(w http.ResponseWriter, r *http.Request, rep report) {
	w = s.streaming(w)
	s.attach(w, rep, "csv", "text/csv; charset=utf-8")
	cw := csv.NewWriter(w)
	cw.Write(rep.header)
	n := 0
	err := rep.each(r.Context(), func(row []string) error {
		for i, v := range row {
			row[i] = neutralise(v)
		}
		if n++; n%1000 == 0 {
			cw.Flush()
		}
		return cw.Write(row)
	})
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	s.abortAnswer(r, "export "+rep.name+" csv", err)
}

// exportXLSX streams a report as an Excel sheet, one row at a time. Every
// cell is a string; none is a formula. A report longer than a sheet's
// million rows ends with a row saying where it was cut.
func (s *Server) exportXLSX(w http.ResponseWriter, r *http.Request, rep report) {
	w = s.streaming(w)
	s.attach(w, rep, "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
	s.abortAnswer(r, "export "+rep.name+" xlsx", writeXLSX(r.Context(), rep, w))
}

// attach sends the headers of a report's download.
func (s *Server) attach(w http.ResponseWriter, rep report, ext, contentType string) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Disposition", `attachment; filename="jobdrop-`+rep.name+"-"+
		s.now().UTC().Format("20060102T150405Z")+"."+ext+`"`)
}

// abortAnswer logs a streamed answer (what) that failed part way and cuts
// it short: its status is sent, so no status can say so any more.
func (s *Server) abortAnswer(r *http.Request, what string, err error) {
	if err != nil && r.Context().Err() == nil {
		s.log.Error(what, "error", err)
		panic(http.ErrAbortHandler)
	}
}

// errSheetFull ends an export that reached a sheet's last row.
var errSheetFull = errors.New("sheet full")

func writeXLSX(ctx context.Context, rep report, w io.Writer) error {
	sw, err := newSheetWriter(w, strings.ToUpper(rep.name[:1])+rep.name[1:], rep.widths)
	if err != nil {
		return err
	}
	sw.WriteRow(rep.header)
	var last, cells []string
	err = rep.each(ctx, func(row []string) error {
		if sw.rows == xlsxMaxRows-1 {
			return errSheetFull
		}
		last, cells = row, cells[:0]
		for _, v := range row {
			cells = append(cells, neutralise(v))
		}
		return sw.WriteRow(cells)
	})
	if errors.Is(err, errSheetFull) {
		err = sw.WriteRow([]string{"cut: a sheet holds " + strconv.Itoa(xlsxMaxRows) + " rows; " + rep.cut(last)})
	}
	if err != nil {
		return err
	}
	return sw.Close()
}

func (s *Server) exportAuditCSV(w http.ResponseWriter, r *http.Request) {
	if f, err := s.auditFilter(r.URL.Query()); err != nil {
		s.badRequest(w, r, err.Error())
	} else {
		s.exportCSV(w, r, s.auditReport(f))
	}
}

func (s *Server) exportAuditXLSX(w http.ResponseWriter, r *http.Request) {
	if f, err := s.auditFilter(r.URL.Query()); err != nil {
		s.badRequest(w, r, err.Error())
	} else {
		s.exportXLSX(w, r, s.auditReport(f))
	}
}

// taskReportFilter reads a task report's filters; a file that does not
// exist is answered as not found rather than as an empty report.
func (s *Server) taskReportFilter(w http.ResponseWriter, r *http.Request) (storetype.TaskFilter, bool) {
	f, err := s.taskFilter(r.URL.Query())
	if err != nil {
		s.badRequest(w, r, err.Error())
		return f, false
	}
	if err := s.fileKnown(r.Context(), f); err != nil {
		s.fail(w, r, err)
		return f, false
	}
	return f, true
}

// fileKnown checks that the file a task filter names exists.
func (s *Server) fileKnown(ctx context.Context, f storetype.TaskFilter) error {
	if f.Batch == "" {
		return nil
	}
	if _, err := s.src.BatchByID(ctx, f.Batch); err != nil {
		return fmt.Errorf("file %s (the file's id, as its page shows): %w", f.Batch, err)
	}
	return nil
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
