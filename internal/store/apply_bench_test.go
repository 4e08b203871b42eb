package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
)

// BenchmarkApplyBurst stores what the engine writes for a burst of
// one-shot tasks: for each, its execution record and its state's
// tombstone, in batches of the Recorder's default size. It reports the
// cost per fire, the Recorder's share of a burst's CPU.
func BenchmarkApplyBurst(b *testing.B) {
	const fires = 50_000
	now := time.Now()
	var recs []*kgo.Record
	var off [2]int64
	for i := range fires {
		key := fmt.Sprintf("acme/burst-%07d", i)
		id := fmt.Sprintf("%s@%d", key, now.UnixMilli())
		x, _ := json.Marshal(record.Execution{FireID: id, Host: "acme", Name: key[5:], Topic: "burst",
			Partition: int32(i % 8), Offset: int64(i), ScheduledAt: now.UnixMilli(), FiredAt: now.UnixMilli() + 5, Batch: "b1"})
		recs = append(recs, &kgo.Record{Topic: testTopics.Executions, Key: []byte(id), Value: x, Offset: off[0], Timestamp: now})
		off[0]++
		recs = append(recs, &kgo.Record{Topic: testTopics.State, Key: []byte(key), Offset: off[1], Timestamp: now,
			Headers: []kgo.RecordHeader{{Key: record.HeaderEnd, Value: []byte(record.EndCompleted)}}})
		off[1]++
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		st, err := Open(filepath.Join(b.TempDir(), "jobdrop.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		ctx := context.Background()
		for start := 0; start < len(recs); start += 10_000 {
			if _, err := st.Apply(ctx, testTopics, recs[start:min(start+10_000, len(recs))]); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fires), "ns/fire")
}
