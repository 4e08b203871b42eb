package web

import (
	"archive/zip"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// auditFilterParam reads the audit filters: from and to (RFC 3339 or
// YYYY-MM-DD, UTC), actor, action, object.
func auditFilterParam(q url.Values) (storetype.AuditFilter, error) {
	f := storetype.AuditFilter{Actor: q.Get("actor"), Action: q.Get("action"), Object: q.Get("object")}
	for _, p := range []struct {
		name string
		into *time.Time
		end  bool
	}{{"from", &f.From, false}, {"to", &f.To, true}} {
		v := strings.TrimSpace(q.Get(p.name))
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			d, derr := time.Parse("2006-01-02", v)
			if derr != nil {
				if d, derr = time.Parse("2006-01-02T15:04", v); derr != nil {
					return f, fmt.Errorf("%s %q: want RFC 3339 or YYYY-MM-DD", p.name, v)
				}
			} else if p.end {
				d = d.AddDate(0, 0, 1) // a "to" day includes that day
			}
			t = d
		}
		*p.into = t.UTC()
	}
	return f, nil
}

// auditHeader is the first row of an export.
var auditHeader = []string{"at", "actor", "action", "object", "outcome", "detail", "batch", "id"}

func auditRow(a storetype.AuditEvent) []string {
	return []string{a.At.UTC().Format(time.RFC3339Nano), a.Actor, a.Action, a.Object, a.Outcome, a.Detail, a.Batch, a.ID}
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

func exportName(ext string, now time.Time) string {
	return "jobdrop-audit-" + now.UTC().Format("20060102T150405Z") + "." + ext
}

// exportAuditCSV streams the filtered audit trail as CSV, oldest first,
// one row at a time.
func (s *Server) exportAuditCSV(w http.ResponseWriter, r *http.Request) {
	f, err := auditFilterParam(r.URL.Query())
	if err != nil {
		s.badRequest(w, r, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+exportName("csv", s.now())+`"`)
	cw := csv.NewWriter(w)
	cw.Write(auditHeader)
	row := make([]string, len(auditHeader))
	n := 0
	err = s.src.EachAudit(r.Context(), f, func(a storetype.AuditEvent) error {
		for i, v := range auditRow(a) {
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
	if err != nil && r.Context().Err() == nil {
		// The header is sent: all that is left is to log and cut.
		s.log.Error("export audit csv", "error", err)
		panic(http.ErrAbortHandler)
	}
}

// exportAuditXLSX streams the filtered audit trail as an Excel sheet with
// excelize's stream writer, which spills rows to a temporary file beyond
// its 16 MiB buffer rather than holding them all. Every cell is a string;
// none is a formula.
func (s *Server) exportAuditXLSX(w http.ResponseWriter, r *http.Request) {
	f, err := auditFilterParam(r.URL.Query())
	if err != nil {
		s.badRequest(w, r, err.Error())
		return
	}
	if err := s.writeAuditXLSX(r, f, w); err != nil {
		if r.Context().Err() != nil {
			return
		}
		s.log.Error("export audit xlsx", "error", err)
		panic(http.ErrAbortHandler)
	}
}

func (s *Server) writeAuditXLSX(r *http.Request, f storetype.AuditFilter, w http.ResponseWriter) error {
	book := excelize.NewFile()
	defer book.Close()
	const sheet = "Audit"
	if err := book.SetSheetName("Sheet1", sheet); err != nil {
		return err
	}
	sw, err := book.NewStreamWriter(sheet)
	if err != nil {
		return err
	}
	cells := make([]any, len(auditHeader))
	put := func(rowNum int, vals []string) error {
		for i, v := range vals {
			cells[i] = neutralise(v)
		}
		cell, _ := excelize.CoordinatesToCellName(1, rowNum)
		return sw.SetRow(cell, cells)
	}
	if err := put(1, auditHeader); err != nil {
		return err
	}
	n := 1
	err = s.src.EachAudit(r.Context(), f, func(a storetype.AuditEvent) error {
		n++
		return put(n, auditRow(a))
	})
	if err != nil {
		return err
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
	w.Header().Set("Content-Disposition", `attachment; filename="`+exportName("xlsx", s.now())+`"`)
	w.Header().Set("X-Audit-Rows", strconv.Itoa(n-1))
	// excelize assembles the archive in a buffer and copies it: zip
	// straight into the response instead, so no copy of the workbook is
	// held in memory.
	book.SetZipWriter(func(io.Writer) excelize.ZipWriter { return zip.NewWriter(w) })
	return book.Write(io.Discard)
}
