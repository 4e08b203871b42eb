package converters

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// script writes a shell script into a temporary folder and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plugin.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func runExec(t *testing.T, opts ExecOptions, file string) ([]Row, error) {
	t.Helper()
	var rows []Row
	err := Exec{}.Convert(context.Background(), file, Options{Exec: opts}, func(r Row) error {
		rows = append(rows, r)
		return nil
	})
	return rows, err
}

func TestExecSamplePlugin(t *testing.T) {
	rows, err := runExec(t, ExecOptions{Program: filepath.Join("..", "samples", "converters", "pipes2jsonl.sh")}, filepath.Join("..", "samples", "converters", "jobs.pipes"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Err != nil || rows[0].Def.Name != "nightly-extract" || rows[2].Def.Frequency.Time != 30 {
		t.Fatalf("rows = %+v, want the 3 jobs of jobs.pipes", rows)
	}
}

func TestExec(t *testing.T) {
	input := filepath.Join(t.TempDir(), "jobs.legacy")
	if err := os.WriteFile(input, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := `{"host":"acme","name":"a","action":"INSERT","frequency":null,"topic":"jobs","start":null,"data":null}`

	t.Run("rows and row errors", func(t *testing.T) {
		prog := script(t, `echo "$1 $2" >&2
echo '`+good+`'
echo
echo 'not json'
echo '{"host":"acme","name":"b","topic":"jobs","action":"INSERT","frequncy":null}'
echo '{"host":"acme","name":"c","topic":"jobs","action":"LATER"}'
`)
		rows, err := runExec(t, ExecOptions{Program: prog, Args: []string{"--strict"}}, input)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 4 || rows[0].Err != nil || rows[0].Def.Name != "a" {
			t.Fatalf("rows = %+v, want a valid row then 3 bad ones", rows)
		}
		for i, want := range []string{
			"jobs.legacy: row 3: value \"not json\": the program printed a line that is not a TaskDefinition JSON object",
			`jobs.legacy: row 4: value "{\"host\":\"acme\"`,
			"jobs.legacy: row 5: column action: value \"LATER\"",
		} {
			r := rows[i+1]
			if r.Err == nil || !strings.HasPrefix(r.Err.Error(), want) || checkRow("jobs.legacy", rows[i].Line, r) != nil {
				t.Errorf("row %d error = %v, want it to start with %q", r.Line, r.Err, want)
			}
		}
	})
	t.Run("non-zero exit shows standard error", func(t *testing.T) {
		prog := script(t, `head -c 100000 /dev/zero | tr '\0' 'x' >&2; echo >&2; echo "cannot parse line 7: bad date" >&2; exit 3`)
		_, err := runExec(t, ExecOptions{Program: prog}, input)
		if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.HasSuffix(err.Error(), "cannot parse line 7: bad date") ||
			!strings.Contains(err.Error(), "the last 64 KiB of its standard error") || len(err.Error()) > 70<<10 {
			t.Fatalf("err = %.300q…, want the exit status and the bounded end of standard error", err)
		}
	})
	t.Run("timeout kills the process group", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "child.pid")
		prog := script(t, "sleep 30 &\necho $! > "+pidFile+"\nwait\n")
		start := time.Now()
		_, err := runExec(t, ExecOptions{Program: prog, Timeout: 300 * time.Millisecond}, input)
		if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms (exec.timeout) and was killed") {
			t.Fatalf("err = %v, want a timeout error", err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("took %v; the program was not killed", took)
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		pid := strings.TrimSpace(string(b))
		// Once killed and reaped by init, the child's /proc entry goes (a
		// zombie shows "Z"). The kill is delivered asynchronously: allow it
		// a moment, far less than the 30 s the child would otherwise run.
		running := func() (string, bool) {
			stat, err := os.ReadFile("/proc/" + pid + "/stat")
			return string(stat), err == nil && !strings.Contains(string(stat), ") Z")
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			stat, alive := running()
			if !alive {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("child %s of the plugin still runs 5 s after the timeout: %s", pid, stat)
				break
			}
		}
	})
	t.Run("no program", func(t *testing.T) {
		_, err := runExec(t, ExecOptions{}, input)
		if err == nil || !strings.Contains(err.Error(), "set exec.program") {
			t.Fatalf("err = %v, want a hint to set exec.program", err)
		}
	})
	t.Run("program missing", func(t *testing.T) {
		_, err := runExec(t, ExecOptions{Program: filepath.Join(t.TempDir(), "absent")}, input)
		if err == nil || !strings.Contains(err.Error(), "exec.program") {
			t.Fatalf("err = %v, want an error naming exec.program", err)
		}
	})
}

// FuzzExec feeds arbitrary program output to the reader of the exec
// converter: it must never panic, and every row it emits is a valid
// definition or a *RowError naming the file and the line.
func FuzzExec(f *testing.F) {
	f.Add([]byte(`{"host":"acme","name":"a","topic":"t","frequency":{"timeUnit":"MINUTES","time":5}}` + "\n"))
	f.Add([]byte("{\"host\":\"a\",\"name\":\"b\",\"topic\":\"t\",\"extra\":1}\n\nnot json\n{}{}\n"))
	f.Add([]byte(`{"host":"a","name":"b","topic":"t","start":-5,"cron":"61 * * * *"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		prev := 0
		_, _ = readDefinitions("plugin", bytes.NewReader(b), func(r Row) error {
			if err := checkRow("plugin", prev, r); err != nil {
				t.Fatal(err)
			}
			prev = r.Line
			return nil
		})
	})
}
