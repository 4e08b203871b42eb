package diff

import (
	"slices"
	"testing"

	"github.com/jobdrop/jobdrop/task"
)

func cron(name, expr string) task.Definition {
	return task.Definition{Host: "acme", Name: name, Action: task.Insert, Topic: "jobs", Cron: expr}
}

// TestPlanSaysWhatANewVersionDoes runs a version of a source against the
// tasks that run now, one kind of row per case.
func TestPlanSaysWhatANewVersionDoes(t *testing.T) {
	paused := cron("paused", "0 1 * * *")
	paused.Active = task.Ptr(false)
	current := []Current{
		{Key: "acme/same", Definition: cron("same", "0 1 * * *"), Live: true, InScope: true},
		{Key: "acme/moved", Definition: cron("moved", "0 2 * * *"), Live: true, InScope: true},
		{Key: "acme/gone", Definition: cron("gone", "0 3 * * *"), Live: true, InScope: true},
		{Key: "acme/paused", Definition: paused, Live: true, InScope: true},
		{Key: "acme/fired", Definition: task.Definition{Host: "acme", Name: "fired", Action: task.Insert, Topic: "jobs", Start: task.Ptr(int64(1000))}, Live: false, InScope: true},
		{Key: "acme/ended-other", Definition: cron("ended-other", "0 4 * * *"), Live: false, InScope: true},
		{Key: "acme/elsewhere", Definition: cron("elsewhere", "0 5 * * *"), Live: true},
		{Key: "acme/not-named", Definition: cron("not-named", "0 6 * * *"), Live: true},
	}
	pausedChanged := cron("paused", "30 1 * * *")
	for _, tc := range []struct {
		name string
		row  task.Definition
		kind Kind
		sent *task.Definition // nil: nothing sent
	}{
		{"identical", cron("same", "0 1 * * *"), Unchanged, nil},
		{"identical but UPDATE", func() task.Definition { d := cron("same", "0 1 * * *"); d.Action = task.Update; return d }(), Unchanged, nil},
		{"new schedule", cron("moved", "30 2 * * *"), Changed, task.Ptr(cron("moved", "30 2 * * *"))},
		{"paused task changed stays paused", pausedChanged, Changed, func() *task.Definition { d := pausedChanged; d.Active = task.Ptr(false); return &d }()},
		{"one-shot already fired, same", task.Definition{Host: "acme", Name: "fired", Action: task.Insert, Topic: "jobs", Start: task.Ptr(int64(1000))}, Unchanged, nil},
		{"ended task, different", cron("ended-other", "0 7 * * *"), Added, task.Ptr(cron("ended-other", "0 7 * * *"))},
		{"task of another source, changed", cron("elsewhere", "0 8 * * *"), Changed, task.Ptr(cron("elsewhere", "0 8 * * *"))},
		{"new task", cron("new", "0 9 * * *"), Added, task.Ptr(cron("new", "0 9 * * *"))},
		{"DELETE of a live task", task.Definition{Host: "acme", Name: "same", Action: task.Delete}, Removed, &task.Definition{Host: "acme", Name: "same", Action: task.Delete}},
		{"DELETE of nothing", task.Definition{Host: "acme", Name: "nothing", Action: task.Delete}, Unchanged, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPlan()
			for _, c := range current {
				p.Add(c)
			}
			e := EntryOf(&tc.row)
			kind, _ := p.Count(e)
			if kind != tc.kind {
				t.Errorf("Count = %s, want %s", kind, tc.kind)
			}
			got := p.Command(tc.row)
			switch {
			case (got == nil) != (tc.sent == nil):
				t.Errorf("Command = %+v, want %+v", got, tc.sent)
			case got != nil && !got.Equal(tc.sent):
				t.Errorf("Command = %+v, want %+v", *got, *tc.sent)
			}
		})
	}
}

// TestRemovalsAreTheScopeTheVersionLeftOut: the live tasks of the scope no
// row named are removed; ended ones, tasks outside the scope and tasks
// named by a row are not.
func TestRemovalsAreTheScopeTheVersionLeftOut(t *testing.T) {
	p := NewPlan()
	for _, c := range []Current{
		{Key: "acme/kept", Definition: cron("kept", "0 1 * * *"), Live: true, InScope: true},
		{Key: "acme/dropped", Definition: cron("dropped", "0 2 * * *"), Live: true, InScope: true},
		{Key: "acme/dropped-too", Definition: cron("dropped-too", "0 3 * * *"), Live: true, InScope: true},
		{Key: "acme/ended", Definition: cron("ended", "0 4 * * *"), Live: false, InScope: true},
		{Key: "acme/other", Definition: cron("other", "0 5 * * *"), Live: true},
	} {
		p.Add(c)
	}
	p.Count(EntryOf(task.Ptr(cron("kept", "0 1 * * *"))))
	keys, lines := p.Removals()
	if want := []string{"acme/dropped", "acme/dropped-too"}; !slices.Equal(keys, want) {
		t.Errorf("removals %v, want %v", keys, want)
	}
	if want := []string{"- acme/dropped: cron 0 2 * * *", "- acme/dropped-too: cron 0 3 * * *"}; !slices.Equal(lines, want) {
		t.Errorf("lines %q, want %q", lines, want)
	}
	if c := p.Counts; c.Scope != 3 || c.Removed != 2 || c.Unchanged != 1 {
		t.Errorf("counts %+v, want scope 3, 2 removed, 1 unchanged", c)
	}
}
