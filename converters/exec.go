package converters

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

// DefaultExecTimeout bounds one run of an exec converter program.
const DefaultExecTimeout = 60 * time.Second

// stderrTail is how much of a program's standard error a file error shows.
const stderrTail = 64 << 10

// Exec runs a program of the folder's choosing (Options.Exec) on each
// file, for formats jobdrop does not know: the program gets the file's
// path as its last argument and prints one TaskDefinition JSON object per
// line on its standard output, read as it comes. A line that is not a
// valid definition is a row error naming the line. A program that exits
// with an error, or outlives Options.Exec.Timeout (it is killed with its
// whole process group), fails the file with the end of its standard
// error.
//
// The zero value is ready to use.
type Exec struct{}

var _ Converter = Exec{}

// Convert runs the folder's program on path; see Converter.
func (Exec) Convert(ctx context.Context, path string, opts Options, emit func(Row) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	file := filepath.Base(path)
	if _, err := os.Stat(path); err != nil {
		return err
	}
	o := opts.Exec
	if o.Program == "" {
		return fmt.Errorf("%s: the exec converter needs a program: set exec.program for the folder", file)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultExecTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, o.Program, append(append([]string(nil), o.Args...), path)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kill the whole group, so children the program started die too.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stderr := &tailBuffer{max: stderrTail}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: exec.program %s: %w", file, o.Program, err)
	}
	n, readErr := readDefinitions(file, stdout, emit)
	if readErr != nil {
		// Stop the program: its output is no longer wanted.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_, _ = io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	switch {
	case readErr != nil:
		return readErr
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s: %s did not finish within %v (exec.timeout) and was killed%s", file, o.Program, timeout, stderr.describe())
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", file, ctx.Err())
	case waitErr != nil:
		return fmt.Errorf("%s: %s failed: %v%s", file, o.Program, waitErr, stderr.describe())
	case n == 0:
		return fmt.Errorf("%s: %w: %s printed no definitions", file, ErrNoRows, o.Program)
	}
	return nil
}

// readDefinitions reads JSON lines of definitions and emits each; it
// returns how many lines it emitted.
func readDefinitions(file string, r io.Reader, emit func(Row) error) (int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	n := 0
	for line := 1; ; line++ {
		text, err := readLine(br, DefaultMaxRecordBytes)
		if errors.Is(err, errRecordTooLong) {
			return n, fmt.Errorf("%s: the program's output line %d is longer than %d bytes", file, line, DefaultMaxRecordBytes)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, fmt.Errorf("%s: reading the program's output: %w", file, err)
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		n++
		if err := emit(definitionLine(file, line, text)); err != nil {
			return n, err
		}
	}
	return n, nil
}

// definitionLine decodes one line of program output.
func definitionLine(file string, line int, text []byte) Row {
	var d task.Definition
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	err := dec.Decode(&d)
	if err == nil && dec.More() {
		err = errors.New("text after the object")
	}
	if err != nil {
		return Row{Line: line, Err: &RowError{File: file, Row: line, Value: clip(string(text)),
			Err: fmt.Errorf("the program printed a line that is not a TaskDefinition JSON object: %v", err)}}
	}
	if d.Action == "" {
		d.Action = task.Insert
	}
	var errs []error
	for _, fe := range task.FieldErrors(d.Validate()) {
		errs = append(errs, &RowError{File: file, Row: line, Column: fe.Field, Value: clip(fe.Value), Err: errors.New(fe.Reason)})
	}
	row := Row{Line: line, Def: d}
	if len(errs) > 0 {
		row.Err = joinRowErrors(errs)
	}
	return row
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.truncated = true
	}
	return len(p), nil
}

// describe renders the kept standard error for a file error.
func (t *tailBuffer) describe() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(bytes.TrimSpace(t.buf))
	if s == "" {
		return "; it wrote nothing on standard error"
	}
	if t.truncated {
		return fmt.Sprintf("; the last %d KiB of its standard error:\n%s", t.max>>10, s)
	}
	return "; its standard error:\n" + s
}
