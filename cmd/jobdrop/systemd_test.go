package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestDroppedSystemdTimersFireOnTime drops a timer with its service beside
// it, and an archive holding another timer and its service: each timer
// fires at every time its OnCalendar= lines name (once where two meet),
// with its service's command; the loose service stays in the folder for
// the timers that activate it.
func TestDroppedSystemdTimersFireOnTime(t *testing.T) {
	in := startInstanceEnv(t, []string{"JOBDROP_WATCH_0_DEFAULTS_TOPIC=batch-jobs", "JOBDROP_WATCH_0_DEFAULTS_HOST=ops"}, kafkatest.Cluster(t)...)
	t0 := in.clock.Now().UTC()
	jobs := kafkatest.Collect(t, in.brokers, "batch-jobs")

	in.drop("quarter.service", "[Service]\nExecStart=/usr/bin/quarter --run\n")
	in.drop("quarter.timer", "[Unit]\nDescription=Every quarter hour, and at seven past\n\n[Timer]\n"+
		"OnCalendar=*:0/15\nOnCalendar=*-*-* *:07:00 UTC\nPersistent=true\n")
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"units/ledger.timer":         "[Timer]\nOnCalendar=*:30\nUnit=ledger-close.service\n",
		"units/ledger-close.service": "[Service]\nExecStart=/opt/ledger/close\n",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	in.drop("units.tar.gz", tgz.String())
	in.waitFile("archive", "quarter.timer")
	in.waitFile("archive", "units.tar.gz")
	if _, err := os.Stat(filepath.Join(in.inbox, "quarter.service")); err != nil {
		t.Errorf("the service should stay in the folder: %v", err)
	}
	var tasks []struct{ Host, Name string }
	kafkatest.Eventually(t, 60*time.Second, "the console to list 2 tasks", func() bool {
		return in.getJSON("/api/tasks", &tasks) == nil && len(tasks) == 2
	})

	// What the timers say, counted minute by minute over the next hour.
	want := map[string][]string{}
	var steps []time.Time
	for m := t0.Truncate(time.Minute); !m.After(t0.Add(time.Hour)); m = m.Add(time.Minute) {
		if m.Before(t0) {
			continue
		}
		due := false
		if m.Minute()%15 == 0 || m.Minute() == 7 {
			want["ops/quarter"] = append(want["ops/quarter"], m.Format(time.RFC3339))
			due = true
		}
		if m.Minute() == 30 {
			want["ops/ledger"] = append(want["ops/ledger"], m.Format(time.RFC3339))
			due = true
		}
		if due && m.After(t0) {
			steps = append(steps, m)
		}
	}
	fired := func() map[string][]string { return firedTimes(t, jobs) }
	for _, at := range steps {
		in.advanceTo(at)
		stamp := at.Format(time.RFC3339)
		kafkatest.Eventually(t, 60*time.Second, "the fires due at "+stamp, func() bool {
			got := fired()
			for key, times := range want {
				if slices.Contains(times, stamp) && !slices.Contains(got[key], stamp) {
					return false
				}
			}
			return true
		})
	}

	brokers := in.brokers
	in.stop()
	got := map[string][]string{}
	for _, f := range kafkatest.Decode[record.Fired](t, kafkatest.Drain(t, brokers, "batch-jobs")) {
		key := f.Host + "/" + f.Name
		got[key] = append(got[key], time.UnixMilli(f.ScheduledAt).UTC().Format(time.RFC3339))
		wantCommand := map[string]string{"ops/quarter": "/usr/bin/quarter --run", "ops/ledger": "/opt/ledger/close"}[key]
		if f.Data["command"] != wantCommand {
			t.Errorf("fired event of %s: command %q, want %q", key, f.Data["command"], wantCommand)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fired %v\nwant  %v", got, want)
	}
	t.Logf("from %s: fired %v", t0.Format(time.RFC3339), got)
}
