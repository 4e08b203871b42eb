package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRunMarkPassesOnEveryUncleanStop: a run killed before it could audit
// the unclean stop before it passes that one on with its own, and a mark
// cut off as its run died still counts as an unclean stop.
func TestRunMarkPassesOnEveryUncleanStop(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	for _, tc := range []struct {
		name   string
		before func(dir string)
		want   string
	}{
		{"a first start", func(string) {}, "[]"},
		{"after a clean stop", func(dir string) {
			markRunning(dir, at(0))
			markStopped(dir)
		}, "[]"},
		{"after a kill", func(dir string) { markRunning(dir, at(0)) }, fmt.Sprint([]int64{at(0).UnixMilli()})},
		{"after two kills, the first not yet audited", func(dir string) {
			markRunning(dir, at(0))
			markRunning(dir, at(1))
		}, fmt.Sprint([]int64{at(0).UnixMilli(), at(1).UnixMilli()})},
		{"after a kill that cut the mark off", func(dir string) {
			os.WriteFile(filepath.Join(dir, runningFile), []byte(`{"star`), 0o644)
		}, "[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.before(dir)
			unclean, err := markRunning(dir, at(2))
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(unclean); got != tc.want {
				t.Errorf("unclean stops = %s, want %s", got, tc.want)
			}
		})
	}
}
