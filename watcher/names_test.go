//go:build linux

package watcher

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNamesAreCheckedAndShownSafely: names with control characters,
// invalid UTF-8, bidirectional overrides or over MaxNameBytes are refused
// with a report that quotes them; names that only look odd (leading
// dashes, dots, backslashes, non-ASCII letters) are handled as they are,
// except hidden ones (a leading dot), which are never touched.
// No name gets a raw control character into the log, and nothing is
// written outside the folder.
func TestNamesAreCheckedAndShownSafely(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "inbox")
	long := strings.Repeat("x", 246) + ".csv"
	refused := map[string]string{ // name → its failed/ name
		"line\nbreak.csv":                "",
		"tab\there.csv":                  "",
		"esc\x1b[31mred\x1b[0m.csv":      "",
		"cr.csv\r":                       "",
		"forged.csv\ntime=x level=ERROR": "",
		"latin1-\xe9t\xe9.csv":           "",
		"bidi-\u202egpj.csv":             "",
		long:                             strings.Repeat("x", 255-len(ErrorsSuffix)-len(".csv")-len("~")) + "~.csv",
	}
	handled := []string{"-rf.csv", "--help.csv", "jobs..csv", `evil\..\..\x.csv`, "ünïcode ✓.csv",
		strings.Repeat("y", MaxNameBytes-len(".csv")) + ".csv"}
	logs, log := logTo(t)
	obs := &observer{}
	w, err := New(fastConfig(dir), obs, log)
	if err != nil {
		t.Fatal(err)
	}
	run(t, w)
	for name := range refused {
		write(t, filepath.Join(dir, name), "content of "+name)
	}
	for _, name := range handled {
		write(t, filepath.Join(dir, name), "content of "+name)
	}
	// A name starting with a dot is hidden, like a file still being
	// written: never touched.
	hidden := filepath.Join(dir, `..\..\hidden.csv`)
	write(t, hidden, "hidden")

	for _, name := range handled {
		waitFor(t, "archive/"+name, func() bool { return exists(filepath.Join(dir, ArchiveDir, name)) })
	}
	for name, as := range refused {
		report := failedReport(t, dir, cmp.Or(as, name))
		want := DisplayName(name) + ": not taken: "
		if !strings.HasPrefix(report, want) || strings.Count(report, "\n") != 1 {
			t.Errorf("report of %q = %q, want one line starting with %q", name, report, want)
		}
		if name != long && !strings.HasPrefix(want, `"`) {
			t.Errorf("DisplayName(%q) = %s, want it quoted", name, want)
		}
		if got := read(t, filepath.Join(dir, FailedDir, cmp.Or(as, name))); got != "content of "+name {
			t.Errorf("failed/%q holds %q", cmp.Or(as, name), got)
		}
	}
	if r := read(t, filepath.Join(dir, FailedDir, refused[long]+ErrorsSuffix)); !strings.Contains(r, "its name is 250 bytes long, over the limit of 200") {
		t.Errorf("report of the long name: %q", r)
	}
	got := obs.names()
	slices.Sort(got)
	want := slices.Clone(handled)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
	for _, ev := range obs.seen() {
		if name, ok := strings.CutPrefix(ev, "seen "); ok && !slices.Contains(handled, name) {
			t.Errorf("a refused name was announced as seen: %q", name)
		}
	}

	// Every line of the log is one record: no name forged a line, and no
	// control character reached it raw.
	text := logs.String()
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if !strings.HasPrefix(line, "time=") {
			t.Errorf("log line not written by the logger: %q", line)
		}
		if strings.ContainsFunc(line, func(r rune) bool { return r < ' ' || r == 0x7f || r == 0x202e }) {
			t.Errorf("log line holds a raw control character: %q", line)
		}
	}
	if !strings.Contains(text, `file="esc\x1b[31mred\x1b[0m.csv"`) {
		t.Errorf("the log does not show the escape sequence escaped")
	}
	if !exists(hidden) {
		t.Error(`..\..\hidden.csv was touched`)
	}
	if entries, err := os.ReadDir(base); err != nil || len(entries) != 1 {
		t.Errorf("beside the folder: %v, %v; want the folder alone", entries, err)
	}
}
