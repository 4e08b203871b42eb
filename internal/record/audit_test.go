package record

import (
	"strings"
	"testing"
	"time"
)

func TestNewAudit(t *testing.T) {
	at := time.UnixMilli(1_767_225_600_123)
	a := NewAudit(at, "ada", ActionTaskPaused, "acme/x", OutcomeOK)
	want := Audit{ID: a.ID, At: 1_767_225_600_123, Actor: "ada", Action: ActionTaskPaused, Object: "acme/x", Outcome: OutcomeOK}
	if a != want {
		t.Errorf("NewAudit = %+v, want %+v", a, want)
	}
	if len(a.ID) != 32 || strings.Trim(a.ID, "0123456789abcdef") != "" {
		t.Errorf("id %q, want 32 hex digits", a.ID)
	}
	// The same action in the same millisecond is another event.
	seen := map[string]bool{}
	for range 1000 {
		id := NewAudit(at, "ada", ActionTaskPaused, "acme/x", OutcomeOK).ID
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id] = true
	}
}

func TestAuditKeyed(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b Audit
		same bool
	}{
		{"same key, another instant and actor",
			NewAudit(time.UnixMilli(1), "node-1", ActionExecutionReaped, "f1", OutcomeOK).Keyed("f1"),
			NewAudit(time.UnixMilli(2), "node-2", ActionExecutionReaped, "f1", OutcomeOK).Keyed("f1"), true},
		{"another key",
			NewAudit(time.UnixMilli(1), "node-1", ActionExecutionReaped, "f1", OutcomeOK).Keyed("f1"),
			NewAudit(time.UnixMilli(1), "node-1", ActionExecutionReaped, "f2", OutcomeOK).Keyed("f2"), false},
		{"same key, another action",
			NewAudit(time.UnixMilli(1), "bridge", ActionScheduleRejected, "s", OutcomeRejected).Keyed("s partition 0 offset 4"),
			NewAudit(time.UnixMilli(1), "bridge", ActionScheduleDropped, "s", OutcomeRejected).Keyed("s partition 0 offset 4"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if same := tc.a.ID == tc.b.ID; same != tc.same {
				t.Errorf("ids %q and %q: same %v, want %v", tc.a.ID, tc.b.ID, same, tc.same)
			}
		})
	}
	// Keyed ids are the ones written before NewAudit: a node of the last
	// version and one of this one still write one reaping as one event.
	if got := NewAudit(time.UnixMilli(1), "n", ActionExecutionReaped, "f1", OutcomeOK).Keyed("f1").ID; got != "execution.reaped:f1" {
		t.Errorf("keyed id %q, want execution.reaped:f1", got)
	}
}

func TestAuditKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Audit
		want string
	}{
		{"by actor", Audit{Actor: "ada"}, "ada"},
		{"arrival", Audit{Actor: "node", Arrival: &Arrival{ID: "arr"}, Batch: &Batch{ID: "b", Arrival: "other"}}, "arr"},
		{"batch of an arrival", Audit{Actor: "node", Batch: &Batch{ID: "b", Arrival: "arr"}}, "arr"},
		{"batch", Audit{Actor: "node", Batch: &Batch{ID: "b"}}, "b"},
		{"batch with no id", Audit{Actor: "node", Batch: &Batch{File: "f"}}, "node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Key(); got != tc.want {
				t.Errorf("Key() = %q, want %q", got, tc.want)
			}
		})
	}
}
