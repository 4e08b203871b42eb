package diff

import (
	"fmt"
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

// TestOrphansAreDeletedTasksThatOthersStillFollow: a version that deletes
// a task (by leaving it out, or by a DELETE row) that a task it keeps
// still follows names it with its followers, whichever way the follower
// stays: a row of the version, a task of another source, a live task the
// plan leaves alone. A follower the version deletes too, or redefines
// without the deleted task, orphans nothing.
func TestOrphansAreDeletedTasksThatOthersStillFollow(t *testing.T) {
	after := func(name string, preds ...string) task.Definition {
		d := cron(name, "0 1 * * *")
		d.After = preds
		return d
	}
	for _, tc := range []struct {
		name    string
		current []Current
		rows    []task.Definition
		others  []Current // live followers outside the plan, as the store answers them
		want    []string
	}{
		{
			name: "a row follows a task left out",
			current: []Current{
				{Key: "acme/extract", Definition: cron("extract", "0 1 * * *"), Live: true, InScope: true},
				{Key: "acme/transform", Definition: after("transform", "extract"), Live: true, InScope: true},
			},
			rows: []task.Definition{after("transform", "extract"), after("load", "extract")},
			want: []string{"removes acme/extract, which acme/load and acme/transform still follow"},
		},
		{
			name: "a task of another source follows a task left out",
			current: []Current{
				{Key: "acme/extract", Definition: cron("extract", "0 1 * * *"), Live: true, InScope: true},
				{Key: "acme/keep", Definition: cron("keep", "0 1 * * *"), Live: true, InScope: true},
			},
			rows:   []task.Definition{cron("keep", "0 1 * * *")},
			others: []Current{{Key: "other/report", Definition: task.Definition{Host: "other", Name: "report", After: []string{"acme/extract"}}, Live: true}},
			want:   []string{"removes acme/extract, which other/report still follows"},
		},
		{
			name: "a DELETE row of a task a kept task follows",
			current: []Current{
				{Key: "acme/extract", Definition: cron("extract", "0 1 * * *"), Live: true},
				{Key: "acme/load", Definition: after("load", "extract"), Live: true},
			},
			rows: []task.Definition{{Host: "acme", Name: "extract", Action: task.Delete}, {Host: "acme", Name: "load", Action: task.Trigger}},
			want: []string{"removes acme/extract, which acme/load still follows"},
		},
		{
			name: "the follower is deleted too",
			current: []Current{
				{Key: "acme/extract", Definition: cron("extract", "0 1 * * *"), Live: true, InScope: true},
				{Key: "acme/transform", Definition: after("transform", "extract"), Live: true, InScope: true},
				{Key: "acme/keep", Definition: cron("keep", "0 1 * * *"), Live: true, InScope: true},
			},
			rows: []task.Definition{cron("keep", "0 1 * * *")},
		},
		{
			name: "the follower is redefined without it",
			current: []Current{
				{Key: "acme/extract", Definition: cron("extract", "0 1 * * *"), Live: true, InScope: true},
				{Key: "acme/transform", Definition: after("transform", "extract"), Live: true, InScope: true},
			},
			rows: []task.Definition{cron("transform", "0 2 * * *")},
			// The store still answers the stored definition: the plan's
			// row wins.
			others: []Current{{Key: "acme/transform", Definition: after("transform", "extract"), Live: true}},
		},
		{
			name: "an ended follower",
			current: []Current{
				{Key: "acme/extract", Definition: cron("extract", "0 1 * * *"), Live: true, InScope: true},
				{Key: "acme/keep", Definition: cron("keep", "0 1 * * *"), Live: true, InScope: true},
			},
			rows:   []task.Definition{cron("keep", "0 1 * * *")},
			others: []Current{{Key: "other/report", Definition: task.Definition{Host: "other", Name: "report", After: []string{"acme/extract"}}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPlan()
			for _, c := range tc.current {
				p.Add(c)
			}
			for i := range tc.rows {
				p.Count(EntryOf(&tc.rows[i]))
			}
			p.Removals()
			var got []string
			for _, o := range p.Orphans(tc.others) {
				got = append(got, o.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("orphans %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOrphanNamesAtMostTenFollowers(t *testing.T) {
	o := Orphan{Key: "acme/root"}
	for i := range 12 {
		o.Followers = append(o.Followers, fmt.Sprintf("acme/f%02d", i))
	}
	if got, want := o.String(), "removes acme/root, which acme/f00, acme/f01, acme/f02, acme/f03, acme/f04, acme/f05, acme/f06, acme/f07, acme/f08, acme/f09 and 2 more still follow"; got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
}
