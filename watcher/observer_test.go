package watcher

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

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
