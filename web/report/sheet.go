package report

import (
	"archive/zip"
	"bufio"
	"encoding/xml"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxCell is the most characters a spreadsheet cell holds.
const maxCell = 32767

// Styles of a sheet's cells, as xl/styles.xml numbers them.
const (
	styleHeader = "1" // bold
	styleTime   = "2" // yyyy-mm-dd hh:mm:ss
)

// excelEpoch is day 0 of a spreadsheet's dates (1900 date system, with
// its phantom 29 February 1900 folded in).
var excelEpoch = time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)

// serial is t's wall clock in loc as a spreadsheet date: days since its
// epoch, the time of day as the fraction, to the millisecond.
func serial(t time.Time, loc *time.Location) float64 {
	w := t.In(loc)
	wall := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC)
	return float64(wall.Sub(excelEpoch).Milliseconds()) / 86_400_000
}

// widthSample is how many rows a sheet's column widths are judged by,
// held until they are written: a bounded number, so memory stays flat.
const widthSample = 200

// sheetWriter writes a one-sheet workbook row by row straight into w:
// each row is compressed and sent as it comes, so an export of any length
// holds a few hundred rows in memory at most (the first, to size the
// columns), and the first bytes leave long before the last row is read.
// (excelize's stream writer, which reads our job lists, buffers 16 MiB of
// a sheet and sends nothing before the end.) Text is always an inline
// string, never a formula; numbers and times are typed cells. The header
// row is bold, frozen and carries an autofilter over every row.
type sheetWriter struct {
	zw     *zip.Writer
	bw     *bufio.Writer
	name   string
	loc    *time.Location
	header []string
	// sample holds the first rows until the columns are sized.
	sample  [][]Cell
	started bool
	// rows counts the rows written or held, the header included.
	rows int
	cols int
}

// newSheetWriter starts a workbook whose one sheet is called name, with
// header as its first row; times are written as their wall clock in loc.
func newSheetWriter(w io.Writer, name string, header []string, loc *time.Location) (*sheetWriter, error) {
	zw := zip.NewWriter(w)
	parts := []struct{ path, body string }{
		{"[Content_Types].xml", xml.Header + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
			`<Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>` +
			`<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>` +
			`</Types>`},
		{"_rels/.rels", xml.Header + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>` +
			`</Relationships>`},
		{"xl/_rels/workbook.xml.rels", xml.Header + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>` +
			`<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>` +
			`</Relationships>`},
		{"xl/styles.xml", xml.Header + `<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` +
			`<numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy\-mm\-dd hh:mm:ss"/></numFmts>` +
			`<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font><font><b/><sz val="11"/><name val="Calibri"/></font></fonts>` +
			`<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>` +
			`<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>` +
			`<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>` +
			`<cellXfs count="3">` +
			`<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>` +
			`<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>` +
			`<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>` +
			`</cellXfs>` +
			`<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>` +
			`</styleSheet>`},
	}
	for _, p := range parts {
		f, err := zw.Create(p.path)
		if err != nil {
			return nil, err
		}
		if _, err := io.WriteString(f, p.body); err != nil {
			return nil, err
		}
	}
	return &sheetWriter{zw: zw, name: name, loc: loc, header: header, cols: len(header), rows: 1}, nil
}

// WriteRow appends one row. The caller keeps to the rows a sheet holds,
// which rows (the header included) counts toward.
func (s *sheetWriter) WriteRow(cells []Cell) error {
	if !s.started {
		if len(s.sample) < widthSample {
			s.sample = append(s.sample, append([]Cell(nil), cells...))
			s.rows++
			return nil
		}
		if err := s.start(); err != nil {
			return err
		}
	}
	s.rows++
	return s.writeRow(s.rows, cells, "")
}

// start sizes the columns by the header and the rows held, then writes
// the sheet's head, the header and those rows.
func (s *sheetWriter) start() error {
	s.started = true
	f, err := s.zw.Create("xl/worksheets/sheet1.xml")
	if err != nil {
		return err
	}
	s.bw = bufio.NewWriterSize(f, 32<<10)
	s.bw.WriteString(xml.Header + `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` +
		`<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>` +
		`<selection pane="bottomLeft" activeCell="A2" sqref="A2"/></sheetView></sheetViews>`)
	s.bw.WriteString("<cols>")
	for i, wd := range s.widths() {
		n := strconv.Itoa(i + 1)
		s.bw.WriteString(`<col min="` + n + `" max="` + n + `" width="` + strconv.Itoa(wd) + `" customWidth="1"/>`)
	}
	s.bw.WriteString("</cols><sheetData>")
	// A date cell has no zone: the header of a column of times names it.
	header := make([]Cell, len(s.header))
	for i, h := range s.header {
		for _, row := range s.sample {
			if i < len(row) && row[i].isTime() {
				h += " (" + s.loc.String() + ")"
				break
			}
		}
		header[i] = Text(h)
	}
	if err := s.writeRow(1, header, styleHeader); err != nil {
		return err
	}
	for i, row := range s.sample {
		if err := s.writeRow(i+2, row, ""); err != nil {
			return err
		}
	}
	s.sample = nil
	return nil
}

// widths are the columns' widths in characters: the header's, or most
// of the values of the rows held (the longest ninth in ten of them), a
// little room around, within bounds.
func (s *sheetWriter) widths() []int {
	out := make([]int, s.cols)
	for i, h := range s.header {
		var lens []int
		for _, row := range s.sample {
			if i < len(row) {
				lens = append(lens, utf8.RuneCountInString(row[i].display(s.loc)))
			}
		}
		w := utf8.RuneCountInString(h) + 3 // the filter's button
		if slices.ContainsFunc(s.sample, func(row []Cell) bool { return i < len(row) && row[i].isTime() }) {
			w += len(s.loc.String()) + 3 // the zone the header names
		}
		if len(lens) > 0 {
			slices.Sort(lens)
			w = max(w, lens[len(lens)*9/10]+2)
		}
		out[i] = min(max(w, 6), 60)
	}
	return out
}

// display is about what a spreadsheet shows of c, for its width.
func (c Cell) display(loc *time.Location) string {
	if c.isTime() {
		return "2006-01-02 15:04:05"
	}
	return c.String(loc)
}

// writeRow writes row number r; style, if set, styles every cell.
func (s *sheetWriter) writeRow(r int, cells []Cell, style string) error {
	row := strconv.Itoa(r)
	s.bw.WriteString(`<row r="` + row + `">`)
	for i, c := range cells {
		ref := columnName(i) + row
		switch {
		case c.num:
			s.bw.WriteString(`<c r="` + ref + `"><v>` + strconv.FormatFloat(c.n, 'f', -1, 64) + `</v></c>`)
		case c.isTime():
			s.bw.WriteString(`<c r="` + ref + `" s="` + styleTime + `"><v>` + strconv.FormatFloat(serial(c.t, s.loc), 'f', -1, 64) + `</v></c>`)
		case c.s != "":
			s.bw.WriteString(`<c r="` + ref + `"`)
			if style != "" {
				s.bw.WriteString(` s="` + style + `"`)
			}
			s.bw.WriteString(` t="inlineStr"><is><t xml:space="preserve">`)
			writeCellText(s.bw, c.s)
			s.bw.WriteString(`</t></is></c>`)
		}
	}
	_, err := s.bw.WriteString("</row>")
	return err
}

// Close ends the sheet, with its filter over every row written, and the
// workbook, which names that filter.
func (s *sheetWriter) Close() error {
	if !s.started {
		if err := s.start(); err != nil {
			return err
		}
	}
	last := columnName(max(s.cols-1, 0))
	ref := "A1:" + last + strconv.Itoa(max(s.rows, 1))
	s.bw.WriteString(`</sheetData><autoFilter ref="` + ref + `"/></worksheet>`)
	if err := s.bw.Flush(); err != nil {
		return err
	}
	var sheetName strings.Builder
	xml.EscapeText(&sheetName, []byte(s.name))
	quoted := strings.ReplaceAll(sheetName.String(), "'", "''")
	f, err := s.zw.Create("xl/workbook.xml")
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, xml.Header+`<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">`+
		`<sheets><sheet name="`+sheetName.String()+`" sheetId="1" r:id="rId1"/></sheets>`+
		`<definedNames><definedName name="_xlnm._FilterDatabase" localSheetId="0" hidden="1">'`+quoted+`'!$A$1:$`+last+`$`+strconv.Itoa(max(s.rows, 1))+`</definedName></definedNames>`+
		`</workbook>`); err != nil {
		return err
	}
	return s.zw.Close()
}

// columnName is a zero-based column's letters: 0 → A, 26 → AA.
func columnName(i int) string {
	name := ""
	for i++; i > 0; i = (i - 1) / 26 {
		name = string(rune('A'+(i-1)%26)) + name
	}
	return name
}

// writeCellText escapes v for XML, replaces what XML 1.0 cannot hold
// (control characters but tab and line breaks, invalid UTF-8) with U+FFFD,
// and cuts it to what a cell holds.
func writeCellText(w *bufio.Writer, v string) {
	n := 0
	for _, r := range v {
		if n++; n > maxCell {
			return
		}
		switch {
		case r == '<':
			w.WriteString("&lt;")
		case r == '>':
			w.WriteString("&gt;")
		case r == '&':
			w.WriteString("&amp;")
		case r == '\t', r == '\n':
			w.WriteRune(r)
		case r == '\r':
			w.WriteString("&#xD;")
		case r == utf8.RuneError, r < 0x20, r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r < 0xE000:
			w.WriteRune(utf8.RuneError)
		default:
			w.WriteRune(r)
		}
	}
}
