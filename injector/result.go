package injector

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/record"
)

// FileDone is what became of one file, for Config.OnFile.
type FileDone struct {
	// Outcome is Injected, Partial, Duplicate, Rejected (invalid
	// content), or Failed (any other error but ErrUnavailable, such as
	// a file that cannot be read).
	Outcome Outcome
	// Rows counts the data rows read; Rejected the invalid ones.
	Rows, Rejected int
	// Took is the time from Inject's call, right after the watcher
	// claimed the file, to the commit of its transaction, by the real
	// clock; zero when nothing was committed.
	Took time.Duration
}

// ErrUnavailable marks the error of a file that could not be injected for
// a reason outside it: the brokers did not take its transaction (they are
// unreachable, or refuse writes while their disk is full), or the batches
// injected before could not be looked up. Nothing of the file was
// injected; injecting it again later may succeed.
var ErrUnavailable = errors.New("kafka or the batch store is unavailable")

// errClosed is the error of a transaction asked of a closed Injector.
var errClosed = errors.New("injector closed")

// Outcome says what became of a file.
type Outcome string

// The outcomes of Inject.
const (
	Injected  Outcome = "injected"
	Duplicate Outcome = "duplicate"
	Rejected  Outcome = "rejected"
	// Partial is a file whose valid rows were injected and whose invalid
	// ones were left out, under PolicyGoodRows.
	Partial Outcome = "partial"
	// Held is a file of a sync folder that would delete too much of its
	// source: nothing was injected; it waits for an operator.
	Held Outcome = "held"
	// Failed is reported to Config.OnFile, never returned by Inject: the
	// file could not be injected for a reason other than its content.
	Failed Outcome = "failed"
)

// Result describes an injected, duplicate, rejected or partly injected file.
type Result struct {
	Outcome Outcome
	// Batch is the file's batch record; Batch.Rows counts the data rows
	// read and Batch.Rejected those left out.
	Batch record.Batch
	// Report lists the rows left out of a Partial file.
	Report *RejectedError
}

// RejectedError is returned for a file with invalid rows; its message is the
// error report, one line per problem.
type RejectedError struct {
	File string
	// Warnings are the first warnings of valid rows: they reach the
	// file's batch whatever becomes of it.
	Warnings []string
	Rows     int // data rows read
	Bad      int // rows rejected
	// Problems counts what was wrong: a row may have several problems.
	Problems int
	Errors   []string // the first MaxErrors problems
	Err      error    // a problem with the file as a whole, if any
	// Partial is set when the other rows were injected (PolicyGoodRows).
	Partial bool
}

// fail records one problem, keeping the first max lines of them.
func (e *RejectedError) fail(line string, max int) {
	e.Problems++
	if len(e.Errors) < max {
		e.Errors = append(e.Errors, line)
	}
}

// read counts row r of file f: the row, its first warnings, its progress
// and, when it is invalid, each of its problems. It reports whether r is
// invalid.
func (e *RejectedError) read(r *converters.Row, f File, max int) (invalid bool) {
	e.Rows++
	for _, w := range r.Warnings {
		if len(e.Warnings) < record.MaxBatchErrors {
			e.Warnings = append(e.Warnings, w)
		}
	}
	if f.Progress != nil {
		f.Progress()
	}
	if r.Err == nil {
		return false
	}
	errs := converters.RowErrors(r.Err)
	for _, re := range errs {
		e.fail(re.Error(), max)
	}
	if len(errs) == 0 {
		e.fail(r.Err.Error(), max)
	}
	return true
}

// RowLines lists the problems: the file's own, then one per bad row.
func (e *RejectedError) RowLines() []string {
	var out []string
	if e.Err != nil {
		if lines := converters.RowErrors(e.Err); len(lines) > 0 {
			for _, l := range lines {
				out = append(out, l.Error())
			}
		} else {
			out = append(out, e.Err.Error())
		}
	}
	return append(out, e.Errors...)
}

func (e *RejectedError) Error() string {
	var b strings.Builder
	if e.Err != nil {
		if lines := converters.RowErrors(e.Err); len(lines) > 0 {
			for _, l := range lines {
				fmt.Fprintf(&b, "%s\n", l)
			}
		} else if msg := e.Err.Error(); strings.HasPrefix(msg, e.File+":") {
			fmt.Fprintf(&b, "%s\n", msg) // it names the file already
		} else {
			fmt.Fprintf(&b, "%s: %s\n", e.File, msg)
		}
	}
	switch {
	case e.Bad > 0 && e.Partial:
		fmt.Fprintf(&b, "%s: %d of %d rows rejected; the other %d were injected\n", e.File, e.Bad, e.Rows, e.Rows-e.Bad)
	case e.Bad > 0:
		fmt.Fprintf(&b, "%s: %d of %d rows rejected; nothing was injected\n", e.File, e.Bad, e.Rows)
	}
	for _, line := range e.Errors {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if e.Problems > len(e.Errors) {
		fmt.Fprintf(&b, "… and %d more problems\n", e.Problems-len(e.Errors))
	}
	return strings.TrimSuffix(b.String(), "\n")
}
