package report

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"
)

// MaxSheetRows is the most rows a spreadsheet opens of a sheet.
const MaxSheetRows = 1 << 20

// Content types of the two formats, for a download's headers.
const (
	CSVType  = "text/csv; charset=utf-8"
	XLSXType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
)

// Report is a table exported whole, in CSV or as a sheet, one row at a
// time however long it is.
type Report struct {
	// Name is in the file name and, capitalised, the sheet's: "audit".
	Name   string
	Header []string
	// Loc is the zone of its times: CSV writes them in RFC 3339 with its
	// offset, a sheet as dates of its wall clock. Defaults to UTC.
	Loc *time.Location
	// Each calls row with every row of the report, in order.
	Each func(ctx context.Context, row func([]Cell) error) error
	// Cut says, in the last row of a sheet that is full, which rows are
	// left out, after the last row written.
	Cut func(last []Cell) string
	// SheetRows is the most rows a sheet is given, the header and the
	// row saying where it was cut included. Defaults to MaxSheetRows.
	SheetRows int
}

// withDefaults fills Loc and SheetRows.
func (rep Report) withDefaults() Report {
	if rep.Loc == nil {
		rep.Loc = time.UTC
	}
	if rep.SheetRows <= 0 || rep.SheetRows > MaxSheetRows {
		rep.SheetRows = MaxSheetRows
	}
	return rep
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

// WriteCSV writes rep to w as CSV, one row at a time, flushing every
// thousand rows; no cell reads as a formula.
func WriteCSV(ctx context.Context, w io.Writer, rep Report) error {
	rep = rep.withDefaults()
	cw := csv.NewWriter(w)
	cw.Write(rep.Header)
	n := 0
	var line []string
	err := rep.Each(ctx, func(row []Cell) error {
		line = line[:0]
		for _, c := range row {
			line = append(line, neutralise(c.String(rep.Loc)))
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
	return err
}

// errSheetFull ends an export that reached a sheet's last row.
var errSheetFull = errors.New("sheet full")

// WriteXLSX writes rep to w as an Excel sheet, one row at a time: text
// cells as strings, none a formula; numbers and times typed. A report
// longer than a sheet holds ends with a row saying where it was cut.
func WriteXLSX(ctx context.Context, w io.Writer, rep Report) error {
	rep = rep.withDefaults()
	sw, err := newSheetWriter(w, strings.ToUpper(rep.Name[:1])+rep.Name[1:], rep.Header, rep.Loc)
	if err != nil {
		return err
	}
	var last, cells []Cell
	err = rep.Each(ctx, func(row []Cell) error {
		if sw.rows == rep.SheetRows-1 {
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
		err = sw.WriteRow([]Cell{Text("cut: a sheet holds " + strconv.Itoa(rep.SheetRows) + " rows; " + rep.Cut(last))})
	}
	if err != nil {
		return err
	}
	return sw.Close()
}
