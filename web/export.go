package web

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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

// exportAuditXLSX streams the filtered audit trail as an Excel sheet,
// oldest first, one row at a time. Every cell is a string; none is a
// formula. A trail longer than a sheet's million rows ends with a row
// saying where it was cut.
func (s *Server) exportAuditXLSX(w http.ResponseWriter, r *http.Request) {
	f, err := auditFilterParam(r.URL.Query())
	if err != nil {
		s.badRequest(w, r, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
	w.Header().Set("Content-Disposition", `attachment; filename="`+exportName("xlsx", s.now())+`"`)
	if err := writeAuditXLSX(r.Context(), s.src, f, w); err != nil && r.Context().Err() == nil {
		// The header is sent: all that is left is to log and cut.
		s.log.Error("export audit xlsx", "error", err)
		panic(http.ErrAbortHandler)
	}
}

// errSheetFull ends an export that reached a sheet's last row.
var errSheetFull = errors.New("sheet full")

func writeAuditXLSX(ctx context.Context, src Source, f storetype.AuditFilter, w io.Writer) error {
	sw, err := newSheetWriter(w, "Audit", []int{26, 14, 16, 36, 10, 60, 16, 30})
	if err != nil {
		return err
	}
	row := make([]string, len(auditHeader))
	sw.WriteRow(auditHeader)
	var last time.Time
	err = src.EachAudit(ctx, f, func(a storetype.AuditEvent) error {
		if sw.rows == xlsxMaxRows-1 {
			return errSheetFull
		}
		for i, v := range auditRow(a) {
			row[i] = neutralise(v)
		}
		last = a.At
		return sw.WriteRow(row)
	})
	if errors.Is(err, errSheetFull) {
		err = sw.WriteRow([]string{"cut: a sheet holds " + strconv.Itoa(xlsxMaxRows) + " rows; events after " +
			last.UTC().Format(time.RFC3339Nano) + " are left out: export from that time on, or the CSV"})
	}
	if err != nil {
		return err
	}
	return sw.Close()
}
