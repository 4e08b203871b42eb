package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// BenchmarkDashboardQueries times what the dashboard, a file's page and a
// task's page ask the store on every load and live update, over 400,000
// recorded executions of one file's 5,000 tasks.
func BenchmarkDashboardQueries(b *testing.B) {
	st, err := Open(b.TempDir() + "/jobdrop.db")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	start := time.Now().Add(-400_000 * time.Second)
	const n = 400_000
	var recs []*kgo.Record
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second).UnixMilli()
		id := fmt.Sprintf("f%07d", i)
		v, _ := json.Marshal(record.Execution{FireID: id, Host: "acme", Name: fmt.Sprintf("job-%04d", i%5000), Topic: "jobs",
			ScheduledAt: at, FiredAt: at + 3, Batch: "b1"})
		recs = append(recs, &kgo.Record{Topic: testTopics.Executions, Key: []byte(id), Value: v, Offset: int64(i)})
		if i%4 == 0 {
			v, _ := json.Marshal(record.Status{FireID: id, Status: record.StatusFailed, At: at + 50})
			recs = append(recs, &kgo.Record{Topic: testTopics.Status, Key: []byte(id), Value: v, Offset: int64(i / 4)})
		}
		if len(recs) >= 10_000 || i == n-1 {
			if _, err := st.Apply(ctx, testTopics, recs); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	for _, q := range []struct {
		name string
		run  func() error
	}{
		{"activity", func() error { _, err := st.ActivitySince(ctx, time.Now().Add(-time.Hour)); return err }},
		{"summary", func() error { _, err := st.Summary(ctx, time.Now()); return err }},
		{"tasks", func() error {
			_, err := st.Tasks(ctx, storetype.TaskFilter{Status: storetype.TaskActive, Limit: 10})
			return err
		}},
		{"recent-executions", func() error { _, err := st.Executions(ctx, storetype.ExecutionFilter{Limit: 10}); return err }},
		{"file-executions", func() error {
			_, err := st.Executions(ctx, storetype.ExecutionFilter{Batch: "b1", Limit: 50})
			return err
		}},
		{"task-executions", func() error {
			_, err := st.Executions(ctx, storetype.ExecutionFilter{Task: "acme/job-0042", Limit: 50})
			return err
		}},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				if err := q.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
