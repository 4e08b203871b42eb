//go:build linux

package watcher

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jobdrop/jobdrop/internal/disktest"
)

// TestRetryErrorKeepsTheFileAndItsPlace: a file whose handler says
// "retry" stays in .processing and is handed over again until it is
// handled, logged once; the files dropped after it in its folder wait,
// other folders go on.
func TestRetryErrorKeepsTheFileAndItsPlace(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	release := make(chan struct{})
	var mu sync.Mutex
	attempts := 0
	rec := &recorder{react: func(_ context.Context, f File) error {
		if f.Name != "first.csv" {
			return nil
		}
		mu.Lock()
		attempts++
		mu.Unlock()
		select {
		case <-release:
			return nil
		default:
			return &RetryError{Err: errors.New("inject first.csv: brokers refuse writes")}
		}
	}}
	logs, log := logTo(t)
	start(t, fastConfig(dirA, dirB), rec, log)

	write(t, filepath.Join(dirA, "first.csv"), "first")
	waitFor(t, "first.csv claimed", func() bool { return exists(filepath.Join(dirA, ProcessingDir, "first.csv")) })
	write(t, filepath.Join(dirA, "second.csv"), "second")
	write(t, filepath.Join(dirB, "b.csv"), "b")
	waitFor(t, "B/archive/b.csv", func() bool { return exists(filepath.Join(dirB, ArchiveDir, "b.csv")) })
	waitFor(t, "three attempts at first.csv", func() bool { mu.Lock(); defer mu.Unlock(); return attempts >= 3 })
	if !exists(filepath.Join(dirA, ProcessingDir, "first.csv")) || exists(filepath.Join(dirA, FailedDir, "first.csv")) {
		t.Fatal("first.csv left .processing while it is retried")
	}
	if slices.Contains(rec.names(), "second.csv") {
		t.Fatal("second.csv handled before first.csv, dropped before it")
	}

	close(release)
	waitFor(t, "archive/second.csv", func() bool { return exists(filepath.Join(dirA, ArchiveDir, "second.csv")) })
	if !exists(filepath.Join(dirA, ArchiveDir, "first.csv")) {
		t.Error("first.csv not archived once handled")
	}
	var order []string
	for _, n := range rec.names() {
		if len(order) == 0 || order[len(order)-1] != n {
			order = append(order, n)
		}
	}
	if i, j := slices.Index(order, "first.csv"), slices.Index(order, "second.csv"); i < 0 || j < i || slices.Contains(order[j:], "first.csv") {
		t.Errorf("handled in order %v, want every attempt at first.csv before second.csv", order)
	}
	text := logs.String()
	if n := strings.Count(text, "level=ERROR msg=\"cannot handle the file"); n != 1 {
		t.Errorf("%d error lines for first.csv's retries, want 1:\n%s", n, text)
	}
	if !strings.Contains(text, "retry succeeded: handle the file") {
		t.Error("the success after retries is not logged")
	}
}

// TestFullDiskKeepsFilesUntilTheyCanBeMoved: on a folder whose disk is
// full, a rejected file's report cannot be written: the file stays in
// .processing, the failure is logged once, the files dropped after it
// wait, and once space is freed it moves to failed/ with its report and
// the others follow. Runs on a real 1 MiB tmpfs.
func TestFullDiskKeepsFilesUntilTheyCanBeMoved(t *testing.T) {
	dir := disktest.Tmpfs(t, "1m")
	if err := createLayout(dir); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "bad.csv"), "bad")
	free := disktest.Fill(t, dir)

	rec := &recorder{react: func(_ context.Context, f File) error {
		if f.Name == "bad.csv" {
			return errors.New("bad.csv: row 2: column time: not a number")
		}
		return nil
	}}
	logs, log := logTo(t)
	start(t, fastConfig(dir), rec, log)
	waitFor(t, "the failed move logged", func() bool { return strings.Contains(logs.String(), "cannot move the file to failed/") })
	if !exists(filepath.Join(dir, ProcessingDir, "bad.csv")) {
		t.Fatal("bad.csv is not kept in .processing while failed/ is full")
	}
	if got := files(t, filepath.Join(dir, FailedDir)); len(got) != 0 {
		t.Fatalf("failed/ holds %v on a full disk", got)
	}
	// Neither needs a data block, so both can be made on the full disk.
	symlink(t, "/etc/passwd", filepath.Join(dir, "link.csv"))
	write(t, filepath.Join(dir, "next.csv"), "")

	free()
	if got := failedReport(t, dir, "bad.csv"); got != "bad.csv: row 2: column time: not a number\n" {
		t.Errorf("report %q", got)
	}
	if got := failedReport(t, dir, "link.csv"); !strings.HasPrefix(got, `link.csv: not taken: a symbolic link (to "/etc/passwd")`) {
		t.Errorf("report %q", got)
	}
	waitFor(t, "archive/next.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "next.csv")) })
	text := logs.String()
	if n := strings.Count(text, `level=ERROR msg="cannot move the file to failed/`); n != 1 {
		t.Errorf("%d error lines about the move, want 1", n)
	}
	if !strings.Contains(text, "no space left on device") || !strings.Contains(text, "retry succeeded: move the file to failed/") {
		t.Error("the log does not say the disk was full, or that the move succeeded later")
	}
}
