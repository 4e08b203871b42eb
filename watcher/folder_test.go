package watcher

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
