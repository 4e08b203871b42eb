package watcher

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestIgnored(t *testing.T) {
	for name, want := range map[string]bool{
		"jobs.csv":            false,
		"jobs.xlsx":           false,
		"crontab":             false,
		"jobs.tmp.csv":        false,
		".jobs.csv":           true,
		".processing":         true,
		"~$jobs.xlsx":         true,
		"~jobs.csv":           true,
		"jobs.csv.tmp":        true,
		"jobs.csv.TMP":        true,
		"jobs.csv.part":       true,
		"jobs.csv.crdownload": true,
		"jobs.csv.swp":        true,
		"jobs.csv.errors.txt": true,
		"jobs.csv.ERRORS.TXT": true,
		"jobs.errors.txt.csv": false,
		"":                    true,
	} {
		if got := ignored(name); got != want {
			t.Errorf("ignored(%q) = %v, want %v", name, got, want)
		}
	}
}

// fakeInfo is a regular file's size and modification time.
type fakeInfo struct {
	fs.FileInfo
	size int64
	mod  time.Time
}

func (f fakeInfo) Size() int64        { return f.size }
func (f fakeInfo) ModTime() time.Time { return f.mod }
func (f fakeInfo) Mode() fs.FileMode  { return 0o644 }

func TestTrackerTakesFilesOnlyAfterUnchangedChecks(t *testing.T) {
	const interval = time.Second
	t0 := time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)
	type step struct {
		touch bool          // an event before this check
		late  time.Duration // this check comes late (negative: early)
		size  int64         // observed at this check; -1: gone
		taken bool          // taken at this check
	}
	tests := []struct {
		name  string
		need  int
		steps []step
	}{
		{"baseline then two unchanged", 2, []step{{size: 5}, {size: 5}, {size: 5, taken: true}}},
		{"one unchanged check when asked", 1, []step{{size: 5}, {size: 5, taken: true}}},
		{"growth restarts the count", 2, []step{{size: 5}, {size: 5}, {size: 9}, {size: 9}, {size: 9, taken: true}}},
		{"an event restarts the count", 2, []step{{size: 5}, {size: 5}, {touch: true, size: 5}, {size: 5}, {size: 5, taken: true}}},
		{"a vanished file is dropped", 2, []step{{size: 5}, {size: -1}, {size: 5}, {size: 5}}},
		{"a late baseline needs the full quiet time", 2, []step{
			{size: 5, late: 900 * time.Millisecond}, {size: 5}, {size: 5}, {size: 5, taken: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTracker(tt.need, interval)
			tr.touch("a.csv")
			for i, s := range tt.steps {
				if s.touch {
					tr.touch("a.csv")
				}
				now := t0.Add(time.Duration(i)*interval + s.late)
				got, gone := tr.check(now, func(string) (fs.FileInfo, error) {
					if s.size < 0 {
						return nil, fs.ErrNotExist
					}
					return fakeInfo{size: s.size, mod: t0.Add(time.Duration(s.size))}, nil
				})
				if taken := len(got) == 1; taken != s.taken {
					t.Fatalf("check %d: taken = %v, want %v", i+1, taken, s.taken)
				}
				if wantGone := s.size < 0; (len(gone) == 1) != wantGone {
					t.Fatalf("check %d: gone = %v, want a.csv gone: %v", i+1, gone, wantGone)
				}
				if s.taken && (got[0].name != "a.csv" || got[0].size != s.size) {
					t.Fatalf("check %d: got %+v", i+1, got[0])
				}
			}
		})
	}
}

func TestTrackerKeepsArrivalOrder(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)
	tr := newTracker(1, time.Second)
	names := []string{"c.csv", "a.csv", "b.csv", "d.csv"}
	for _, n := range names {
		tr.touch(n)
	}
	tr.touch("c.csv") // a later event keeps the first arrival
	stat := func(string) (fs.FileInfo, error) { return fakeInfo{size: 1}, nil }
	tr.check(t0, stat)
	var got []string
	taken, _ := tr.check(t0.Add(time.Second), stat)
	for _, c := range taken {
		got = append(got, c.name)
	}
	if !slices.Equal(got, names) {
		t.Errorf("order = %v, want %v", got, names)
	}
	if tr.has("a.csv") {
		t.Error("taken file still tracked")
	}
}

func TestCandidateName(t *testing.T) {
	now := time.Date(2026, 11, 22, 11, 15, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		n    int
		want string
	}{
		{"jobs.csv", 0, "jobs.csv"},
		{"jobs.csv", 1, "jobs.20261122T101500Z.csv"},
		{"jobs.csv", 2, "jobs.20261122T101500Z-2.csv"},
		{"crontab", 1, "crontab.20261122T101500Z"},
		{"jobs.tar.gz", 1, "jobs.tar.20261122T101500Z.gz"},
		// The longest name taken is never cut, even with a counter.
		{strings.Repeat("y", 196) + ".csv", 2, strings.Repeat("y", 196) + ".20261122T101500Z-2.csv"},
		// Longer (refused) names are cut so that NAME.errors.txt fits 255
		// bytes; a cut never splits a character.
		{strings.Repeat("x", 246) + ".csv", 0, strings.Repeat("x", 239) + "~.csv"},
		{strings.Repeat("x", 246) + ".csv", 2, strings.Repeat("x", 220) + "~.20261122T101500Z-2.csv"},
		{strings.Repeat("é", 123) + ".csv", 0, strings.Repeat("é", 119) + "~.csv"},
	}
	for _, tt := range tests {
		got := candidateName(tt.name, now, tt.n)
		if got != tt.want {
			t.Errorf("candidateName(%q, %d) = %q, want %q", tt.name, tt.n, got, tt.want)
		}
		if len(got)+len(ErrorsSuffix) > 255 {
			t.Errorf("candidateName(%q, %d) is %d bytes: its report's name would not fit", tt.name, tt.n, len(got))
		}
	}
}

func TestMovesNeverOverwrite(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)
	dir := t.TempDir()
	dst := filepath.Join(dir, "dst")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"jobs.csv", "jobs.20261122T101500Z.csv", "bad.csv", "bad.20261122T101500Z.csv.errors.txt"} {
		write(t, filepath.Join(dst, name), "old")
	}

	src := filepath.Join(dir, "jobs.csv")
	write(t, src, "new")
	got, err := moveNoClobber(src, dst, "jobs.csv", now)
	if err != nil || got != filepath.Join(dst, "jobs.20261122T101500Z-2.csv") {
		t.Fatalf("moveNoClobber = %q, %v", got, err)
	}

	src = filepath.Join(dir, "bad.csv")
	write(t, src, "new bad")
	got, err = moveFailed(src, dst, "bad.csv", "why\n", now)
	if err != nil || got != filepath.Join(dst, "bad.20261122T101500Z-2.csv") {
		t.Fatalf("moveFailed = %q, %v", got, err)
	}
	if r := read(t, got+ErrorsSuffix); r != "why\n" {
		t.Errorf("report = %q", r)
	}
	for _, name := range []string{"jobs.csv", "jobs.20261122T101500Z.csv", "bad.csv", "bad.20261122T101500Z.csv.errors.txt"} {
		if r := read(t, filepath.Join(dst, name)); r != "old" {
			t.Errorf("%s overwritten: %q", name, r)
		}
	}
	// The unused candidate whose report name was taken got no report.
	if exists(filepath.Join(dst, "bad.20261122T101500Z.csv")) {
		t.Error("bad.20261122T101500Z.csv created beside a foreign report")
	}

	err = renameNoReplace(filepath.Join(dir, "missing"), filepath.Join(dst, "x"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("rename of a missing file: %v, want not exist", err)
	}
}

func TestBriefCutsLongReportsForTheLog(t *testing.T) {
	long := errors.New("jobs.csv: 7 of 9 rows rejected\nrow 2: a\nrow 3: b\nrow 4: c\nrow 5: d\nrow 6: e\nrow 7: f\n")
	want := "jobs.csv: 7 of 9 rows rejected\nrow 2: a\nrow 3: b\nrow 4: c\nrow 5: d\n… 2 more lines in the report beside the file"
	if got := brief(long); got != want {
		t.Errorf("brief = %q, want %q", got, want)
	}
	short := errors.New("jobs.csv: row 2: column host: is required\n")
	if got := brief(short); got != "jobs.csv: row 2: column host: is required" {
		t.Errorf("brief of a short report = %q", got)
	}
}
