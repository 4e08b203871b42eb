package injector

import (
	"strings"
	"testing"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

func TestRowCheck(t *testing.T) {
	topics := record.Topics{}.WithDefaults()
	row := func(line int, name, topic string) converters.Row {
		return converters.Row{Line: line, Def: task.Definition{Host: "acme", Name: name, Topic: topic, Action: task.Insert}}
	}
	check := NewRowCheck("jobs.csv", topics)
	for _, tc := range []struct {
		name string
		row  converters.Row
		want string // "" for a good row
	}{
		{"first of its key", row(2, "a", "batch-jobs"), ""},
		{"another key", row(3, "b", "batch-jobs"), ""},
		{"a key again", row(4, "a", "other"), `jobs.csv: row 4: column name: value "a": task acme/a appears again (first at row 2)`},
		{"into the input topic, as light-scheduler's example", row(5, "c", topics.Input), ""},
		{"into the state topic", row(6, "d", topics.State), `jobs.csv: row 6: column topic: value "light-scheduler-state": is jobdrop's state topic`},
		{"into the executions topic", row(7, "e", topics.Executions), "is jobdrop's executions topic"},
		{"into the status topic", row(8, "f", topics.Status), "is jobdrop's status topic"},
		{"into the audit topic", row(9, "g", topics.Audit), "is jobdrop's audit topic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := check.Check(tc.row)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check = %v, want the row taken", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestKeySet(t *testing.T) {
	var s keySet
	const n = 100_000
	for i := range n {
		// 0 and 1 stand for the same hash (0 marks an empty slot).
		if _, dup := s.add(uint64(i+2)*0x9E3779B97F4A7C15, i+1); dup {
			t.Fatalf("hash %d seen before", i)
		}
	}
	for i := range n {
		if first, dup := s.add(uint64(i+2)*0x9E3779B97F4A7C15, n+i); !dup || first != i+1 {
			t.Fatalf("hash %d: first %d, dup %v; want row %d", i, first, dup, i+1)
		}
	}
	if _, dup := s.add(0, 1); dup {
		t.Fatal("hash 0 seen before")
	}
	if first, dup := s.add(1, 2); !dup || first != 1 {
		t.Fatalf("hash 1 after 0: %d %v", first, dup)
	}
}
