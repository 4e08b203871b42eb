package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// sequence numbers records per partition, as a broker would.
func sequence(recs ...*kgo.Record) []*kgo.Record {
	next := make(map[topicPartition]int64)
	for _, r := range recs {
		tp := topicPartition{r.Topic, r.Partition}
		r.Offset = next[tp]
		next[tp]++
		if r.Timestamp.IsZero() {
			r.Timestamp = time.UnixMilli(t0).UTC()
		}
	}
	return recs
}

func apply(t *testing.T, st *Store, recs ...*kgo.Record) []Skipped {
	t.Helper()
	skipped, err := st.Apply(context.Background(), testTopics, recs)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return skipped
}

func TestApplyStatusOrder(t *testing.T) {
	exec := func(t *testing.T, p int32) *kgo.Record {
		return executionRec(t, p, record.Execution{FireID: "f", Host: "h", Name: "n", ScheduledAt: t0, FiredAt: t0 + 1})
	}
	status := func(t *testing.T, p int32, s string, at int64) *kgo.Record {
		return statusRec(t, p, record.Status{FireID: "f", Status: s, Message: s + " report", At: at})
	}
	tests := []struct {
		name string
		recs func(t *testing.T) []*kgo.Record
		want string
	}{
		{"fired only", func(t *testing.T) []*kgo.Record { return []*kgo.Record{exec(t, 0)} }, "FIRED"},
		{"running then success", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{exec(t, 0), status(t, 0, "RUNNING", t0+10), status(t, 0, "SUCCESS", t0+20)}
		}, "SUCCESS"},
		{"older running after success", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{exec(t, 0), status(t, 0, "SUCCESS", t0+20), status(t, 1, "RUNNING", t0+10)}
		}, "SUCCESS"},
		{"older failure after success", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{exec(t, 0), status(t, 0, "SUCCESS", t0+20), status(t, 1, "FAILED", t0+10)}
		}, "SUCCESS"},
		{"newer retry after failure", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{exec(t, 0), status(t, 0, "FAILED", t0+20), status(t, 0, "RUNNING", t0+30)}
		}, "RUNNING"},
		{"final beats running at the same instant", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{status(t, 0, "FAILED", t0+20), status(t, 1, "RUNNING", t0+20), exec(t, 0)}
		}, "FAILED"},
		{"status before its execution", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{status(t, 0, "RUNNING", t0+10), exec(t, 0)}
		}, "RUNNING"},
		{"lower-case status", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{exec(t, 0), status(t, 0, "success", t0+10)}
		}, "SUCCESS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t, tempDB(t))
			// One record per Apply: each is its own polled batch.
			for _, r := range sequence(tt.recs(t)...) {
				apply(t, st, r)
			}
			e, err := st.ExecutionByFireID(context.Background(), "f")
			if err != nil {
				t.Fatal(err)
			}
			if e.Status != tt.want {
				t.Errorf("status = %s, want %s", e.Status, tt.want)
			}
			if tt.want != "FIRED" && e.StatusMessage != tt.want+" report" && e.StatusMessage != "success report" {
				t.Errorf("message = %q, want the %s report's", e.StatusMessage, tt.want)
			}
			if e.Host != "h" || e.FiredAt == nil || e.FiredAt.UnixMilli() != t0+1 {
				t.Errorf("execution details lost: %+v", e)
			}
		})
	}
}

func TestApplyBatchStatus(t *testing.T) {
	ev := func(t *testing.T, id, action, file string, at int64) *kgo.Record {
		return auditRec(t, 0, record.Audit{ID: id, At: at, Actor: "watcher", Action: action, Object: file,
			Batch: &record.Batch{ID: "b", File: file, Rows: 4, Rejected: 1}})
	}
	tests := []struct {
		name       string
		recs       func(t *testing.T) []*kgo.Record
		status     string
		file       string
		duplicates int
	}{
		{"injected", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{ev(t, "1", record.ActionFileInjected, "a.csv", t0)}
		}, storetype.BatchInjected, "a.csv", 0},
		{"duplicate keeps the injected original", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{ev(t, "1", record.ActionFileInjected, "a.csv", t0), ev(t, "2", record.ActionFileDuplicate, "copy.csv", t0+1), ev(t, "3", record.ActionFileDuplicate, "copy2.csv", t0+2)}
		}, storetype.BatchInjected, "a.csv", 2},
		{"duplicate seen before its original", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{ev(t, "2", record.ActionFileDuplicate, "copy.csv", t0+1), ev(t, "1", record.ActionFileInjected, "a.csv", t0)}
		}, storetype.BatchInjected, "a.csv", 1},
		{"rejection does not undo an injection", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{ev(t, "1", record.ActionFileInjected, "a.csv", t0), ev(t, "2", record.ActionFileRejected, "b.csv", t0+1)}
		}, storetype.BatchInjected, "a.csv", 0},
		{"injection after a rejection", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{ev(t, "1", record.ActionFileRejected, "a.csv", t0), ev(t, "2", record.ActionFileInjected, "b.csv", t0+1)}
		}, storetype.BatchInjected, "b.csv", 0},
		{"same event twice counts once", func(t *testing.T) []*kgo.Record {
			return []*kgo.Record{ev(t, "1", record.ActionFileInjected, "a.csv", t0), ev(t, "2", record.ActionFileDuplicate, "c.csv", t0+1), ev(t, "2", record.ActionFileDuplicate, "c.csv", t0+1)}
		}, storetype.BatchInjected, "a.csv", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t, tempDB(t))
			apply(t, st, sequence(tt.recs(t)...)...)
			b, err := st.BatchByID(context.Background(), "b")
			if err != nil {
				t.Fatal(err)
			}
			if b.Status != tt.status || b.File != tt.file || b.Duplicates != tt.duplicates {
				t.Errorf("batch = %s %s %d duplicates, want %s %s %d", b.Status, b.File, b.Duplicates, tt.status, tt.file, tt.duplicates)
			}
			if b.FirstSeen.UnixMilli() != t0 {
				t.Errorf("first seen = %v, want the earliest event", b.FirstSeen)
			}
		})
	}
}

func TestApplyIgnoresRecordsAlreadyApplied(t *testing.T) {
	st := openStore(t, tempDB(t))
	def := task.Definition{Host: "h", Name: "n", Topic: "t", Start: task.Ptr(t0)}
	recs := sequence(
		stateRec(t, 0, "h/n", &record.State{Definition: def, Anchor: t0, NextFire: t0, UpdatedAt: t0}, ""),
		stateRec(t, 0, "h/n", nil, record.EndCompleted),
	)
	apply(t, st, recs...)
	// Delivered again (a consumer reset, a replayed batch): were the
	// first record applied again, the ended task would come back to life.
	apply(t, st, recs[0])
	got, err := st.TaskByKey(context.Background(), "h/n")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != storetype.TaskCompleted || got.NextFire != nil {
		t.Errorf("task = %s next %v, want completed with no next fire", got.Status, got.NextFire)
	}
	offsets, err := st.Offsets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := offsets[testTopics.State][0]; n != 2 {
		t.Errorf("stored offset = %d, want 2", n)
	}
}

func TestApplyStateEnds(t *testing.T) {
	st := openStore(t, tempDB(t))
	def := task.Definition{Host: "h", Name: "a/b", Topic: "t", Cron: "0 2 * * *", Timezone: "Europe/Paris"}
	apply(t, st, sequence(
		stateRec(t, 0, "h/a/b", &record.State{Definition: def, Anchor: t0, NextFire: t0 + 7_200_000, FireCount: 3, UpdatedAt: t0}, ""),
		stateRec(t, 0, "h/a/b", nil, record.EndDeleted),
		// A tombstone for a task never seen (its state compacted away).
		stateRec(t, 1, "h/gone", nil, record.EndCompleted),
		// No reason given.
		stateRec(t, 2, "h/nowhy", nil, ""),
		// The engine's checkpoint, tombstone or not.
		stateRec(t, 2, "#partition-2", nil, ""),
	)...)
	ctx := context.Background()
	for key, want := range map[string]string{"h/a/b": "deleted", "h/gone": "completed", "h/nowhy": "deleted"} {
		got, err := st.TaskByKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want || got.NextFire != nil {
			t.Errorf("%s = %s next %v, want %s with no next fire", key, got.Status, got.NextFire, want)
		}
	}
	ab, _ := st.TaskByKey(ctx, "h/a/b")
	if ab.Host != "h" || ab.Name != "a/b" || ab.FireCount != 3 || ab.Schedule != "cron 0 2 * * * (Europe/Paris)" {
		t.Errorf("deleted task lost its last state: %+v", ab)
	}
	if _, err := st.TaskByKey(ctx, "#partition-2"); !errors.Is(err, storetype.ErrNotFound) {
		t.Errorf("checkpoint stored as a task: %v", err)
	}
}

func TestApplyFollowsAFileFromArrivalToBatch(t *testing.T) {
	ar := &record.Arrival{ID: record.ArrivalID("/in", "jobs.csv"), File: "jobs.csv", Folder: "/in"}
	event := func(action string, at int64, detail string) record.Audit {
		return record.Audit{ID: action + string(rune('a'+at-t0)), At: at, Actor: "node-1", Action: action, Object: "jobs.csv", Detail: detail, Arrival: ar}
	}
	batch := func(id string, at int64) record.Audit {
		return record.Audit{ID: "batch" + id, At: at, Actor: "watcher", Action: record.ActionFileInjected, Object: "jobs.csv",
			Batch: &record.Batch{ID: id, File: "jobs.csv", Folder: "/in", Rows: 1, Arrival: ar.ID}}
	}
	again := record.Audit{ID: "again", At: t0 + 4, Actor: "watcher", Action: record.ActionFileDuplicate, Object: "jobs.csv",
		Detail: "same content as a file injected before; nothing injected", Batch: &record.Batch{ID: "b0", File: "jobs.csv", Folder: "/in", Arrival: ar.ID}}
	tooLarge := record.Audit{ID: "large", At: t0 + 5, Actor: "watcher", Action: record.ActionFileRejected, Object: "jobs.csv",
		Detail: "file is 2.0 GiB, over the size limit", Batch: &record.Batch{File: "jobs.csv", Folder: "/in", Arrival: ar.ID}}
	tests := []struct {
		name   string
		events []record.Audit
		want   string // the arrival's status; "" when there is none
		detail string
	}{
		{"seen", []record.Audit{event(record.ActionFileReceived, t0, "")}, "received", ""},
		{"taken", []record.Audit{event(record.ActionFileReceived, t0, ""), event(record.ActionFileConverting, t0+1, "")}, "converting", ""},
		{"injected", []record.Audit{event(record.ActionFileReceived, t0, ""), event(record.ActionFileConverting, t0+1, ""), batch("b1", t0+2)}, "", ""},
		{"failed", []record.Audit{event(record.ActionFileConverting, t0+1, ""), event(record.ActionFileFailed, t0+2, "no converter for jobs.pdf")}, "failed", "no converter for jobs.pdf"},
		{"rejected unread", []record.Audit{event(record.ActionFileConverting, t0+1, ""), tooLarge}, "failed", "file is 2.0 GiB, over the size limit"},
		{"withdrawn", []record.Audit{event(record.ActionFileReceived, t0, ""), event(record.ActionFileWithdrawn, t0+1, "")}, "", ""},
		{"withdrawn by a second watcher while converting", []record.Audit{
			event(record.ActionFileConverting, t0+1, ""), event(record.ActionFileWithdrawn, t0+2, ""),
		}, "converting", ""},
		{"received late from a second watcher", []record.Audit{
			event(record.ActionFileConverting, t0+1, ""), event(record.ActionFileReceived, t0+2, ""),
		}, "converting", ""},
		{"a duplicate", []record.Audit{event(record.ActionFileReceived, t0, ""), event(record.ActionFileConverting, t0+1, ""), again},
			"duplicate", "same content as a file injected before; nothing injected"},
		{"a duplicate's name dropped again", []record.Audit{event(record.ActionFileConverting, t0+1, ""), again, event(record.ActionFileReceived, t0+5, "")},
			"received", ""},
		{"dropped again after a failure", []record.Audit{
			event(record.ActionFileFailed, t0+1, "unreadable"), event(record.ActionFileReceived, t0+3, ""),
		}, "received", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t, tempDB(t))
			var recs []*kgo.Record
			for _, ev := range tt.events {
				recs = append(recs, auditRec(t, 0, ev))
			}
			for _, r := range sequence(recs...) {
				apply(t, st, r)
			}
			got, err := st.RecentArrivals(context.Background(), 10)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("arrivals = %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Status != tt.want || got[0].Detail != tt.detail || got[0].File != "jobs.csv" || got[0].Folder != "/in" {
				t.Fatalf("arrivals = %+v, want one %s (%q)", got, tt.want, tt.detail)
			}
			// Only a duplicate names the batch it repeats.
			if (tt.want == storetype.ArrivalDuplicate) != (got[0].Batch == "b0") {
				t.Errorf("arrival %s names batch %q", got[0].Status, got[0].Batch)
			}
		})
	}
}

// TestEachAuditReadsEveryEventAcrossChunks stores more events than one
// chunk holds, many in the same millisecond, and reads them back whole, in
// order, with and without a filter.
func TestEachAuditReadsEveryEventAcrossChunks(t *testing.T) {
	st := openStore(t, tempDB(t))
	const n = 2*exportChunk + 321
	var recs []*kgo.Record
	for i := range n {
		actor := "watcher"
		if i%3 == 0 {
			actor = "api"
		}
		recs = append(recs, auditRec(t, int32(i%3), record.Audit{ID: fmt.Sprintf("e%05d", i), At: t0 + int64(i/500), Actor: actor,
			Action: record.ActionFileReceived, Object: "f", Outcome: record.OutcomeOK}))
	}
	apply(t, st, sequence(recs...)...)
	for _, tc := range []struct {
		name   string
		filter storetype.AuditFilter
		want   int
	}{
		{"all", storetype.AuditFilter{}, n},
		{"one actor", storetype.AuditFilter{Actor: "api"}, (n + 2) / 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]bool{}
			var last time.Time
			err := st.EachAudit(context.Background(), tc.filter, func(a storetype.AuditEvent) error {
				if seen[a.ID] {
					t.Errorf("%s read twice", a.ID)
				}
				if a.At.Before(last) {
					t.Errorf("%s at %v after one at %v", a.ID, a.At, last)
				}
				seen[a.ID], last = true, a.At
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != tc.want {
				t.Errorf("read %d events, want %d", len(seen), tc.want)
			}
		})
	}
}
