package main

import (
	"strings"
	"testing"
	"time"
)

func TestPacingConfig(t *testing.T) {
	for _, tc := range []struct {
		env      []string
		lateness time.Duration
		err      string
	}{
		{lateness: defaultPacingLateness},
		{env: []string{"JOBDROP_PACING_LATENESS=0s"}, lateness: 0},
		{env: []string{"JOBDROP_PACING_LATENESS=1s", "JOBDROP_PACING_MAX_WAIT=5s"}, lateness: time.Second},
		{env: []string{"JOBDROP_PACING_LATENESS=-1s"}, err: "pacing.lateness: -1s is negative (0s turns pacing off)"},
		{env: []string{"JOBDROP_PACING_MAX_WAIT=-2s"}, err: "pacing.max_wait: -2s is negative"},
	} {
		cfg, err := loadConfig("", tc.env)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, want %q", tc.env, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case cfg.Pacing.Lateness != tc.lateness:
			t.Errorf("%v: pacing.lateness %s, want %s", tc.env, cfg.Pacing.Lateness, tc.lateness)
		}
	}
}
