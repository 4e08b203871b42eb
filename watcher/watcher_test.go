package watcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDroppedFileIsHandledOnceAndArchived(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	start(t, fastConfig(dir), rec, nil)

	content := "host,name,topic\nh,job1,t\n"
	write(t, filepath.Join(dir, "jobs.csv"), content)
	waitFor(t, "archive/jobs.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "jobs.csv")) })

	want := []call{{
		File:    File{Dir: dir, Name: "jobs.csv", Path: filepath.Join(dir, ProcessingDir, "jobs.csv")},
		Content: content,
	}}
	if got := rec.got(); !slices.Equal(got, want) {
		t.Errorf("calls = %+v, want %+v", got, want)
	}
	if got := read(t, filepath.Join(dir, ArchiveDir, "jobs.csv")); got != content {
		t.Errorf("archived content = %q, want %q", got, content)
	}
	for _, sub := range []string{"", ProcessingDir, FailedDir} {
		if got := files(t, filepath.Join(dir, sub)); len(got) != 0 {
			t.Errorf("%s/ holds %v, want nothing", sub, got)
		}
	}
}

func TestHandlerErrorMovesFileToFailedWithReport(t *testing.T) {
	dir := t.TempDir()
	rowErrs := errors.New("bad.csv: row 2: column topic: empty\nbad.csv: row 5: column cron: bad expression")
	rec := &recorder{react: func(context.Context, File) error { return rowErrs }}
	start(t, fastConfig(dir), rec, nil)

	write(t, filepath.Join(dir, "bad.csv"), "x\n")
	failed := filepath.Join(dir, FailedDir, "bad.csv")
	waitFor(t, "failed/bad.csv", func() bool { return exists(failed) })

	if got, want := read(t, failed+ErrorsSuffix), rowErrs.Error()+"\n"; got != want {
		t.Errorf("errors.txt = %q, want %q", got, want)
	}
	if got := read(t, failed); got != "x\n" {
		t.Errorf("failed content = %q", got)
	}
	if got := files(t, filepath.Join(dir, ArchiveDir)); len(got) != 0 {
		t.Errorf("archive/ holds %v", got)
	}
	if got := rec.names(); !slices.Equal(got, []string{"bad.csv"}) {
		t.Errorf("handled %v", got)
	}
}

func TestHandlerPanicFailsFileAndWatcherGoesOn(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{react: func(_ context.Context, f File) error {
		if f.Name == "boom.csv" {
			panic("boom")
		}
		return nil
	}}
	start(t, fastConfig(dir), rec, nil)

	write(t, filepath.Join(dir, "boom.csv"), "x\n")
	failed := filepath.Join(dir, FailedDir, "boom.csv")
	waitFor(t, "failed/boom.csv", func() bool { return exists(failed) })
	if got := read(t, failed+ErrorsSuffix); got != "handler panicked: boom\n" {
		t.Errorf("errors.txt = %q", got)
	}

	write(t, filepath.Join(dir, "ok.csv"), "y\n")
	waitFor(t, "archive/ok.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "ok.csv")) })
}

func TestSlowlyWrittenFileIsTakenOnlyComplete(t *testing.T) {
	// The writer pauses 2.5 check intervals between chunks, so checks see
	// the file unchanged during every pause, but never for the 12 checks
	// (240ms) a file must stay unchanged: 190ms of slack for a writer that
	// wakes up late on a busy machine.
	const (
		stable = 12
		pause  = 50 * time.Millisecond
		chunks = 8
	)
	dir := t.TempDir()
	rec := &recorder{}
	cfg := fastConfig(dir)
	cfg.StableChecks = stable
	start(t, cfg, rec, nil)

	var want strings.Builder
	for i := range chunks {
		fmt.Fprintf(&want, "host%d,job%d,topic\n", i, i)
	}
	writerDone := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(filepath.Join(dir, "slow.csv"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			writerDone <- err
			return
		}
		defer f.Close()
		for i := range chunks {
			if i > 0 {
				time.Sleep(pause) // the writer's own pace, not a wait for a condition
			}
			if _, err := fmt.Fprintf(f, "host%d,job%d,topic\n", i, i); err != nil {
				writerDone <- err
				return
			}
		}
		writerDone <- nil
	}()

	waitFor(t, "archive/slow.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "slow.csv")) })
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	got := rec.got()
	if len(got) != 1 || got[0].Content != want.String() {
		t.Fatalf("calls = %+v, want one with %q", got, want.String())
	}
}

func TestFileRenamedIntoPlaceIsTakenOnce(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	start(t, fastConfig(dir), rec, nil)

	content := "host,name\nh,n\n"
	tmp := filepath.Join(dir, "jobs.csv.part")
	write(t, tmp, content)
	if err := os.Rename(tmp, filepath.Join(dir, "jobs.csv")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "archive/jobs.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "jobs.csv")) })

	got := rec.got()
	if len(got) != 1 || got[0].File.Name != "jobs.csv" || got[0].Content != content {
		t.Errorf("calls = %+v, want jobs.csv once with %q", got, content)
	}
}

func TestIgnoredNamesAreNeverTouched(t *testing.T) {
	dir := t.TempDir()
	ignoredNames := []string{
		".hidden.csv", "jobs.csv.tmp", "jobs.CSV.TMP", "jobs.csv.part", "~$jobs.xlsx",
		"jobs.csv.crdownload", "jobs.csv.swp", "old.csv" + ErrorsSuffix,
	}
	// Half exist before the start (found by the scan), half are dropped
	// while running (found by events and rescans).
	for _, name := range ignoredNames[:4] {
		write(t, filepath.Join(dir, name), name)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub", "inner.csv"), "inner")

	rec := &recorder{}
	start(t, fastConfig(dir), rec, nil)
	for _, name := range ignoredNames[4:] {
		write(t, filepath.Join(dir, name), name)
	}
	// Files dropped after the ignored ones, one after the other: by the
	// time the second is archived, the ignored files have been seen by
	// events, scans and many checks.
	for _, name := range []string{"first.csv", "second.csv"} {
		write(t, filepath.Join(dir, name), name)
		waitFor(t, "archive/"+name, func() bool { return exists(filepath.Join(dir, ArchiveDir, name)) })
	}

	if got := rec.names(); !slices.Equal(got, []string{"first.csv", "second.csv"}) {
		t.Errorf("handled %v, want only first.csv and second.csv", got)
	}
	for _, name := range ignoredNames {
		if got := read(t, filepath.Join(dir, name)); got != name {
			t.Errorf("%s: content %q, want untouched", name, got)
		}
	}
	if got := read(t, filepath.Join(dir, "sub", "inner.csv")); got != "inner" {
		t.Errorf("sub/inner.csv: content %q", got)
	}
}

func TestLeftoverInProcessingIsRecoveredBeforeNewFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ProcessingDir), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, ProcessingDir, "left.csv"), "left over")
	write(t, filepath.Join(dir, "new.csv"), "new")

	rec := &recorder{}
	start(t, fastConfig(dir), rec, nil)
	for _, name := range []string{"left.csv", "new.csv"} {
		waitFor(t, "archive/"+name, func() bool { return exists(filepath.Join(dir, ArchiveDir, name)) })
	}

	got := rec.got()
	if len(got) != 2 || got[0].File.Name != "left.csv" || got[0].Content != "left over" || got[1].File.Name != "new.csv" {
		t.Errorf("calls = %+v, want left.csv then new.csv", got)
	}
	if !got[0].File.Recovered || got[1].File.Recovered {
		t.Errorf("recovered: left.csv %v, new.csv %v; want only the leftover marked", got[0].File.Recovered, got[1].File.Recovered)
	}
	if got[0].File.Path != filepath.Join(dir, ProcessingDir, "left.csv") {
		t.Errorf("left.csv path = %s", got[0].File.Path)
	}
}

func TestShutdownLeavesFileInProcessingForNextStart(t *testing.T) {
	dir := t.TempDir()
	started := make(chan struct{})
	blocking := &recorder{react: func(ctx context.Context, f File) error {
		close(started)
		<-ctx.Done()
		return fmt.Errorf("inject %s: %w", f.Name, ctx.Err())
	}}
	stop := start(t, fastConfig(dir), blocking, nil)

	write(t, filepath.Join(dir, "jobs.csv"), "jobs")
	select {
	case <-started:
	case <-time.After(waitLimit):
		t.Fatal("timed out waiting for the handler")
	}
	stop()

	if !exists(filepath.Join(dir, ProcessingDir, "jobs.csv")) {
		t.Fatal(".processing/jobs.csv is gone after shutdown")
	}
	if got := files(t, filepath.Join(dir, FailedDir)); len(got) != 0 {
		t.Fatalf("failed/ holds %v", got)
	}

	rec := &recorder{}
	start(t, fastConfig(dir), rec, nil)
	waitFor(t, "archive/jobs.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "jobs.csv")) })
	if got := rec.names(); !slices.Equal(got, []string{"jobs.csv"}) {
		t.Errorf("handled %v after restart", got)
	}
}

func TestTwoWatchersOnOneFolderHandleEachFileOnce(t *testing.T) {
	const n = 200
	dir := t.TempDir()
	rec := &recorder{}
	start(t, fastConfig(dir), rec, nil)
	start(t, fastConfig(dir), rec, nil)

	for i := range n {
		write(t, filepath.Join(dir, fmt.Sprintf("jobs%03d.csv", i)), fmt.Sprintf("content %d", i))
	}
	archive := filepath.Join(dir, ArchiveDir)
	waitFor(t, fmt.Sprintf("%d files in archive/", n), func() bool { return len(files(t, archive)) >= n })

	counts := make(map[string]int)
	for _, c := range rec.got() {
		counts[c.File.Name]++
		var i int
		if _, err := fmt.Sscanf(c.File.Name, "jobs%03d.csv", &i); err != nil || c.Content != fmt.Sprintf("content %d", i) {
			t.Errorf("%s: handed over with content %q", c.File.Name, c.Content)
		}
	}
	for i := range n {
		name := fmt.Sprintf("jobs%03d.csv", i)
		if counts[name] != 1 {
			t.Errorf("%s handled %d times, want once", name, counts[name])
		}
		if got, want := read(t, filepath.Join(archive, name)), fmt.Sprintf("content %d", i); got != want {
			t.Errorf("archive/%s = %q, want %q", name, got, want)
		}
	}
	if len(counts) != n {
		t.Errorf("handled %d distinct files, want %d", len(counts), n)
	}
	if got := files(t, archive); len(got) != n {
		t.Errorf("archive/ holds %d files, want %d", len(got), n)
	}
}

func TestNameCollisionsGetSuffixedNames(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{ArchiveDir, FailedDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, ArchiveDir, "jobs.csv"), "old jobs")
	write(t, filepath.Join(dir, FailedDir, "bad.csv"), "old bad")
	write(t, filepath.Join(dir, FailedDir, "bad.csv"+ErrorsSuffix), "old report\n")

	rec := &recorder{react: func(_ context.Context, f File) error {
		if f.Name == "bad.csv" {
			return errors.New("row 1: bad")
		}
		return nil
	}}
	start(t, fastConfig(dir), rec, nil)
	write(t, filepath.Join(dir, "jobs.csv"), "new jobs")
	write(t, filepath.Join(dir, "bad.csv"), "new bad")
	waitFor(t, "two files in archive/", func() bool { return len(files(t, filepath.Join(dir, ArchiveDir))) == 2 })
	waitFor(t, "four files in failed/", func() bool { return len(files(t, filepath.Join(dir, FailedDir))) == 4 })

	stamp := `\.\d{8}T\d{6}Z`
	archived := files(t, filepath.Join(dir, ArchiveDir))
	var newJobs string
	for _, name := range archived {
		if regexp.MustCompile(`^jobs` + stamp + `\.csv$`).MatchString(name) {
			newJobs = name
		}
	}
	if !slices.Contains(archived, "jobs.csv") || newJobs == "" {
		t.Fatalf("archive/ holds %v, want jobs.csv and jobs.<UTC time>.csv", archived)
	}
	if got := read(t, filepath.Join(dir, ArchiveDir, "jobs.csv")); got != "old jobs" {
		t.Errorf("archive/jobs.csv overwritten: %q", got)
	}
	if got := read(t, filepath.Join(dir, ArchiveDir, newJobs)); got != "new jobs" {
		t.Errorf("archive/%s = %q", newJobs, got)
	}

	failed := files(t, filepath.Join(dir, FailedDir))
	var suffixed string
	for _, name := range failed {
		if regexp.MustCompile(`^bad` + stamp + `\.csv$`).MatchString(name) {
			suffixed = name
		}
	}
	if suffixed == "" || !slices.Contains(failed, suffixed+ErrorsSuffix) {
		t.Fatalf("failed/ holds %v, want bad.<UTC time>.csv and its %s", failed, ErrorsSuffix)
	}
	for name, want := range map[string]string{
		"bad.csv":                "old bad",
		"bad.csv" + ErrorsSuffix: "old report\n",
		suffixed:                 "new bad",
		suffixed + ErrorsSuffix:  "row 1: bad\n",
	} {
		if got := read(t, filepath.Join(dir, FailedDir, name)); got != want {
			t.Errorf("failed/%s = %q, want %q", name, got, want)
		}
	}
}
