package converters

import (
	"errors"
	"strconv"
	"strings"

	"github.com/jobdrop/jobdrop/task"
)

// durationForms says how a delay or timeout is written.
const durationForms = "must be a duration such as 90s, 10m, 1h30m or 1d"

// after reads the after column: names separated by commas, or a JSON
// array of names. Whether the names are fit (the task itself, twice, too
// many) is left to the definition's validation.
func (b *rowBuilder) after() []string {
	text, i := b.raw(kindAfter)
	if text == "" || b.failed(i) {
		return nil
	}
	names, err := task.ParseAfter(text)
	if err != nil {
		b.fail(i, text, err)
	}
	return names
}

// outcome reads the on column, in any case.
func (b *rowBuilder) outcome() task.Outcome {
	text, i := b.raw(kindOn)
	if text == "" || b.failed(i) {
		return ""
	}
	o, err := task.ParseOutcome(text)
	if err != nil {
		b.fail(i, text, errors.New("must be success, failure or done (any case)"))
		return ""
	}
	return o
}

// duration reads a delay or timeout column as milliseconds: a duration
// with its unit, or a whole number of milliseconds where the format says
// so (Cell.Millis).
func (b *rowBuilder) duration(k kind) int64 {
	text, i := b.raw(k)
	if text == "" || b.failed(i) {
		return 0
	}
	if b.cells[i].Millis {
		ms, err := strconv.ParseInt(text, 10, 64)
		if err != nil || ms < 0 {
			b.fail(i, text, errors.New("must be a whole number of milliseconds, or a duration such as 90s, 10m, 1h30m or 1d"))
			return 0
		}
		return ms
	}
	ms, err := parseDuration(text)
	if err != nil {
		b.fail(i, text, err)
		return 0
	}
	return ms
}

// parseDuration reads a duration cell, its units in any case. A bare
// number is refused rather than given a unit: 10 could mean seconds,
// minutes or (in light-scheduler's JSON) milliseconds.
func parseDuration(s string) (int64, error) {
	if looksNumeric(s) {
		if strings.ContainsAny(s, ".eE") {
			// What a spreadsheet's time cell holds: a fraction of a day.
			return 0, errors.New("is a number without a unit; " + durationForms + " (a spreadsheet time cell holds a fraction of a day: type the duration as text)")
		}
		return 0, errors.New("is a number without a unit; " + durationForms)
	}
	ms, err := task.ParseDelay(strings.ToLower(s))
	if err != nil {
		return 0, errors.New(durationForms)
	}
	return ms, nil
}

// retry reads the retry column: "3 every 10m backoff 2 max 1h overdue",
// or the JSON object of task.Retry. Its bounds are left to the
// definition's validation.
func (b *rowBuilder) retry() *task.Retry {
	text, i := b.raw(kindRetry)
	if text == "" || b.failed(i) {
		return nil
	}
	r, err := task.ParseRetry(text)
	if err != nil {
		b.fail(i, text, err)
		return nil
	}
	return r
}
