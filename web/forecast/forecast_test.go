package forecast

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// every is a task of host and topic that fires every n minutes from now.
func every(t *testing.T, host, topic string, n int32, now time.Time) storetype.TaskSchedule {
	t.Helper()
	d := task.Definition{Host: host, Name: "job", Topic: topic, Action: task.Insert,
		Frequency: &task.Frequency{TimeUnit: task.Minutes, Time: n}, Start: task.Ptr(now.UnixMilli())}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return storetype.TaskSchedule{Key: task.Key(host, "job"), Host: host, Topic: topic, Definition: string(b), Anchor: now, NextFire: now}
}

func TestComputeCountsEachMinutesFiresByHostAndTopic(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	rows := []storetype.TaskSchedule{every(t, "acme", "jobs", 1, now), every(t, "globex", "jobs", 60, now)}
	var f Forecaster
	tl := f.Compute(now, rows, nil)
	if tl.Tasks != 2 || tl.Unread != 0 {
		t.Fatalf("tasks %d, unread %d: want 2 read", tl.Tasks, tl.Unread)
	}
	if want := Minutes + Minutes/60; tl.Fires != want {
		t.Errorf("fires %d, want %d (one a minute and one an hour)", tl.Fires, want)
	}
	if got := tl.Total[0]; got != 2 {
		t.Errorf("first minute: %d fires, want 2", got)
	}
	byHost := tl.Grouped(ByHost)
	if len(byHost.Groups) != 2 || byHost.Groups[0].Name != "acme" || byHost.Groups[0].Fires != Minutes {
		t.Errorf("by host: %+v: want acme first with %d fires", byHost.Groups, Minutes)
	}
	if byTopic := tl.Grouped(ByTopic); len(byTopic.Groups) != 1 || byTopic.Groups[0].Fires != tl.Fires {
		t.Errorf("by topic: %+v: want one topic with every fire", byTopic.Groups)
	}
	if again := f.Compute(now.Add(time.Minute), rows, nil); again.From != now.Add(time.Minute) {
		t.Errorf("the next timeline starts at %v", again.From)
	}
}
