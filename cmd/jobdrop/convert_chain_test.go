package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jobdrop/jobdrop/task"
)

// TestConvertSampleChain: the dry run of samples/nightly-chain.csv prints
// each task's chain and retry, previews the fires of the task with a
// schedule, and none for the tasks its predecessors release, without a
// warning or an error for them.
func TestConvertSampleChain(t *testing.T) {
	var stdout, stderr bytes.Buffer
	path := filepath.Join("..", "..", "samples", "nightly-chain.csv")
	if err := mainErr(context.Background(), []string{"convert", path, "--preview", "2", "--from", "2026-03-01T00:00:00Z"}, &stdout, &stderr); err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr %q, want nothing", stderr.String())
	}
	type line struct {
		task.Definition
		NextFires []string `json:"nextFires"`
	}
	got := map[string]line{}
	var order []string
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var l line
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		got[l.Name] = l
		order = append(order, l.Name)
	}
	if want := []string{"extract", "transform", "load", "report", "cleanup"}; !slices.Equal(order, want) {
		t.Fatalf("tasks %q, want %q", order, want)
	}
	for _, l := range got {
		if l.Host != "acme" || l.Topic != "batch-jobs" {
			t.Errorf("%s: host %q topic %q, want acme and batch-jobs", l.Name, l.Host, l.Topic)
		}
	}
	extract := got["extract"]
	if extract.Cron != "0 2 * * *" || extract.Retry == nil || *extract.Retry != (task.Retry{Attempts: 3, Delay: 600_000}) ||
		!slices.Equal(extract.NextFires, []string{"2026-03-01T02:00:00Z", "2026-03-02T02:00:00Z"}) {
		t.Errorf("extract: %+v, want cron 0 2 * * *, 3 attempts 10m apart and two fires at 02:00", extract)
	}
	for name, want := range map[string]struct {
		after []string
		on    task.Outcome
		delay int64
	}{
		"transform": {[]string{"extract"}, "", 0},
		"load":      {[]string{"extract"}, "", 0},
		"report":    {[]string{"transform", "load"}, "", 300_000},
		"cleanup":   {[]string{"report"}, task.OnFailure, 0},
	} {
		l := got[name]
		if !slices.Equal(l.After, want.after) || l.On != want.on || l.Delay != want.delay {
			t.Errorf("%s: after %q on %q delay %d, want %q %q %d", name, l.After, l.On, l.Delay, want.after, want.on, want.delay)
		}
		if l.NextFires != nil {
			t.Errorf("%s: next fires %q, want none: its predecessors release it", name, l.NextFires)
		}
	}
}
