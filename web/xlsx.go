package web

import (
	"archive/zip"
	"bufio"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// xlsxMaxCell is the most characters a spreadsheet cell holds.
const xlsxMaxCell = 32767

// xlsxMaxRows is the most rows a spreadsheet opens of a sheet (a variable
// so that tests can reach it).
var xlsxMaxRows = 1 << 20

// sheetWriter writes a one-sheet workbook of text cells row by row
// straight into w: each row is compressed and sent as it comes, so an
// export of any length holds one row in memory, and the first bytes leave
// before the last row is read. (excelize's stream writer, which reads our
// job lists, buffers 16 MiB of a sheet and sends nothing before the end.)
// Every cell is an inline string: none is ever a formula.
type sheetWriter struct {
	zw   *zip.Writer
	bw   *bufio.Writer
	rows int
}

// newSheetWriter starts a workbook whose one sheet is called name, with
// widths (in characters) for its first columns.
func newSheetWriter(w io.Writer, name string, widths []int) (*sheetWriter, error) {
	zw := zip.NewWriter(w)
	var sheetName strings.Builder
	xml.EscapeText(&sheetName, []byte(name))
	parts := []struct{ path, body string }{
		{"[Content_Types].xml", xml.Header + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
			`<Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>` +
			`</Types>`},
		{"_rels/.rels", xml.Header + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>` +
			`</Relationships>`},
		{"xl/workbook.xml", xml.Header + `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">` +
			`<sheets><sheet name="` + sheetName.String() + `" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", xml.Header + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>` +
			`</Relationships>`},
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
	f, err := zw.Create("xl/worksheets/sheet1.xml")
	if err != nil {
		return nil, err
	}
	s := &sheetWriter{zw: zw, bw: bufio.NewWriterSize(f, 32<<10)}
	s.bw.WriteString(xml.Header + `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">`)
	if len(widths) > 0 {
		s.bw.WriteString("<cols>")
		for i, wd := range widths {
			n := strconv.Itoa(i + 1)
			s.bw.WriteString(`<col min="` + n + `" max="` + n + `" width="` + strconv.Itoa(wd) + `" customWidth="1"/>`)
		}
		s.bw.WriteString("</cols>")
	}
	s.bw.WriteString("<sheetData>")
	return s, nil
}

// WriteRow appends one row of text cells. The caller keeps to
// xlsxMaxRows, which rows counts toward.
func (s *sheetWriter) WriteRow(cells []string) error {
	s.rows++
	row := strconv.Itoa(s.rows)
	s.bw.WriteString(`<row r="` + row + `">`)
	for i, v := range cells {
		if v == "" {
			continue
		}
		s.bw.WriteString(`<c r="` + columnName(i) + row + `" t="inlineStr"><is><t xml:space="preserve">`)
		writeCellText(s.bw, v)
		s.bw.WriteString(`</t></is></c>`)
	}
	_, err := s.bw.WriteString("</row>")
	return err
}

// Close ends the sheet and the archive.
func (s *sheetWriter) Close() error {
	s.bw.WriteString("</sheetData></worksheet>")
	if err := s.bw.Flush(); err != nil {
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
		if n++; n > xlsxMaxCell {
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
