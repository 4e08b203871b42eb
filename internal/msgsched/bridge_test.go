package msgsched

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// TestBridgeTakesTheLatestVersionOfATopicReadFromBehind starts the bridge
// on a schedule topic another scheduler used: a schedule it already fired
// and tombstoned, a schedule changed since, and many records in between,
// each in a batch of its own and read one at a time. The fired schedule
// must not become a task (it would fire again), and the changed one must
// become a task only in its latest version.
func TestBridgeTakesTheLatestVersionOfATopicReadFromBehind(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	topics := record.Topics{}.WithDefaults()
	ctx := context.Background()
	admin := kafkatest.Client(t, brokers)
	if err := kafka.EnsureTopics(ctx, admin, topics, 1, -1); err != nil {
		t.Fatal(err)
	}
	if err := kafka.NewTargetTopics(admin, 1, -1, true).Ensure(ctx, "schedules"); err != nil {
		t.Fatal(err)
	}
	prod := kafkatest.Client(t, brokers)
	arrived := time.Now().Add(-time.Hour)
	due := time.Now().Add(-time.Minute).Unix() // due while the other scheduler ran
	send := func(r *kgo.Record) {
		t.Helper()
		r.Topic, r.Timestamp = "schedules", arrived
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sched := func(key, value string, epoch int64) *kgo.Record {
		return &kgo.Record{Key: []byte(key), Value: []byte(value), Headers: []kgo.RecordHeader{
			{Key: record.HeaderScheduleEpoch, Value: []byte(strconv.FormatInt(epoch, 10))},
			{Key: record.HeaderScheduleTargetTopic, Value: []byte("out")},
			{Key: record.HeaderScheduleTargetKey, Value: []byte(key)},
		}}
	}
	send(sched("fired", "v1", due))
	send(sched("changed", "v1", due+7200))
	for i := range 20 {
		send(sched("other-"+strconv.Itoa(i), "v1", due+7200))
	}
	send(&kgo.Record{Key: []byte("fired")}) // the other scheduler's tombstone once it fired
	send(sched("changed", "v2", due+3600))
	// A version written after jobdrop fired the one before it, whose
	// tombstone comes after it in the topic: a schedule of its own.
	send(sched("again", "v1", due))
	send(sched("again", "v2", due+3600))
	send(&kgo.Record{Key: []byte("again"), Headers: []kgo.RecordHeader{{Key: record.HeaderFireID, Value: []byte("fired-v1")}}})

	// Five records a poll: the tombstone and the new version come polls
	// after the records they replace.
	b := New(Config{ClientOpts: kafka.ClientOpts(brokers, "test"), MaxPollRecords: 5,
		Topics: []string{"schedules"}, Records: topics, Node: "test", SessionTimeout: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { b.Run(rctx); close(done) }()
	defer func() { cancel(); <-done }()

	commands := kafkatest.Collect(t, brokers, topics.Input)
	kafkatest.Eventually(t, 60*time.Second, "the command of the last record", func() bool {
		for _, r := range commands.Records() {
			var d task.Definition
			if json.Unmarshal(r.Value, &d) == nil && d.Name == "again" && d.Message != nil && string(d.Message.Value) == "v2" {
				return true
			}
		}
		return false
	})
	cancel()
	<-done
	got := map[string][]string{}
	for _, r := range kafkatest.Drain(t, brokers, topics.Input) {
		var d task.Definition
		if err := json.Unmarshal(r.Value, &d); err != nil {
			t.Fatal(err)
		}
		what := string(d.Action)
		if d.Message != nil {
			what += " " + string(d.Message.Value)
		}
		got[d.Name] = append(got[d.Name], what)
	}
	if w := []string{"DELETE"}; !equal(got["fired"], w) {
		t.Errorf("fired: %v, want only %v: its first version would fire again", got["fired"], w)
	}
	if w := []string{"INSERT v2"}; !equal(got["changed"], w) {
		t.Errorf("changed: %v, want only %v", got["changed"], w)
	}
	if w := []string{"INSERT v2"}; !equal(got["again"], w) {
		t.Errorf("again: %v, want only %v: jobdrop's own tombstone of v1 replaces no later version", got["again"], w)
	}
	if len(got) != 23 {
		t.Errorf("commands for %d keys, want 23", len(got))
	}
}

func equal(a, b []string) bool { return slices.Equal(a, b) }
