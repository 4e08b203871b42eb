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
	// loc is the zone of its times: CSV writes them in RFC 3339 with
	// its offset, a sheet as dates of its wall clock.
	loc *time.Location
	// each calls row with every row of the report, in order.
	each func(ctx context.Context, row func([]cell) error) error
	// cut says, in the last row of a sheet that is full, which rows are
	// left out, after the last row written.
	cut func(last []cell) string
}

// auditReport is the audit trail the filters select, oldest first.
func (s *Server) auditReport(f storetype.AuditFilter) report {
	rep := report{
		name:   "audit",
		header: []string{"at", "actor", "action", "object", "outcome", "detail", "batch", "id"},
		loc:    time.UTC,
		each: func(ctx context.Context, row func([]cell) error) error {
			return s.src.EachAudit(ctx, f, func(a storetype.AuditEvent) error {
				return row([]cell{when(&a.At), text(a.Actor), text(a.Action), text(a.Object), text(a.Outcome), text(a.Detail), text(a.Batch), text(a.ID)})
			})
		},
	}
	rep.cut = func(last []cell) string {
		return "events after " + last[0].String(rep.loc) + " are left out: export from that time on, or the CSV"
	}
	return rep
}

// taskReport is every task the list's filters select, in key order: what
// a team signs off after moving a schedule, one row per task with the file
// and row it came from.
func (s *Server) taskReport(f storetype.TaskFilter) report {
	rep := report{
		name: "tasks",
		header: []string{"key", "host", "name", "topic", "status", "paused", "schedule", "next fire", "last fire",
			"fires", "file", "row", "updated", "definition"},
		loc: time.UTC,
		each: func(ctx context.Context, row func([]cell) error) error {
			return s.src.EachTask(ctx, f, func(t storetype.Task) error {
				sourceRow := cell{}
				if t.SourceRow > 0 {
					sourceRow = number(int64(t.SourceRow))
				}
				return row([]cell{text(t.Key), text(t.Host), text(t.Name), text(t.Topic), text(t.Status), text(strconv.FormatBool(t.Paused)),
					text(t.Schedule), whenSecs(t.NextFire), whenSecs(t.LastFire), number(t.FireCount), text(t.SourceFile), sourceRow,
					whenSecs(&t.UpdatedAt), text(t.Definition)})
			})
		},
	}
	rep.cut = func(last []cell) string {
		return "tasks after " + last[0].String(rep.loc) + " are left out: narrow the filters, or export the CSV"
	}
	return rep
}

// executionReport is every execution the list's filters select, in the
// list's order, each with the status it shows now.
func (s *Server) executionReport(f storetype.ExecutionFilter) report {
	rep := report{
		name: "executions",
		header: []string{"fire id", "task", "host", "name", "topic", "status", "recorded status", "scheduled", "fired", "reported",
			"message", "worker", "partition", "offset", "file", "timeout (s)"},
		loc: time.UTC,
		each: func(ctx context.Context, row func([]cell) error) error {
			return s.src.EachExecution(ctx, f, func(e storetype.Execution) error {
				e = e.AsOf(f.Now)
				timeout := cell{}
				if e.Timeout > 0 {
					timeout = decimal(e.Timeout.Seconds())
				}
				return row([]cell{text(e.FireID), text(e.TaskKey()), text(e.Host), text(e.Name), text(e.Topic), text(e.Status), text(e.Recorded),
					when(e.ScheduledAt), when(e.FiredAt), when(e.StatusAt), text(e.StatusMessage), text(e.Worker),
					number(int64(e.TargetPartition)), number(e.TargetOffset), text(e.Batch), timeout})
			})
		},
	}
	rep.cut = func(last []cell) string {
		return "executions after " + last[8].String(rep.loc) + " are left out: narrow the filters, or export the CSV"
	}
	return rep
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
	rep.loc = exportZone(r)
	w = s.streaming(w)
	s.attach(w, rep, "csv", "text/csv; charset=utf-8")
	cw := csv.NewWriter(w)
	cw.Write(rep.header)
	n := 0
	var line []string
	err := rep.each(r.Context(), func(row []cell) error {
		line = line[:0]
		for _, c := range row {
			line = append(line, neutralise(c.String(rep.loc)))
		}
		if n++; n%1000 == 0 {
			cw.Flush()
		}
		return cw.Write(line)
	})
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	s.abortAnswer(r, "export "+rep.name+" csv", err)
}

// exportXLSX streams a report as an Excel sheet, one row at a time: text
// cells as strings, none a formula; numbers and times typed. A report
// longer than a sheet's million rows ends with a row saying where it was
// cut.
func (s *Server) exportXLSX(w http.ResponseWriter, r *http.Request, rep report) {
	rep.loc = exportZone(r)
	w = s.streaming(w)
	s.attach(w, rep, "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
	s.abortAnswer(r, "export "+rep.name+" xlsx", writeXLSX(r.Context(), rep, w))
}

// exportZone is the zone a report's times are in: the user's, when it is
// one zone (UTC, or their browser's); UTC when they see each task in its
// own, since a column of a sheet holds times of one zone. CSV writes each
// time with its offset, a sheet names the zone in its time columns'
// headers.
func exportZone(r *http.Request) *time.Location {
	if z := readZone(r, who(r.Context()).Name); z.Mode == zoneLocal {
		return z.in("")
	}
	return time.UTC
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
		s.log.Error(what, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// errSheetFull ends an export that reached a sheet's last row.
var errSheetFull = errors.New("sheet full")

func writeXLSX(ctx context.Context, rep report, w io.Writer) error {
	sw, err := newSheetWriter(w, strings.ToUpper(rep.name[:1])+rep.name[1:], rep.header, rep.loc)
	if err != nil {
		return err
	}
	var last, cells []cell
	err = rep.each(ctx, func(row []cell) error {
		if sw.rows == xlsxMaxRows-1 {
			return errSheetFull
		}
		last, cells = row, cells[:0]
		for _, c := range row {
			if !c.num && !c.isTime() {
				c.s = neutralise(c.s)
			}
			cells = append(cells, c)
		}
		return sw.WriteRow(cells)
	})
	if errors.Is(err, errSheetFull) {
		err = sw.WriteRow([]cell{text("cut: a sheet holds " + strconv.Itoa(xlsxMaxRows) + " rows; " + rep.cut(last))})
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
