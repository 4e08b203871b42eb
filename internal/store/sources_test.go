package store

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// TestSourceTasksAreWhatAFolderFileCreated records tasks from several
// files, folders and times, and asks for the source of one file: its live
// and completed tasks, those recorded before states named their folder
// (found by their batch's folder) included; deleted ones and other
// sources' left out.
func TestSourceTasksAreWhatAFolderFileCreated(t *testing.T) {
	st := openStore(t, tempDB(t))
	state := func(name, folder, file, batch string) *record.State {
		return &record.State{Definition: task.Definition{Host: "acme", Name: name, Action: task.Insert, Topic: "jobs", Cron: "0 1 * * *"},
			Source: record.Source{Batch: batch, File: file, Folder: folder}}
	}
	apply(t, st, sequence(
		auditRec(t, 0, record.Audit{ID: "a1", Actor: "watcher", Action: record.ActionFileInjected, Object: "crontab",
			Batch: &record.Batch{ID: "old", File: "crontab", Folder: "inbox"}}),
		stateRec(t, 0, "acme/now", state("now", "inbox", "crontab", "new"), ""),
		stateRec(t, 0, "acme/before", state("before", "", "crontab", "old"), ""),
		stateRec(t, 0, "acme/done", state("done", "inbox", "crontab", "new"), ""),
		stateRec(t, 0, "acme/done", nil, record.EndCompleted),
		stateRec(t, 0, "acme/gone", state("gone", "inbox", "crontab", "new"), ""),
		stateRec(t, 0, "acme/gone", nil, record.EndDeleted),
		stateRec(t, 0, "acme/elsewhere", state("elsewhere", "other", "crontab", "x"), ""),
		stateRec(t, 0, "acme/sibling", state("sibling", "inbox", "jobs.csv", "y"), ""),
		stateRec(t, 0, "#checkpoint", nil, ""),
	)...)
	var got []string
	err := st.SourceTasks(context.Background(), "inbox", "crontab", nil, func(t SourceTask) error {
		live := "live"
		if !t.Live {
			live = "ended"
		}
		got = append(got, t.Key+" "+live)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"acme/before live", "acme/done ended", "acme/now live"}; !slices.Equal(got, want) {
		t.Errorf("source tasks %v, want %v", got, want)
	}
	got = nil
	err = st.SourceTasks(context.Background(), "inbox", "", []string{"acme"}, func(t SourceTask) error {
		got = append(got, t.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"acme/before", "acme/done", "acme/now", "acme/sibling"}; !slices.Equal(got, want) {
		t.Errorf("source tasks by host %v, want %v", got, want)
	}
}

// TestFollowersAreTheLiveTasksThatNameAKey: a task follows a key when its
// after names it by name (a task of its own host) or as host/name;
// completed and deleted followers, and tasks that name other tasks or
// only mention one in their data, are left out; a follower of several
// keys is answered once.
func TestFollowersAreTheLiveTasksThatNameAKey(t *testing.T) {
	st := openStore(t, tempDB(t))
	def := func(host, name string, after ...string) *record.State {
		d := task.Definition{Host: host, Name: name, Action: task.Insert, Topic: "jobs", After: after}
		if len(after) == 0 {
			d.Cron = "0 1 * * *"
		}
		return &record.State{Definition: d}
	}
	paused := def("acme", "paused", "extract")
	paused.Definition.Active = task.Ptr(false)
	mentions := def("acme", "mentions", "unrelated")
	mentions.Definition.Data = map[string]string{"note": `"after":["extract"]`}
	apply(t, st, sequence(
		stateRec(t, 0, "acme/extract", def("acme", "extract"), ""),
		stateRec(t, 0, "acme/transform", def("acme", "transform", "extract"), ""),
		stateRec(t, 0, "acme/report", def("acme", "report", "transform", "load"), ""),
		stateRec(t, 0, "other/audit", def("other", "audit", "acme/extract"), ""),
		stateRec(t, 0, "other/extract-too", def("other", "extract-too", "extract"), ""),
		stateRec(t, 0, "acme/paused", paused, ""),
		stateRec(t, 0, "acme/mentions", mentions, ""),
		stateRec(t, 0, "acme/done", def("acme", "done", "extract"), ""),
		stateRec(t, 0, "acme/done", nil, record.EndCompleted),
		stateRec(t, 0, "acme/gone", def("acme", "gone", "extract"), ""),
		stateRec(t, 0, "acme/gone", nil, record.EndDeleted),
		stateRec(t, 0, "#checkpoint", nil, ""),
	)...)
	var got []string
	err := st.Followers(context.Background(), []string{"acme/extract", "acme/transform", "acme/load"}, func(t SourceTask) error {
		if !t.Live || t.Definition == "" {
			return fmt.Errorf("follower %s answered without its live definition", t.Key)
		}
		got = append(got, t.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"acme/paused", "acme/report", "acme/transform", "other/audit"}; !slices.Equal(got, want) {
		t.Errorf("followers %v, want %v", got, want)
	}
}
