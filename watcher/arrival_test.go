package watcher

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// TestWholeArrivalsAreTakenWithoutWaiting: a file renamed into the folder,
// hard-linked into it, or copied with its times kept is taken at once;
// one written in place still waits for the stability checks, which a fake
// clock holds back until the test moves it.
func TestWholeArrivalsAreTakenWithoutWaiting(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("renames are told apart by inotify")
	}
	dir, outside := t.TempDir(), t.TempDir()
	clock := clockwork.NewFakeClock()
	rec := &observer{}
	cfg := fastConfig(dir)
	cfg.Clock = clock
	start(t, cfg, rec, nil)

	// Written in place, first: it must still be waiting at the end. Once
	// it is seen, the folder is watched.
	write(t, filepath.Join(dir, "inplace.csv"), "host,name\nh,inplace\n")
	waitFor(t, "inplace.csv to be seen", func() bool { return slices.Contains(rec.seen(), "seen inplace.csv") })

	tmp := filepath.Join(dir, ".renamed.csv.part")
	write(t, tmp, "host,name\nh,renamed\n")
	if err := os.Rename(tmp, filepath.Join(dir, "renamed.csv")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "archive/renamed.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "renamed.csv")) })

	src := filepath.Join(outside, "linked.csv")
	write(t, src, "host,name\nh,linked\n")
	if err := os.Link(src, filepath.Join(dir, "linked.csv")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "archive/linked.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "linked.csv")) })

	// A copy that sets the file's times once written, as cp -p does.
	copied := filepath.Join(dir, "copied.csv")
	write(t, copied, "host,name\nh,copied\n")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(copied, old, old); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "archive/copied.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "copied.csv")) })

	if !exists(filepath.Join(dir, "inplace.csv")) {
		t.Fatalf("the file written in place was taken before its stability checks: calls %v", rec.names())
	}
	// Now let the checks run: the file written in place goes too.
	waitFor(t, "archive/inplace.csv", func() bool {
		clock.Advance(testInterval)
		return exists(filepath.Join(dir, ArchiveDir, "inplace.csv"))
	})
	if got := rec.names(); len(got) != 4 || got[3] != "inplace.csv" {
		t.Errorf("handled %v, want renamed, linked and copied at once, then inplace.csv", got)
	}
}
