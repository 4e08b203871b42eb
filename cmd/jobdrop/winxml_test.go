package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestDroppedWindowsTaskFiresOnTime drops the sample Task Scheduler export
// (UTF-16 with a BOM, as schtasks /query /xml writes it) into a folder in
// Paris time: its one-shot, its repeating daily trigger and its weekly one
// fire at the local times the Windows console shows, with the command.
func TestDroppedWindowsTaskFiresOnTime(t *testing.T) {
	sample, err := os.ReadFile("../../samples/windows_ledger_close.xml")
	if err != nil {
		t.Fatal(err)
	}
	in := startInstanceEnv(t, []string{"JOBDROP_WATCH_0_DEFAULTS_TOPIC=batch-jobs", "JOBDROP_WATCH_0_DEFAULTS_TIMEZONE=Europe/Paris"}, kafkatest.Cluster(t)...)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	at := func(hm string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", "2027-01-04 "+hm, paris)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	jobs := kafkatest.Collect(t, in.brokers, "batch-jobs")

	in.drop("ledger close.xml", string(sample))
	in.waitFile("archive", "ledger close.xml")
	var tasks []struct {
		Name string `json:"name"`
	}
	kafkatest.Eventually(t, 60*time.Second, "the console to list 5 tasks", func() bool {
		return in.getJSON("/api/tasks", &tasks) == nil && len(tasks) == 5
	})

	for i, step := range []struct {
		at    string
		fires int
	}{{"07:00", 1}, {"09:00", 2}, {"11:00", 3}, {"13:00", 4}, {"15:00", 5}, {"23:30", 6}} {
		in.advanceTo(at(step.at))
		kafkatest.Eventually(t, 60*time.Second, fmt.Sprintf("step %d: %d fires at %s", i, step.fires, step.at), func() bool { return jobs.Count() >= step.fires })
	}

	brokers := in.brokers
	in.stop()
	got := map[string][]string{}
	for _, f := range kafkatest.Decode[record.Fired](t, kafkatest.Drain(t, brokers, "batch-jobs")) {
		got[f.Host+"/"+f.Name] = append(got[f.Host+"/"+f.Name], time.UnixMilli(f.ScheduledAt).In(paris).Format("2006-01-02 15:04"))
		if f.Data["windows.command"] != `C:\Batch\ledger-close.exe` || f.Data["windows.arguments"] != "--post --books EU-01" {
			t.Errorf("fired event of %s lacks the Exec action: %v", f.Name, f.Data)
		}
	}
	want := map[string][]string{
		"windows/Finance/Ledger close.go-live":      {"2027-01-04 07:00"},
		"windows/Finance/Ledger close.office-hours": {"2027-01-04 09:00", "2027-01-04 11:00", "2027-01-04 13:00", "2027-01-04 15:00"},
		"windows/Finance/Ledger close.weekdays":     {"2027-01-04 23:30"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fired %v\nwant  %v", got, want)
	}
}
