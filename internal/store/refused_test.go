package store

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// TestApplyRefusedFireRetried: the engine records FAILED each attempt at a
// fire the brokers refused, then fires the occurrence with the same fire
// id. The console shows FAILED with the brokers' answer while it is
// refused, and FIRED once an attempt goes through, in whatever order the
// recorder reads the executions and status topics; a worker's report after
// the fire is kept as usual.
func TestApplyRefusedFireRetried(t *testing.T) {
	refused := func(t *testing.T, p int32, attempt int64) []*kgo.Record {
		at := t0 + attempt*1000
		return []*kgo.Record{
			executionRec(t, p, record.Execution{FireID: "f", Host: "h", Name: "n", Topic: "jobs", Partition: -1, Offset: -1,
				ScheduledAt: t0, FiredAt: at}),
			statusRec(t, p, record.Status{FireID: "f", Status: record.StatusFailed, Worker: "scheduler", At: at,
				Message: "refused by the brokers: MESSAGE_TOO_LARGE"}),
		}
	}
	fired := func(t *testing.T, p int32) *kgo.Record {
		return executionRec(t, p, record.Execution{FireID: "f", Host: "h", Name: "n", Topic: "jobs", Partition: 2, Offset: 7,
			ScheduledAt: t0, FiredAt: t0 + 3000})
	}
	tests := []struct {
		name        string
		recs        func(t *testing.T) []*kgo.Record
		want, wantM string
	}{
		{"refused", func(t *testing.T) []*kgo.Record { return refused(t, 0, 0) },
			"FAILED", "refused by the brokers: MESSAGE_TOO_LARGE"},
		{"refused twice, then fired", func(t *testing.T) []*kgo.Record {
			return append(append(refused(t, 0, 0), refused(t, 0, 1)...), fired(t, 0))
		}, "FIRED", ""},
		{"fired, then an earlier refusal read late", func(t *testing.T) []*kgo.Record {
			r := refused(t, 1, 1)
			return append(append(refused(t, 0, 0), r[0], fired(t, 0)), r[1])
		}, "FIRED", ""},
		{"fired, then a worker's report", func(t *testing.T) []*kgo.Record {
			return append(refused(t, 0, 0), fired(t, 0),
				statusRec(t, 0, record.Status{FireID: "f", Status: record.StatusFailed, Worker: "w1", At: t0 + 4000, Message: "disk full"}))
		}, "FAILED", "disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t, tempDB(t))
			for _, r := range sequence(tt.recs(t)...) {
				apply(t, st, r)
			}
			e, err := st.ExecutionByFireID(context.Background(), "f")
			if err != nil {
				t.Fatal(err)
			}
			if e.Status != tt.want || e.StatusMessage != tt.wantM {
				t.Errorf("execution %s %q, want %s %q", e.Status, e.StatusMessage, tt.want, tt.wantM)
			}
		})
	}
}

// TestApplyTaskFault: the console shows why the engine holds a task back
// while the brokers refuse its fires, and that the fault policy paused it;
// a new definition or the task's end clears it.
func TestApplyTaskFault(t *testing.T) {
	def := task.Definition{Host: "acme", Name: "big", Action: task.Insert, Topic: "jobs", Start: task.Ptr(t0)}
	paused := def
	paused.Active = task.Ptr(false)
	reason := "MESSAGE_TOO_LARGE: The request included a message larger than the max message size the server will accept"
	retrying := &record.State{Definition: def, Anchor: t0, NextFire: t0 + 1000, UpdatedAt: t0,
		Fault: &record.Fault{Occurrence: t0, Attempts: 1, Reason: reason, At: t0, RetryAt: t0 + 1000}}
	pausedByPolicy := &record.State{Definition: paused, Anchor: t0, UpdatedAt: t0 + 15_000,
		Fault: &record.Fault{Occurrence: t0, Attempts: 5, Reason: reason, At: t0 + 15_000, Paused: true}}
	resumed := &record.State{Definition: def, Anchor: t0, NextFire: t0 + 20_000, UpdatedAt: t0 + 20_000}
	for _, tc := range []struct {
		name       string
		states     []*kgo.Record
		wantFault  string
		wantPaused bool
		wantCount  int
	}{
		{"retrying", []*kgo.Record{stateRec(t, 0, def.Key(), retrying, "")}, "fire refused (attempt 1): " + reason, false, 0},
		{"paused by the policy", []*kgo.Record{stateRec(t, 0, def.Key(), retrying, ""), stateRec(t, 0, def.Key(), pausedByPolicy, "")},
			"paused by fault policy: " + reason, true, 1},
		{"resumed", []*kgo.Record{stateRec(t, 0, def.Key(), pausedByPolicy, ""), stateRec(t, 0, def.Key(), resumed, "")}, "", false, 0},
		{"deleted", []*kgo.Record{stateRec(t, 0, def.Key(), pausedByPolicy, ""), stateRec(t, 0, def.Key(), nil, record.EndDeleted)}, "", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, tempDB(t))
			apply(t, st, sequence(tc.states...)...)
			ctx := context.Background()
			got, err := st.TaskByKey(ctx, def.Key())
			if err != nil {
				t.Fatal(err)
			}
			if got.Fault != tc.wantFault || got.Live() && got.Paused != tc.wantPaused {
				t.Errorf("task fault %q, paused %v; want %q, %v", got.Fault, got.Paused, tc.wantFault, tc.wantPaused)
			}
			sum, err := st.Summary(ctx, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if sum.TasksPausedByFaultPolicy != tc.wantCount {
				t.Errorf("summary counts %d tasks paused by the fault policy, want %d", sum.TasksPausedByFaultPolicy, tc.wantCount)
			}
		})
	}
}
