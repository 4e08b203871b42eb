package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConvertPreviewNamesTheCronDialect: each line says the dialect its
// expression is read in, a Quartz day-of-week fires on Quartz's days, and
// an expression two dialects read apart is warned about on stderr without
// changing the exit status.
func TestConvertPreviewNamesTheCronDialect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.csv")
	if err := os.WriteFile(path, []byte("host,name,topic,cron,timezone\n"+
		"acme,payroll,jobs,0 0 12 ? * 2-6,Europe/Paris\n"+
		"acme,nightly,jobs,30 2 * * *,Europe/Paris\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := mainErr(context.Background(), []string{"convert", path, "--preview", "3", "--from", "2026-03-06T12:00:00Z"}, &stdout, &stderr); err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr.String())
	}
	type line struct {
		Name        string   `json:"name"`
		CronDialect string   `json:"cronDialect"`
		NextFires   []string `json:"nextFires"`
	}
	var got []line
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var l line
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	want := []line{
		// Friday 6 March 2026, 13:00 in Paris: next Monday, Tuesday, Wednesday.
		{"payroll", "quartz", []string{"2026-03-09T11:00:00Z", "2026-03-10T11:00:00Z", "2026-03-11T11:00:00Z"}},
		{"nightly", "unix", []string{"2026-03-07T01:30:00Z", "2026-03-08T01:30:00Z", "2026-03-09T01:30:00Z"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].CronDialect != want[i].CronDialect || !slices.Equal(got[i].NextFires, want[i].NextFires) {
			t.Errorf("line %d: got %+v, want %+v", i+1, got[i], want[i])
		}
	}
	if w := `warning: jobs.csv: row 2: column cron: day-of-week "2-6" read as quartz (MON-FRI); in spring it would be TUE-SAT`; !strings.Contains(stderr.String(), w) {
		t.Errorf("stderr %q lacks %q", stderr.String(), w)
	}
	if strings.Count(stderr.String(), "warning:") != 1 {
		t.Errorf("stderr %q: want exactly one warning", stderr.String())
	}
}

// TestConvertPreviewShowsFiresInTheTasksZone: a task with a time zone
// lists its next fires in that zone too, the same instants as in UTC, each
// with the offset of its own date across a daylight-saving change; a task
// without one lists UTC only.
func TestConvertPreviewShowsFiresInTheTasksZone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.csv")
	if err := os.WriteFile(path, []byte("host,name,topic,cron,timezone\n"+
		"acme,nightly,jobs,30 3 * * *,Europe/Paris\n"+
		"acme,hourly,jobs,0 * * * *,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	// From the Friday before Paris moves to summer time (29 March 2026).
	if err := mainErr(context.Background(), []string{"convert", path, "--preview", "3", "--from", "2026-03-27T12:00:00Z"}, &stdout, &stderr); err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr.String())
	}
	type line struct {
		Name           string   `json:"name"`
		NextFires      []string `json:"nextFires"`
		NextFiresLocal []string `json:"nextFiresLocal"`
	}
	var got []line
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var l line
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if len(got) != 2 {
		t.Fatalf("got %+v, want 2 lines", got)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	nightly := got[0]
	if len(nightly.NextFiresLocal) != 3 || len(nightly.NextFires) != 3 {
		t.Fatalf("nightly: %+v, want 3 fires in UTC and 3 in Europe/Paris", nightly)
	}
	var offsets []string
	for i, local := range nightly.NextFiresLocal {
		l, err1 := time.Parse(time.RFC3339, local)
		u, err2 := time.Parse(time.RFC3339, nightly.NextFires[i])
		if err1 != nil || err2 != nil || !l.Equal(u) {
			t.Errorf("fire %d: local %s and UTC %s are not the same instant", i, local, nightly.NextFires[i])
		}
		if l.Format("15:04") != "03:30" {
			t.Errorf("fire %d: %s, want 03:30 on the task's clock", i, local)
		}
		_, want := u.In(paris).Zone()
		if _, off := l.Zone(); off != want {
			t.Errorf("fire %d: %s has offset %ds, want Paris's %ds on that date", i, local, off, want)
		}
		offsets = append(offsets, local[len(local)-6:])
	}
	if !slices.Contains(offsets, "+01:00") || !slices.Contains(offsets, "+02:00") {
		t.Errorf("offsets %v: want winter and summer time across the change", offsets)
	}
	if hourly := got[1]; len(hourly.NextFires) != 3 || hourly.NextFiresLocal != nil {
		t.Errorf("hourly (no zone): %+v, want UTC fires only", hourly)
	}
}
