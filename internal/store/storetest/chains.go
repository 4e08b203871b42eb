package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/task"
)

// Chains is a night's chain held by a failure, as the console would find
// it. File etl.csv (batch ChainsBatch) defines the host etl's chain:
//
//	extract ──▶ transform ──▶ load ──▶ report ◀── crm/export
//	                     └──▶ cleanup (on failure)
//
// extract (3 attempts a run) failed once and succeeded on its second
// attempt (ChainsExtract1, ChainsExtract2); that run released transform
// (ChainsTransform), which failed; its failure released cleanup
// (ChainsCleanup, which succeeded) and holds load, which waits for
// success. report follows load and crm/export, a task of another host
// and file (crm.csv) whose latest run is overdue (ChainsExport): report
// has not run yet, and is late. crm/export is followed by report only.
type Chains struct {
	Now time.Time
	// Topics are the topic names to apply records of. Defaults to the
	// default names.
	Topics record.Topics
}

// What Chains holds.
const (
	ChainsBatch    = "e7c0000000000000000000000000000000000000000000000000000000000001"
	ChainsCRMBatch = "e7c0000000000000000000000000000000000000000000000000000000000002"

	ChainsExtract1  = "ex-run1-attempt1"
	ChainsExtract2  = "ex-run1-attempt2"
	ChainsTransform = "tr-run1"
	ChainsCleanup   = "cl-run1"
	ChainsExport    = "cx-run1"

	// ChainsHeld is why load is held.
	ChainsHeld = "etl/transform's run " + ChainsTransform + " failed"
)

// Fill applies the records of c to st.
func (c Chains) Fill(ctx context.Context, st *store.Store) error {
	topics := c.Topics.WithDefaults()
	now := c.Now
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	next := map[string]int64{}
	var recs []*kgo.Record
	add := func(topic, key string, v any) {
		b, _ := json.Marshal(v)
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: b, Offset: next[topic], Timestamp: now})
		next[topic]++
	}
	state := func(d task.Definition, batch, file string, nextFire int64, chain *record.Chain) {
		d.Action, d.Topic = task.Insert, "jobs"
		add(topics.State, d.Key(), record.State{Definition: d, Anchor: ms(-48 * time.Hour), NextFire: nextFire,
			Source: record.Source{Batch: batch, File: file}, UpdatedAt: ms(-time.Hour), Chain: chain})
	}
	exec := func(ex record.Execution, at time.Duration, status string) {
		ex.Topic, ex.ScheduledAt, ex.FiredAt, ex.Batch = "jobs", ms(at), ms(at), ChainsBatch
		if ex.Host == "crm" {
			ex.Batch = ChainsCRMBatch
		}
		add(topics.Executions, ex.FireID, ex)
		if status != "" {
			add(topics.Status, ex.FireID, record.Status{FireID: ex.FireID, Status: status, Message: "exit " + status, At: ms(at + 10*time.Minute)})
		}
	}
	for _, f := range []struct{ batch, file string }{{ChainsBatch, "etl.csv"}, {ChainsCRMBatch, "crm.csv"}} {
		ev := record.NewAudit(now.Add(-48*time.Hour), "watcher", record.ActionFileInjected, f.file, record.OutcomeOK).Keyed(f.file)
		ev.Batch = &record.Batch{ID: f.batch, File: f.file, Folder: "inbox", Rows: 3}
		add(topics.Audit, "watcher", ev)
	}
	state(task.Definition{Host: "etl", Name: "extract", Cron: "0 2 * * *", Retry: &task.Retry{Attempts: 3, Delay: 60_000}},
		ChainsBatch, "etl.csv", ms(22*time.Hour), nil)
	state(task.Definition{Host: "etl", Name: "transform", After: []string{"extract"}}, ChainsBatch, "etl.csv", 0,
		&record.Chain{Preds: []record.PredRun{{Key: "etl/extract", Run: ChainsExtract1, Fire: ChainsExtract2, Status: record.StatusSuccess, At: ms(-100 * time.Minute)}}})
	state(task.Definition{Host: "etl", Name: "load", After: []string{"transform"}}, ChainsBatch, "etl.csv", 0,
		&record.Chain{Held: ChainsHeld, Preds: []record.PredRun{{Key: "etl/transform", Run: ChainsTransform, Fire: ChainsTransform,
			Status: record.StatusFailed, At: ms(-80 * time.Minute), Fresh: true}}})
	state(task.Definition{Host: "etl", Name: "cleanup", After: []string{"transform"}, On: task.OnFailure}, ChainsBatch, "etl.csv", 0,
		&record.Chain{Preds: []record.PredRun{{Key: "etl/transform", Run: ChainsTransform, Fire: ChainsTransform, Status: record.StatusFailed, At: ms(-80 * time.Minute)}}})
	state(task.Definition{Host: "etl", Name: "report", After: []string{"load", "crm/export"}, Delay: 600_000}, ChainsBatch, "etl.csv", 0, &record.Chain{})
	state(task.Definition{Host: "crm", Name: "export", Cron: "30 2 * * *", Timeout: 900_000}, ChainsCRMBatch, "crm.csv", ms(23*time.Hour), nil)

	exec(record.Execution{FireID: ChainsExtract1, Host: "etl", Name: "extract"}, -2*time.Hour, record.StatusFailed)
	exec(record.Execution{FireID: ChainsExtract2, Host: "etl", Name: "extract", Attempt: 2, Run: ChainsExtract1}, -110*time.Minute, record.StatusSuccess)
	exec(record.Execution{FireID: ChainsTransform, Host: "etl", Name: "transform", After: []string{ChainsExtract1}}, -90*time.Minute, record.StatusFailed)
	exec(record.Execution{FireID: ChainsCleanup, Host: "etl", Name: "cleanup", After: []string{ChainsTransform}}, -79*time.Minute, record.StatusSuccess)
	exec(record.Execution{FireID: ChainsExport, Host: "crm", Name: "export", Timeout: 900_000}, -time.Hour, "")

	held := record.NewAudit(now.Add(-80*time.Minute), "scheduler", record.ActionChainHeld, "etl/load", record.OutcomeOK).Keyed("etl/load:" + ChainsTransform)
	held.Detail = ChainsHeld
	add(topics.Audit, "scheduler", held)
	if _, err := st.Apply(ctx, topics, recs); err != nil {
		return fmt.Errorf("fill chains: %w", err)
	}
	return nil
}
