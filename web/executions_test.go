package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
)

// TestCatchUpFireSaysHowManyMissedFiresItStandsFor: a FIRE_ONCE task
// whose node was down for half an hour fires once for the 30 occurrences
// it missed; its row says so on the executions page and the task's page,
// and no other row says anything of the kind.
func TestCatchUpFireSaysHowManyMissedFiresItStandsFor(t *testing.T) {
	f := history(t)
	at := now.Add(-time.Minute)
	f.add(topics.Executions, "catch-up", record.Execution{FireID: "catch-up", Host: "acme", Name: "nightly", Topic: "jobs",
		Partition: 1, Offset: 20, ScheduledAt: ms(at), FiredAt: ms(at.Add(2 * time.Second)), Batch: payrollID, Collapsed: 30})
	ts := serve(t, f)
	for _, path := range []string{"/executions", "/tasks/acme/nightly"} {
		cells, _ := rows(t, page(t, ts.URL+path), "executions")
		var said []string
		for _, r := range cells {
			if strings.Contains(r[1], "missed") {
				said = append(said, r[0]+" "+r[1])
			}
		}
		if want := "acme/nightly 2026-03-14T09:25:53Z 1 fire for 30 missed"; len(said) != 1 || said[0] != want {
			t.Errorf("%s: rows saying what they stand for: %q, want only %q", path, said, want)
		}
	}
}
