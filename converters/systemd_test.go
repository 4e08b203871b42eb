package converters

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func FuzzSystemd(f *testing.F) {
	for _, name := range []string{"nightly.timer", "hourly.timer", "quarterly.timer", "refused.timer"} {
		b, err := os.ReadFile(filepath.Join("testdata", "systemd", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("[Timer]\nOnCalendar=Mon,Tue *-*~03/2 1..4:0/15:0,30 Asia/Kolkata\nOnActiveSec=1d 2h\\\n 3min\nUnit=x.service\n"))
	f.Add([]byte("[Timer]\nOnCalendar=@1900000000\nOnCalendar=*-02-30\nOnUnitInactiveSec=1.5s\n[\n=\n"))
	opts := Options{Defaults: Defaults{Topic: "jobs"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		prev := 0
		_ = Systemd{}.ConvertReader(context.Background(), "fuzz.timer", bytes.NewReader(b), opts, func(r Row) error {
			if err := checkRow("fuzz.timer", prev, r); err != nil {
				t.Fatal(err)
			}
			prev = r.Line
			return nil
		})
	})
}

// convertAll converts path and returns its rows, or fails the test.
func convertAll(t *testing.T, path string, opts Options) []Row {
	t.Helper()
	var rows []Row
	if err := (Systemd{}).Convert(context.Background(), path, opts, func(r Row) error {
		rows = append(rows, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestSystemdArchives reads the same units from a gzipped tar and a zip
// as from the plain tar of the conformance suite.
func TestSystemdArchives(t *testing.T) {
	opts := Options{Defaults: Defaults{Topic: "jobs"}}
	want := convertAll(t, filepath.Join("testdata", "systemd", "units.tar"), opts)
	if len(want) != 4 {
		t.Fatalf("units.tar: %d rows, want 4", len(want))
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "systemd", "units.tar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	tgz := filepath.Join(dir, "units.tgz")
	if err := os.WriteFile(tgz, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	var zb bytes.Buffer
	w := zip.NewWriter(&zb)
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		fw, err := w.Create(h.Name)
		if err != nil {
			t.Fatal(err)
		}
		body := new(bytes.Buffer)
		_, _ = body.ReadFrom(tr)
		_, _ = fw.Write(body.Bytes())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	zipPath := filepath.Join(dir, "units.zip")
	if err := os.WriteFile(zipPath, zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{tgz, zipPath} {
		got := convertAll(t, path, opts)
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", path, len(got), len(want))
		}
		base := filepath.Base(path)
		for i := range got {
			g, w := got[i], want[i]
			if g.Line != w.Line || (g.Err == nil) != (w.Err == nil) {
				t.Fatalf("%s row %d: line %d err %v, want line %d err %v", base, i, g.Line, g.Err, w.Line, w.Err)
			}
			if g.Err != nil {
				if gs, ws := strings.ReplaceAll(g.Err.Error(), base, "units.tar"), w.Err.Error(); gs != ws {
					t.Errorf("%s row %d: %s, want %s", base, i, gs, ws)
				}
				continue
			}
			g.Def.Data["systemd.source"] = strings.ReplaceAll(g.Def.Data["systemd.source"], base, "units.tar")
			if !reflect.DeepEqual(g.Def, w.Def) {
				t.Errorf("%s row %d:\n got %+v\nwant %+v", base, i, g.Def, w.Def)
			}
		}
	}

	// Not an archive at all.
	junk := filepath.Join(dir, "junk.tar.gz")
	if err := os.WriteFile(junk, []byte("\x1f\x8bnot gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = Systemd{}.Convert(context.Background(), junk, opts, func(Row) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "junk.tar.gz: not a gzip file") {
		t.Errorf("junk archive: %v", err)
	}
}

// TestSystemdServiceBesideProcessing finds a timer's service in the
// watched folder while the watcher reads the timer from .processing.
func TestSystemdServiceBesideProcessing(t *testing.T) {
	dir := t.TempDir()
	processing := filepath.Join(dir, ".processing")
	if err := os.Mkdir(processing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(processing, "sync.timer"), []byte("[Timer]\nOnCalendar=*:0/20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sync.service"), []byte("[Service]\nExecStart=/usr/bin/rsync -a /a /b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := convertAll(t, filepath.Join(processing, "sync.timer"), Options{Defaults: Defaults{Topic: "jobs"}})
	if len(rows) != 1 || rows[0].Err != nil || rows[0].Def.Data["command"] != "/usr/bin/rsync -a /a /b" || rows[0].Def.Cron != "*:0/20" {
		t.Fatalf("rows %+v", rows)
	}
}

// TestSystemdWarnings: what jobdrop follows only in part is said on the
// row, which still converts.
func TestSystemdWarnings(t *testing.T) {
	rows := convertAll(t, filepath.Join("testdata", "systemd", "hourly.timer"), Options{Defaults: Defaults{Topic: "jobs"}})
	if len(rows) != 1 || rows[0].Err != nil {
		t.Fatalf("rows %+v", rows)
	}
	want := []string{"line 5: OnBootSec=15min counts from the machine's boot, which jobdrop has not; the task follows its other schedule only"}
	if !reflect.DeepEqual(rows[0].Warnings, want) {
		t.Errorf("warnings %q, want %q", rows[0].Warnings, want)
	}
}

func TestSystemdTimespan(t *testing.T) {
	for in, want := range map[string]string{
		"90": "90 SECONDS", "15min": "15 MINUTES", "1h 30min": "90 MINUTES", "1h30m": "90 MINUTES",
		"2d": "2 DAYS", "1w": "7 DAYS", "500ms": "500 MILLISECONDS", "1.5s": "1500 MILLISECONDS", "3 hours": "3 HOURS",
	} {
		d, err := systemdTimespan(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		f, err := durationFrequency(d)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := fmt.Sprintf("%d %s", f.Time, f.TimeUnit); got != want {
			t.Errorf("%q = %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{"", "min", "5 parsecs", "1h x"} {
		if _, err := systemdTimespan(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
