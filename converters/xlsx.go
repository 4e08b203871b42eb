package converters

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"
)

// Default bounds of a workbook, checked against the sizes its zip
// directory declares before anything is unpacked (the zip reader fails an
// entry that unpacks to more than it declared).
const (
	// DefaultMaxUnzippedBytes bounds the whole unpacked workbook.
	DefaultMaxUnzippedBytes = 128 << 20
	// DefaultMaxXMLPartBytes bounds each part the Excel reader holds in
	// memory; larger sheets and shared strings are unpacked to a
	// temporary file and streamed from there.
	DefaultMaxXMLPartBytes = 16 << 20
)

// headerScanRows is how far down a sheet the header row is looked for.
const headerScanRows = 100

// maxExcelSerial is 9999-12-31, the last date Excel can show.
const maxExcelSerial = 2958466

// XLSX reads Excel workbooks (.xlsx, .xlsm): one sheet (the first unless
// Options.XLSX.Sheet names another), a header row naming the columns (see
// Columns) found below any title rows, then one row per task. Rows are read
// one at a time from the sheet's XML, so a large sheet is not held in
// memory; a workbook that unpacks to more than the limits is refused
// before it is unpacked.
//
// Cells are read as stored, not as displayed: numbers without float
// noise ("15", "0.3"), dates in start and end as the date and time they
// show (in the row's time zone, following the workbook's 1900 or 1904
// date system). A number or time cell under delay or timeout is a row
// error, as a bare number is in every tabular format (a time cell holds a
// fraction of a day): durations are typed as text, such as 10m. Row
// numbers are those Excel shows.
//
// The zero value is ready to use.
type XLSX struct {
	// MaxUnzippedBytes bounds the unpacked workbook. Defaults to
	// DefaultMaxUnzippedBytes.
	MaxUnzippedBytes int64
	// MaxXMLPartBytes bounds each part held in memory. Defaults to
	// DefaultMaxXMLPartBytes.
	MaxXMLPartBytes int64
}

var _ Converter = XLSX{}

func (x XLSX) limits() (total, part int64) {
	total, part = x.MaxUnzippedBytes, x.MaxXMLPartBytes
	if total <= 0 {
		total = DefaultMaxUnzippedBytes
	}
	if part <= 0 {
		part = DefaultMaxXMLPartBytes
	}
	return total, min(part, total)
}

// Convert reads the workbook at path; see Converter.
func (x XLSX) Convert(ctx context.Context, path string, opts Options, emit func(Row) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	file := filepath.Base(path)
	total, part := x.limits()
	if err := checkZip(path, file, total, part); err != nil {
		return err
	}
	var f *excelize.File
	err := guard(file, func() (err error) {
		// Cells are read raw: as stored, not through their number format
		// (which would turn 15 into "15.00" or a date into "03-01-26").
		f, err = excelize.OpenFile(path, excelize.Options{UnzipSizeLimit: total, UnzipXMLSizeLimit: part, RawCellValue: true})
		return err
	})
	if f != nil {
		defer f.Close()
	}
	if err != nil {
		return fmt.Errorf("%s: not a readable Excel workbook: %w; save it from Excel as .xlsx", file, err)
	}

	sheets := f.GetSheetList()
	sheet := opts.XLSX.Sheet
	switch {
	case len(sheets) == 0:
		return fmt.Errorf("%s: %w: the workbook has no sheet", file, ErrNoRows)
	case sheet == "":
		sheet = sheets[0]
	default:
		found := false
		for _, s := range sheets {
			if strings.EqualFold(strings.TrimSpace(s), strings.TrimSpace(sheet)) {
				sheet, found = s, true
				break
			}
		}
		if !found {
			return fmt.Errorf("%s: no sheet named %q (the workbook has %s); fix xlsx.sheet in the folder's configuration", file, opts.XLSX.Sheet, quoteList(sheets))
		}
	}
	date1904 := false
	if props, err := f.GetWorkbookProps(); err == nil && props.Date1904 != nil {
		date1904 = *props.Date1904
	}

	var rows *excelize.Rows
	if err := guard(file, func() (err error) { rows, err = f.Rows(sheet); return err }); err != nil {
		return fmt.Errorf("%s: sheet %q: %w", file, sheet, err)
	}
	defer rows.Close()
	sr := sheetRows{rows: rows}

	header := opts.XLSX.HeaderRow
	nameHeaders := headerNames(opts.Mapping)
	rowNum := 0 // the Excel row number of the last row read
	read := func() ([]string, bool, error) {
		rowNum++
		return sr.next()
	}
	noHeader := func() error {
		return fmt.Errorf("%s: sheet %q: no header row: none of the first %d rows has a %s column; add a header row naming the columns (%s), map a column to name, or set xlsx.header_row",
			file, sheet, headerScanRows, quoteList(nameHeaders), strings.Join(DefaultColumns(), ", "))
	}

	var cols *Columns
	seen := false // a row with text came before
	for cols == nil {
		cells, ok, err := read()
		switch {
		case err != nil:
			return fmt.Errorf("%s: sheet %q: row %d: %w", file, sheet, rowNum, err)
		case !ok && header > 0:
			return fmt.Errorf("%s: sheet %q ends at row %d, before its header row %d (xlsx.header_row)", file, sheet, rowNum-1, header)
		case !ok && !seen:
			return fmt.Errorf("%s: %w: sheet %q is empty; expected a header row naming the columns (%s), then one row per task", file, ErrNoRows, sheet, strings.Join(DefaultColumns(), ", "))
		case !ok:
			return noHeader()
		case header > 0 && rowNum < header:
			continue
		case header > 0 && blank(cells):
			return fmt.Errorf("%s: sheet %q: header row %d (xlsx.header_row) is empty", file, sheet, header)
		case header == 0 && rowNum > headerScanRows:
			return noHeader()
		case blank(cells):
			continue
		}
		seen = true
		if header == 0 && !isHeader(cells, nameHeaders) {
			continue
		}
		if cols, err = NewColumns(file, rowNum, cells, opts); err != nil {
			return err
		}
	}

	dateCols := [...]int{cols.at[kindStart], cols.at[kindEnd]}
	var cells []Cell
	n := 0
	for {
		if rowNum%64 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
		texts, ok, err := read()
		if err != nil {
			return fmt.Errorf("%s: sheet %q: row %d: %w", file, sheet, rowNum, err)
		}
		if !ok {
			break
		}
		if blank(texts) {
			continue
		}
		// The cells of a row are not kept past emit (Cells copies what it
		// needs), so one slice serves every row.
		cells = slices.Grow(cells[:0], len(texts))[:len(texts)]
		for i, t := range texts {
			cells[i] = Cell{Text: cleanNumber(t)}
		}
		for _, i := range dateCols {
			if i >= 0 && i < len(cells) {
				cells[i] = excelDate(cells[i], date1904)
			}
		}
		n++
		if err := emit(cols.Cells(rowNum, cells)); err != nil {
			return err
		}
	}
	if n == 0 {
		return fmt.Errorf("%s: %w: sheet %q has a header row but no task rows", file, ErrNoRows, sheet)
	}
	return nil
}

// guard runs one call into the Excel reader and turns a panic in it into
// an error, so a malformed workbook fails alone instead of the process.
func guard(file string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = malformed(r)
		}
	}()
	return fn()
}

// malformed is the error of a panic in the Excel reader.
func malformed(r any) error {
	return fmt.Errorf("the Excel reader failed on malformed content (%v)", r)
}

// sheetRows reads a sheet one row at a time, guarded as guard does, without
// a closure per row.
type sheetRows struct {
	rows *excelize.Rows
}

// next reads one row's cells, raw (the file is opened with RawCellValue).
// ok is false at the end of the sheet.
func (s *sheetRows) next() (cells []string, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = malformed(r)
		}
	}()
	if !s.rows.Next() {
		return nil, false, s.rows.Error()
	}
	cells, err = s.rows.Columns()
	return cells, true, err
}

// checkZip refuses a workbook whose parts unpack beyond the limits, from
// the sizes its zip directory declares, before anything is unpacked.
// Worksheets and shared strings may exceed part (they are streamed from a
// temporary file); other parts are held in memory whole and may not.
func checkZip(path, file string, total, part int64) error {
	zr, err := zip.OpenReader(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%s: not an Excel workbook (.xlsx, .xlsm): %v; old .xls files must be saved again as .xlsx", file, err)
	}
	defer zr.Close()
	var sum uint64
	for _, zf := range zr.File {
		sum += zf.UncompressedSize64
		if sum > uint64(total) {
			return fmt.Errorf("%s: the workbook unpacks to more than %d MiB (the limit); a job list that large is more likely a zip bomb: split the list or export it as CSV", file, total>>20)
		}
		name := strings.ToLower(strings.ReplaceAll(zf.Name, `\`, "/"))
		streamed := strings.HasPrefix(name, "xl/worksheets/sheet") || name == "xl/sharedstrings.xml"
		if !streamed && zf.UncompressedSize64 > uint64(part) {
			return fmt.Errorf("%s: part %s unpacks to %d MiB, over the %d MiB limit of a part held in memory", file, zf.Name, zf.UncompressedSize64>>20, part>>20)
		}
	}
	return nil
}

// headerNames are the header texts that mark the header row: name, and
// every file column the mapping maps to name.
func headerNames(mapping map[string]string) []string {
	names := []string{"name"}
	for from, to := range mapping {
		if strings.EqualFold(strings.TrimSpace(to), "name") {
			names = append(names, strings.ToLower(strings.TrimSpace(from)))
		}
	}
	return names
}

// isHeader reports whether a row has a cell naming the name column.
func isHeader(cells []string, names []string) bool {
	for _, c := range cells {
		c = strings.ToLower(strings.TrimSpace(c))
		for _, n := range names {
			if c == n {
				return true
			}
		}
	}
	return false
}

// cleanNumber renders a stored number as a person reads it: at most 15
// significant digits, as Excel shows them, and no trailing zeros ("15",
// not "15.000000"; "0.3", not "0.30000000000000004"). Other text is
// returned as is.
func cleanNumber(s string) string {
	if s == "" || !looksNumeric(s) || plainInteger(s) {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return s
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	out := strconv.FormatFloat(f, 'g', 15, 64)
	if strings.ContainsAny(out, "e") {
		return s
	}
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	return out
}

// plainInteger is true for an integer already written as cleanNumber
// writes it: up to 15 digits, no sign but a minus, no leading zero, not
// "-0".
func plainInteger(s string) bool {
	digits := s
	if digits != "" && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && (len(digits) > 1 || len(s) > 1)) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// looksNumeric is true for the text of a stored number: digits with an
// optional sign, point and exponent, and nothing else (so "1_000" or
// "0x1F" stay text).
func looksNumeric(s string) bool {
	digits := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+':
		default:
			return false
		}
	}
	return digits
}

// excelDate reads a start or end cell that holds a stored date: a serial
// number (days since 1900 or 1904; a fraction is the time of day), which
// is what a date cell holds whatever its number format. Larger numbers
// are left to be read as epoch milliseconds, text as text.
func excelDate(c Cell, date1904 bool) Cell {
	if !looksNumeric(c.Text) {
		return c
	}
	v, err := strconv.ParseFloat(c.Text, 64)
	if err != nil || v <= 0 || v > maxExcelSerial {
		return c
	}
	t, err := excelize.ExcelDateToTime(v, date1904)
	if err != nil {
		return c
	}
	// Round to the second, as Excel shows times; the fraction of a day
	// carries float error (08:00 is 0.33333333333333331).
	t = t.Round(time.Second)
	return Cell{Text: c.Text, Time: t, Local: true}
}

// quoteList renders names for a message: "a", "b", "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
