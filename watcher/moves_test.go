package watcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// mover is a recorder that is also told where files went.
type mover struct {
	recorder
	mu    sync.Mutex
	moved map[string]string // dropped name → path
}

func (m *mover) FileMoved(f File, path string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.moved[f.Name] = path
}

func (m *mover) pathOf(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.moved[name]
}

var _ MoveObserver = (*mover)(nil)

// TestMoveObserverHearsWhereEachFileWent drops files whose names are
// taken in archive/ and failed/ already: the handler must hear the
// suffixed names they were given, which hold the new files and reports.
func TestMoveObserverHearsWhereEachFileWent(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{ArchiveDir, FailedDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, ArchiveDir, "jobs.csv"), "old jobs")
	write(t, filepath.Join(dir, ArchiveDir, "part.csv"), "old part")
	write(t, filepath.Join(dir, FailedDir, "bad.csv"), "old bad")

	m := &mover{moved: map[string]string{}}
	m.react = func(_ context.Context, f File) error {
		switch f.Name {
		case "bad.csv":
			return errors.New("row 1: bad")
		case "part.csv":
			return &PartialError{Err: errors.New("row 2: left out")}
		}
		return nil
	}
	start(t, fastConfig(dir), m, nil)
	write(t, filepath.Join(dir, "jobs.csv"), "new jobs")
	write(t, filepath.Join(dir, "part.csv"), "new part")
	write(t, filepath.Join(dir, "bad.csv"), "new bad")
	waitFor(t, "three moves reported", func() bool {
		return m.pathOf("jobs.csv") != "" && m.pathOf("part.csv") != "" && m.pathOf("bad.csv") != ""
	})

	for _, tc := range []struct {
		name, sub, content, report string
	}{
		{"jobs.csv", ArchiveDir, "new jobs", ""},
		{"part.csv", ArchiveDir, "new part", "row 2: left out\n"},
		{"bad.csv", FailedDir, "new bad", "row 1: bad\n"},
	} {
		path := m.pathOf(tc.name)
		if filepath.Dir(path) != filepath.Join(dir, tc.sub) || filepath.Base(path) == tc.name {
			t.Errorf("%s reported moved to %s, want a new name in %s/", tc.name, path, tc.sub)
			continue
		}
		if got := read(t, path); got != tc.content {
			t.Errorf("%s reported moved to %s, which holds %q, want %q", tc.name, path, got, tc.content)
		}
		if tc.report != "" {
			if got := read(t, path+ErrorsSuffix); got != tc.report {
				t.Errorf("%s's report %s holds %q, want %q", tc.name, path+ErrorsSuffix, got, tc.report)
			}
		}
	}
}
