package arrival

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestArrivalAndMove: an arrival's event is keyed by the arrival, a move's
// by the batch (the arrival's name may be a new file's already), and done
// hears the brokers' answer.
func TestArrivalAndMove(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	topics := record.Topics{}.WithDefaults()
	if err := kafka.EnsureTopics(context.Background(), kafkatest.Client(t, brokers), topics, 3, -1); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	n, err := New(Config{ClientOpts: kafka.ClientOpts(brokers, "test"), Topics: topics, Clock: clockwork.NewFakeClockAt(at)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	ctx := context.Background()
	arr := record.Arrival{ID: record.ArrivalID("/in", "jobs.csv"), File: "jobs.csv", Folder: "/in"}
	done := make(chan error, 2)
	n.Arrive(ctx, "node-1", record.ActionFileReceived, record.OutcomeOK, "", arr, func(err error) { done <- err })
	b := record.Batch{ID: "abc", File: "jobs.csv", Folder: "/in", Arrival: arr.ID, Rows: 3}
	n.Moved(ctx, "node-1", b, "/in/archive/jobs.csv", func(err error) { done <- err })
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	recs := kafkatest.Drain(t, brokers, topics.Audit)
	events := kafkatest.Decode[record.Audit](t, recs)
	if len(events) != 2 {
		t.Fatalf("%d events, want 2", len(events))
	}
	for i, a := range events {
		switch a.Action {
		case record.ActionFileReceived:
			if string(recs[i].Key) != arr.ID || a.Arrival == nil || a.Object != "jobs.csv" || a.At != at.UnixMilli() {
				t.Errorf("arrival event %+v keyed %s", a, recs[i].Key)
			}
		case record.ActionFileMoved:
			if string(recs[i].Key) != "abc" || a.Batch == nil || a.Batch.Arrival != "" || a.Object != "/in/archive/jobs.csv" {
				t.Errorf("move event %+v keyed %s", a, recs[i].Key)
			}
		default:
			t.Errorf("unexpected event %+v", a)
		}
	}
}
