package converters

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jobdrop/jobdrop/task"
)

// CSVOptions tune how a folder's CSV files are read.
type CSVOptions struct {
	// Delimiter forces the separator: one character, or "tab". Empty
	// detects ",", ";" or tab from the header row.
	Delimiter string `yaml:"delimiter"`
	// Encoding is the text encoding: "utf-8", "utf-16" (byte order mark
	// required), "utf-16le", "utf-16be" or "windows-1252". Empty reads
	// UTF-8, or UTF-16 when the file starts with a UTF-16 byte order mark.
	Encoding string `yaml:"encoding"`
	// LazyQuotes accepts a quote inside an unquoted value and a stray quote
	// inside a quoted one, as some exports write them, instead of
	// rejecting the row.
	LazyQuotes bool `yaml:"lazy_quotes"`
}

// XLSXOptions tune how a folder's Excel workbooks are read.
type XLSXOptions struct {
	// Sheet is the name of the sheet holding the jobs. Defaults to the
	// first sheet.
	Sheet string `yaml:"sheet"`
	// HeaderRow is the row number (as Excel shows it) of the header row.
	// 0 detects it: the first row with a "name" column (or a column the
	// mapping maps to name), so title rows above the table are skipped.
	HeaderRow int `yaml:"header_row"`
}

// CrontabOptions tune how a folder's crontab files are read.
type CrontabOptions struct {
	// System reads the system format (/etc/crontab, /etc/cron.d): a user
	// field between the schedule and the command. Defaults to the user
	// format (crontab -e), which has none.
	System bool `yaml:"system"`
}

// ExecOptions configure the exec converter: an external program that
// turns a file into task definitions.
type ExecOptions struct {
	// Program is the executable to run; the file's path is passed as its
	// last argument. Required by the exec converter.
	Program string `yaml:"program"`
	// Args come before the file's path.
	Args []string `yaml:"args"`
	// Timeout bounds one run; the program and its children are killed
	// after it. Defaults to DefaultExecTimeout.
	Timeout time.Duration `yaml:"timeout"`
}

// Validate checks the format options of a folder, so a bad setting is
// reported when the configuration loads rather than on the first file.
func (o Options) Validate() error {
	var errs []error
	if _, err := o.CSV.delimiter(); err != nil {
		errs = append(errs, fmt.Errorf("csv.delimiter: %w", err))
	}
	if _, err := lookupEncoding(o.CSV.Encoding); err != nil {
		errs = append(errs, fmt.Errorf("csv.encoding: %w", err))
	}
	if o.XLSX.HeaderRow < 0 {
		errs = append(errs, fmt.Errorf("xlsx.header_row: %d: must be 0 (detect) or a row number", o.XLSX.HeaderRow))
	}
	if _, err := task.ParseDialect(o.CronDialect); err != nil {
		errs = append(errs, fmt.Errorf("cron_dialect: %w", err))
	}
	if o.Exec.Timeout < 0 {
		errs = append(errs, fmt.Errorf("exec.timeout: %v: must not be negative", o.Exec.Timeout))
	}
	return errors.Join(errs...)
}

// delimiter is the forced separator, or 0 to detect it.
func (o CSVOptions) delimiter() (rune, error) {
	d := o.Delimiter
	switch {
	case d == "":
		return 0, nil
	case strings.EqualFold(d, "tab") || d == `\t`:
		return '\t', nil
	}
	r, size := utf8.DecodeRuneInString(d)
	if size != len(d) || r == utf8.RuneError || r == '"' || r == '\r' || r == '\n' {
		return 0, fmt.Errorf("%q: want one character such as \",\" \";\" \"|\" or \"tab\" (not a quote or line break)", d)
	}
	return r, nil
}
