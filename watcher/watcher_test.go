package watcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Test timing: small intervals keep the suite fast; conditions are waited
// for by polling, never by sleeping a guessed duration.
const (
	testInterval = 20 * time.Millisecond
	testRescan   = 50 * time.Millisecond
	waitLimit    = 15 * time.Second
)

// call is one HandleFile call as the recorder saw it.
type call struct {
	File    File
	Content string
}

// recorder is a Handler that records what it was given; then, when set,
// react decides the outcome.
type recorder struct {
	react func(ctx context.Context, f File) error

	mu    sync.Mutex
	calls []call
}

func (r *recorder) HandleFile(ctx context.Context, f File) error {
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return err
	}
	r.mu.Lock()
	recorded := f
	recorded.status, recorded.clock = nil, nil // what serves Progress
	r.calls = append(r.calls, call{File: recorded, Content: string(data)})
	r.mu.Unlock()
	if r.react != nil {
		return r.react(ctx, f)
	}
	return nil
}

func (r *recorder) got() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recorder) names() []string {
	var names []string
	for _, c := range r.got() {
		names = append(names, c.File.Name)
	}
	return names
}

// syncBuffer is a log destination tests can read while the watcher writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fastConfig watches dirs with the test intervals.
func fastConfig(dirs ...string) Config {
	cfg := Config{StableChecks: 2, CheckInterval: testInterval, Rescan: testRescan}
	for _, d := range dirs {
		cfg.Folders = append(cfg.Folders, Folder{Dir: d})
	}
	return cfg
}

// start runs a watcher until the test ends (or stop is called) and checks
// that Run returns.
func start(t *testing.T, cfg Config, h Handler, log *slog.Logger) (stop func()) {
	t.Helper()
	if log == nil {
		log = testLogger(t)
	}
	w, err := New(cfg, h, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return run(t, w)
}

// run runs w until the test ends (or stop is called) and checks that Run
// returns.
func run(t *testing.T, w *Watcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(waitLimit):
				t.Errorf("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitFor polls cond until it holds, failing the test at the deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// files lists the regular files in dir, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

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

func TestBlockedFolderDoesNotStopOtherFolders(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	started, release := make(chan struct{}), make(chan struct{})
	rec := &recorder{react: func(ctx context.Context, f File) error {
		if f.Dir != dirA {
			return nil
		}
		close(started)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	start(t, fastConfig(dirA, dirB), rec, nil)

	write(t, filepath.Join(dirA, "a.csv"), "a")
	select {
	case <-started:
	case <-time.After(waitLimit):
		t.Fatal("timed out waiting for the handler of folder A")
	}
	write(t, filepath.Join(dirB, "b.csv"), "b")
	waitFor(t, "B/archive/b.csv while A is blocked", func() bool { return exists(filepath.Join(dirB, ArchiveDir, "b.csv")) })
	if exists(filepath.Join(dirA, ArchiveDir, "a.csv")) {
		t.Fatal("a.csv archived while its handler is blocked")
	}
	close(release)
	waitFor(t, "A/archive/a.csv", func() bool { return exists(filepath.Join(dirA, ArchiveDir, "a.csv")) })
}

func TestUnwatchableFolderIsReportedAndRetried(t *testing.T) {
	tests := []struct {
		name string
		// breakB makes folder B unusable, before or after Run.
		breakB  func(t *testing.T, dirB string, w *Watcher)
		wantLog string
	}{
		{
			name: "missing at start",
			breakB: func(t *testing.T, dirB string, w *Watcher) {
				if err := os.RemoveAll(dirB); err != nil {
					t.Fatal(err)
				}
				run(t, w)
			},
			wantLog: "no such file or directory",
		},
		{
			name: "renamed away while watched",
			breakB: func(t *testing.T, dirB string, w *Watcher) {
				run(t, w)
				write(t, filepath.Join(dirB, "b0.csv"), "b0")
				waitFor(t, "B/archive/b0.csv", func() bool { return exists(filepath.Join(dirB, ArchiveDir, "b0.csv")) })
				// Renamed in one step: a recursive delete could race
				// with a rescan recreating missing subfolders.
				if err := os.Rename(dirB, dirB+".gone"); err != nil {
					t.Fatal(err)
				}
			},
			wantLog: "folder was removed or renamed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dirA := t.TempDir()
			dirB := filepath.Join(t.TempDir(), "inbox")
			logs := &syncBuffer{}
			log := slog.New(slog.NewTextHandler(io.MultiWriter(logs, t.Output()), &slog.HandlerOptions{Level: slog.LevelDebug}))
			w, err := New(fastConfig(dirA, dirB), &recorder{}, log)
			if err != nil {
				t.Fatal(err)
			}
			tt.breakB(t, dirB, w)

			waitFor(t, "an error logged for folder B", func() bool {
				for _, line := range strings.Split(logs.String(), "\n") {
					if strings.Contains(line, "level=ERROR") && strings.Contains(line, "cannot watch folder") &&
						strings.Contains(line, "component=watcher") && strings.Contains(line, "dir="+dirB+" ") &&
						strings.Contains(line, tt.wantLog) {
						return true
					}
				}
				return false
			})

			write(t, filepath.Join(dirA, "a.csv"), "a")
			waitFor(t, "A/archive/a.csv", func() bool { return exists(filepath.Join(dirA, ArchiveDir, "a.csv")) })

			if err := os.Mkdir(dirB, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dirB, "b.csv"), "b")
			waitFor(t, "B/archive/b.csv after the folder came back", func() bool { return exists(filepath.Join(dirB, ArchiveDir, "b.csv")) })
			waitFor(t, "recovery logged", func() bool { return strings.Contains(logs.String(), "folder is watched again") })
		})
	}
}

func TestNewValidatesAndCreatesFolders(t *testing.T) {
	base := t.TempDir()
	aFile := filepath.Join(base, "file")
	write(t, aFile, "")
	h := &recorder{}
	tests := []struct {
		name    string
		cfg     Config
		h       Handler
		wantErr string
	}{
		{"no folders", Config{}, h, "no folders"},
		{"empty dir", Config{Folders: []Folder{{Dir: " "}}}, h, "empty dir"},
		{"nil handler", fastConfig(base), nil, "nil handler"},
		{"listed twice", fastConfig(filepath.Join(base, "in"), filepath.Join(base, "in")+"/"), h, "listed twice"},
		{"inside archive", fastConfig(filepath.Join(base, "in"), filepath.Join(base, "in", ArchiveDir, "x")), h, "inside the archive folder"},
		{"inside processing", fastConfig(filepath.Join(base, "in", ProcessingDir), filepath.Join(base, "in")), h, "inside the .processing folder"},
		{"negative checks", Config{Folders: []Folder{{Dir: base}}, StableChecks: -1}, h, "stable checks"},
		{"negative interval", Config{Folders: []Folder{{Dir: base}}, CheckInterval: -1}, h, "check interval"},
		{"negative rescan", Config{Folders: []Folder{{Dir: base}}, Rescan: -1}, h, "rescan"},
		{"dir is a file", fastConfig(aFile), h, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, tt.h, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New: error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}

	t.Run("defaults and layout", func(t *testing.T) {
		dir := filepath.Join(base, "new", "inbox")
		w, err := New(Config{Folders: []Folder{{Dir: dir + "/"}}}, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w.cfg.StableChecks != 2 || w.cfg.CheckInterval != 500*time.Millisecond || w.cfg.Rescan != 30*time.Second || w.cfg.Clock == nil {
			t.Errorf("defaults not applied: %+v", w.cfg)
		}
		if w.folders[0].dir != dir {
			t.Errorf("dir = %q, want cleaned %q", w.folders[0].dir, dir)
		}
		for _, sub := range []string{ProcessingDir, ArchiveDir, FailedDir} {
			if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
				t.Errorf("%s not created: %v", sub, err)
			}
		}
		if err := w.Run(canceled()); err != nil {
			t.Errorf("Run: %v", err)
		}
		if err := w.Run(canceled()); err == nil {
			t.Error("second Run: no error")
		}
	})
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// observer is a recorder that is also told of files seen and gone.
type observer struct {
	recorder
	mu     sync.Mutex
	events []string // "seen NAME", "gone NAME"
}

func (o *observer) FileSeen(dir, name string) { o.note("seen " + name) }
func (o *observer) FileGone(dir, name string) { o.note("gone " + name) }
func (o *observer) FileRefused(dir, name string, err *RefusedError) {
	o.note("refused " + name + ": " + err.Reason)
}

func (o *observer) note(ev string) {
	o.mu.Lock()
	o.events = append(o.events, ev)
	o.mu.Unlock()
}

func (o *observer) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events)
}

func TestObserverHearsOfFilesAtFirstSightAndWhenTheyLeaveUntaken(t *testing.T) {
	dir := t.TempDir()
	obs := &observer{}
	// Stability takes a minute here: a file is seen long before it is
	// taken.
	cfg := Config{StableChecks: 2, CheckInterval: 30 * time.Second, Rescan: time.Hour, Folders: []Folder{{Dir: dir}}}
	start(t, cfg, obs, nil)
	write(t, filepath.Join(dir, "jobs.csv"), "host,name\n")
	write(t, filepath.Join(dir, ".jobs.csv.part"), "hidden: never announced")
	waitFor(t, "jobs.csv to be seen", func() bool { return slices.Contains(obs.seen(), "seen jobs.csv") })
	if len(obs.got()) != 0 {
		t.Fatalf("handled before it was stable: %v", obs.names())
	}
	// Appending to a seen file does not announce it again.
	f, err := os.OpenFile(filepath.Join(dir, "jobs.csv"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("h,n\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	write(t, filepath.Join(dir, "other.csv"), "x")
	waitFor(t, "other.csv to be seen", func() bool { return slices.Contains(obs.seen(), "seen other.csv") })
	if got := obs.seen(); !slices.Equal(got, []string{"seen jobs.csv", "seen other.csv"}) {
		t.Fatalf("events = %v, want jobs.csv then other.csv seen once each", got)
	}
}

func TestObserverHearsOfAFileRemovedBeforeItWasTaken(t *testing.T) {
	dir := t.TempDir()
	obs := &observer{}
	// Files are checked often but need many checks to be stable.
	cfg := Config{StableChecks: 1000, CheckInterval: testInterval, Rescan: time.Hour, Folders: []Folder{{Dir: dir}}}
	start(t, cfg, obs, nil)
	path := filepath.Join(dir, "mistake.csv")
	write(t, path, "host,name\n")
	waitFor(t, "mistake.csv to be seen", func() bool { return slices.Contains(obs.seen(), "seen mistake.csv") })
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "mistake.csv to be gone", func() bool { return slices.Contains(obs.seen(), "gone mistake.csv") })
	if got := obs.seen(); !slices.Equal(got, []string{"seen mistake.csv", "gone mistake.csv"}) {
		t.Fatalf("events = %v", got)
	}
}

func TestObserverIsNotToldATakenFileIsGone(t *testing.T) {
	dir := t.TempDir()
	obs := &observer{}
	start(t, fastConfig(dir), obs, nil)
	write(t, filepath.Join(dir, "jobs.csv"), "host,name\n")
	waitFor(t, "archive/jobs.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "jobs.csv")) })
	// Dropping the same name again starts a new arrival.
	write(t, filepath.Join(dir, "jobs.csv"), "host,name\nh,n\n")
	waitFor(t, "the second jobs.csv to be handled", func() bool { return len(obs.got()) == 2 })
	if got := obs.seen(); !slices.Equal(got, []string{"seen jobs.csv", "seen jobs.csv"}) {
		t.Fatalf("events = %v, want jobs.csv seen twice and never gone", got)
	}
}
