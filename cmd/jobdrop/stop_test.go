package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestUncleanStopIsAudited kills jobdrop without warning, then stops it
// the way systemctl stop does: the start after the kill writes one
// node.unclean_stop event naming the run that did not stop cleanly, the
// start after the clean stop none.
func TestUncleanStopIsAudited(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	console := kafkatest.ClosedAddr(t)
	began := time.Now()
	c := startChildEnv(t, "u1", "JOBDROP_KAFKA_BROKERS="+strings.Join(brokers, ","), "JOBDROP_CONSOLE_LISTEN="+console)
	// audited lists the events of action; nil while the node is down.
	audited := func(action string) []auditEvent {
		var events []auditEvent
		if getJSON("http://"+console+"/api/audit?limit=1000&action="+action, &events) != nil {
			return nil
		}
		return events
	}
	// started waits for the node's nth start in the audit trail: it is
	// written once the node has read everything committed before, so
	// any event of its start came before it.
	started := func(n int) {
		t.Helper()
		kafkatest.Eventually(t, 2*time.Minute, fmt.Sprintf("start %d audited", n), func() bool {
			return len(audited(record.ActionNodeStarted)) == n
		})
	}
	started(1)
	if got := audited(record.ActionNodeUncleanStop); len(got) != 0 {
		t.Fatalf("a first start audited an unclean stop: %+v", got)
	}
	killed := time.Now()
	c.kill() // and start again
	started(2)
	unclean := audited(record.ActionNodeUncleanStop)
	if len(unclean) != 1 {
		t.Fatalf("unclean stops audited after a kill -9: %+v, want 1", unclean)
	}
	u := unclean[0]
	if u.Actor != "u1" || u.Object != "u1" || u.Outcome != record.OutcomeFailed || !strings.Contains(u.Detail, "did not stop cleanly") {
		t.Errorf("unclean stop event = %+v, want one of node u1 saying its run did not stop cleanly", u)
	}
	// It says when the run it speaks of started.
	var at time.Time
	for _, w := range strings.Fields(u.Detail) {
		if ts, err := time.Parse(time.RFC3339, strings.TrimRight(w, ",:;")); err == nil {
			at = ts
		}
	}
	if at.Before(began.Truncate(time.Second)) || at.After(killed) {
		t.Errorf("unclean stop event %q names a start at %v, want one between %v and %v", u.Detail, at, began, killed)
	}
	t.Logf("after the kill: %s", u.Detail)

	// A clean stop: SIGTERM, and jobdrop returns without error.
	c.signal(syscall.SIGTERM)
	<-c.done
	if !c.cmd.ProcessState.Success() {
		t.Fatalf("jobdrop stopped on SIGTERM with %s", c.cmd.ProcessState)
	}
	c.start()
	started(3)
	if got := audited(record.ActionNodeUncleanStop); len(got) != 1 {
		t.Errorf("unclean stops audited after a clean stop and a start: %+v, want still 1", got)
	}
}
