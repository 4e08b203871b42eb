package watcher

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPollFolderFindsFilesWithoutEvents(t *testing.T) {
	dir := t.TempDir()
	cfg := fastConfig()
	// Rescans of event folders would come only after an hour: only the
	// poll interval can find the file.
	cfg.Rescan = time.Hour
	cfg.Folders = []Folder{{Dir: dir, Poll: true, PollInterval: testRescan}}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(logs, t.Output()), &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec := &recorder{}
	start(t, cfg, rec, log)

	write(t, filepath.Join(dir, "share.csv"), "on a share")
	waitFor(t, "archive/share.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "share.csv")) })
	if got := rec.names(); !slices.Equal(got, []string{"share.csv"}) {
		t.Errorf("handled %v", got)
	}
	if !strings.Contains(logs.String(), "watching folder by polling") {
		t.Errorf("log does not say the folder is polled:\n%s", logs)
	}
}

func TestMinAgeHoldsYoungFilesBack(t *testing.T) {
	const minAge = 400 * time.Millisecond
	dir := t.TempDir()
	cfg := fastConfig()
	cfg.Folders = []Folder{{Dir: dir, MinAge: minAge}}
	var mu sync.Mutex
	ages := map[string]time.Duration{}
	rec := &recorder{react: func(_ context.Context, f File) error {
		fi, err := os.Stat(f.Path)
		if err != nil {
			return err
		}
		mu.Lock()
		ages[f.Name] = time.Since(fi.ModTime())
		mu.Unlock()
		return nil
	}}
	start(t, cfg, rec, nil)

	old := filepath.Join(dir, "old.csv")
	write(t, old, "old")
	if err := os.Chtimes(old, time.Now(), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "young.csv"), "young")
	for _, name := range []string{"old.csv", "young.csv"} {
		waitFor(t, "archive/"+name, func() bool { return exists(filepath.Join(dir, ArchiveDir, name)) })
	}
	mu.Lock()
	defer mu.Unlock()
	if ages["young.csv"] < minAge {
		t.Errorf("young.csv taken at age %s, want at least %s", ages["young.csv"], minAge)
	}
	if got := rec.names(); !slices.Equal(got, []string{"old.csv", "young.csv"}) {
		t.Errorf("handled %v, want old.csv before young.csv", got)
	}
}

func TestDoneMarkerFolderWaitsForTheMarker(t *testing.T) {
	dir := t.TempDir()
	cfg := fastConfig()
	cfg.Folders = []Folder{{Dir: dir, DoneMarker: true}}
	rec := &recorder{react: func(_ context.Context, f File) error {
		if f.Name == "bad.csv" {
			return errors.New("row 2: bad")
		}
		return nil
	}}
	start(t, cfg, rec, nil)

	write(t, filepath.Join(dir, "waiting.csv"), "waiting")
	// Dropped after waiting.csv: once it is archived, waiting.csv has
	// been stable for longer and was held back by its missing marker.
	write(t, filepath.Join(dir, "other.csv"), "other")
	write(t, filepath.Join(dir, "other.csv"+MarkerSuffix), "")
	waitFor(t, "archive/other.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "other.csv")) })
	waitFor(t, "other.csv.done removed", func() bool { return !exists(filepath.Join(dir, "other.csv"+MarkerSuffix)) })
	if !exists(filepath.Join(dir, "waiting.csv")) {
		t.Fatal("waiting.csv was taken without its marker")
	}

	write(t, filepath.Join(dir, "waiting.csv"+MarkerSuffix), "")
	write(t, filepath.Join(dir, "bad.csv"), "bad")
	write(t, filepath.Join(dir, "bad.csv"+MarkerSuffix), "")
	waitFor(t, "archive/waiting.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "waiting.csv")) })
	waitFor(t, "failed/bad.csv", func() bool { return exists(filepath.Join(dir, FailedDir, "bad.csv")) })
	waitFor(t, "markers removed", func() bool {
		return !exists(filepath.Join(dir, "waiting.csv"+MarkerSuffix)) && !exists(filepath.Join(dir, "bad.csv"+MarkerSuffix))
	})
	got := rec.names()
	slices.Sort(got)
	if !slices.Equal(got, []string{"bad.csv", "other.csv", "waiting.csv"}) {
		t.Errorf("handled %v, want the three files and no marker", got)
	}
	if left := files(t, dir); len(left) != 0 {
		t.Errorf("folder still holds %v", left)
	}
}

func TestPartialErrorArchivesWithReport(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{react: func(context.Context, File) error {
		return &PartialError{Err: errors.New("part.csv: row 3: column time: bad\npart.csv: 1 of 2 rows rejected")}
	}}
	start(t, fastConfig(dir), rec, nil)
	write(t, filepath.Join(dir, "part.csv"), "part")
	waitFor(t, "archive/part.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "part.csv")) })
	want := "part.csv: row 3: column time: bad\npart.csv: 1 of 2 rows rejected\n"
	if got := read(t, filepath.Join(dir, ArchiveDir, "part.csv"+ErrorsSuffix)); got != want {
		t.Errorf("archive/part.csv%s = %q, want %q", ErrorsSuffix, got, want)
	}
	if got := files(t, filepath.Join(dir, FailedDir)); len(got) != 0 {
		t.Errorf("failed/ holds %v", got)
	}
}

func TestNewValidatesFolderOptions(t *testing.T) {
	base := t.TempDir()
	for _, tt := range []struct {
		name    string
		folder  Folder
		wantErr string
	}{
		{"negative poll interval", Folder{Dir: base, Poll: true, PollInterval: -time.Second}, "poll interval"},
		{"negative min age", Folder{Dir: base, MinAge: -time.Second}, "min age"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{Folders: []Folder{tt.folder}}, &recorder{}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New: error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	w, err := New(Config{Folders: []Folder{{Dir: base, Poll: true}}}, &recorder{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.folders[0].rescan != DefaultPollInterval || !w.folders[0].poll {
		t.Errorf("poll folder scans every %s, want %s", w.folders[0].rescan, DefaultPollInterval)
	}
}
