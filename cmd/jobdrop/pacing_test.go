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
		recorder time.Duration
		err      string
	}{
		{lateness: defaultPacingLateness, recorder: defaultRecorderLateness},
		{env: []string{"JOBDROP_PACING_LATENESS=0s"}, lateness: 0, recorder: defaultRecorderLateness},
		{env: []string{"JOBDROP_PACING_LATENESS=1s", "JOBDROP_PACING_MAX_WAIT=5s", "JOBDROP_PACING_RECORDER_LATENESS=0s"},
			lateness: time.Second, recorder: 0},
		{env: []string{"JOBDROP_PACING_LATENESS=-1s"}, err: "pacing.lateness: -1s is negative (0s turns pacing off)"},
		{env: []string{"JOBDROP_PACING_RECORDER_LATENESS=-1ms"}, err: "pacing.recorder_lateness: -1ms is negative"},
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
		case cfg.Pacing.RecorderLateness != tc.recorder:
			t.Errorf("%v: pacing.recorder_lateness %s, want %s", tc.env, cfg.Pacing.RecorderLateness, tc.recorder)
		}
	}
}
