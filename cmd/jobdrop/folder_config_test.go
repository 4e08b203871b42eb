package main

import (
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/injector"
)

func TestFolderOptionsFromEnvironment(t *testing.T) {
	cfg, err := loadConfig("", []string{
		"JOBDROP_WATCH_0_DIR=/srv/inbox",
		"JOBDROP_WATCH_0_PATTERNS_0_PATTERN=*.dat", "JOBDROP_WATCH_0_PATTERNS_0_CONVERTER=csv",
		"JOBDROP_WATCH_0_POLICY=good-rows", "JOBDROP_WATCH_0_MAX_FILE_BYTES=1048576",
		"JOBDROP_WATCH_0_POLL=true", "JOBDROP_WATCH_0_POLL_INTERVAL=10s",
		"JOBDROP_WATCH_0_MIN_AGE=1m", "JOBDROP_WATCH_0_DONE_MARKER=true",
	})
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.Watch[0]
	if len(f.Patterns) != 1 || f.Patterns[0] != (Pattern{"*.dat", "csv"}) || f.Policy != injector.PolicyGoodRows ||
		f.MaxFileBytes != 1<<20 || !f.Poll || f.PollInterval != 10*time.Second || f.MinAge != time.Minute || !f.DoneMarker {
		t.Errorf("folder %+v", f)
	}
}

func TestFolderOptionsAreValidated(t *testing.T) {
	for _, tt := range []struct {
		env, want string
	}{
		{"JOBDROP_WATCH_0_POLICY=some-rows", `watch[0].policy: "some-rows" is not reject or good-rows`},
		{"JOBDROP_WATCH_0_MAX_FILE_BYTES=-5", "watch[0].max_file_bytes: -5"},
		{"JOBDROP_WATCH_0_POLL_INTERVAL=-1s", "watch[0].poll_interval: -1s: must not be negative"},
		{"JOBDROP_WATCH_0_MIN_AGE=-1s", "watch[0].min_age: -1s: must not be negative"},
		{"JOBDROP_WATCH_0_PATTERNS_0_PATTERN=[x", `watch[0].patterns[0].pattern: "[x"`},
		{"JOBDROP_WATCH_0_PATTERNS_0_CONVERTER=pdf", `watch[0].patterns[0].converter: unknown converter "pdf"`},
		{"JOBDROP_WATCH_0_CONVERTER=pdf", `watch[0].converter: unknown converter "pdf"`},
	} {
		t.Run(tt.env, func(t *testing.T) {
			env := []string{tt.env}
			if strings.Contains(tt.env, "PATTERNS_0_CONVERTER") {
				env = append(env, "JOBDROP_WATCH_0_PATTERNS_0_PATTERN=*.x")
			}
			_, err := loadConfig("", env)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestFolderPatternsPickTheConverter(t *testing.T) {
	reg := converters.NewRegistry()
	csv := converters.CSV{}
	reg.Register("csv", csv, "*.csv")
	folder := Folder{Dir: "in", Patterns: []Pattern{{"export-*.DAT", "csv"}}}
	for name, ok := range map[string]bool{"export-1.dat": true, "EXPORT-2.dat": true, "jobs.csv": true, "other.dat": false} {
		c, err := converterFor(reg, folder, name)
		if ok != (err == nil && c != nil) {
			t.Errorf("%s: %v, %v", name, c, err)
		}
	}
}
