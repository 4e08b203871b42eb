package scheduler

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// TestMessageTaskFiresItsRecordAndTombstonesTheSchedule fires a task that
// came from a message schedule: the record it carries reaches its target
// topic as given, with the schedule's headers and kafka-message-scheduler's
// added; in the same transaction the schedule gets its tombstone on the
// partition it was read from, and the history topic a copy. A restart
// before the fire (the task restored from the state topic) changes none
// of it.
func TestMessageTaskFiresItsRecordAndTombstonesTheSchedule(t *testing.T) {
	h := newHarness(t)
	cl := kafkatest.Client(t, h.brokers)
	if err := kafka.NewTargetTopics(cl, 3, -1, true).Ensure(context.Background(), "schedules"); err != nil {
		t.Fatal(err)
	}
	t0 := h.clock.Now()
	target, history := h.watch("online-videos"), h.watch("history")
	tombstones := kafkatest.Collect(t, h.brokers, "schedules")
	tune := func(c *Config) { c.ScheduleTopics = []string{"schedules"} }
	e := h.startWith(tune)
	arrived := t0.Add(-time.Hour)
	d := task.Definition{Host: "schedules", Name: "vid1-online", Action: task.Insert, Topic: "online-videos",
		Start: task.Ptr(t0.Add(2 * time.Second).UnixMilli()),
		Message: &task.Message{Key: []byte("vid1"), Value: []byte(`"video 1"`), History: "history",
			Headers: []task.Header{{Key: "customer-header", Value: []byte("dummy")}},
			From:    task.Origin{Topic: "schedules", Partition: 2, Key: []byte("vid1-online"), Timestamp: arrived.UnixMilli()}}}
	h.send(d)
	kafkatest.Eventually(t, 30*time.Second, "the task active", func() bool { return e.ActiveTasks() == 1 })
	h.advanceTo(t0.Add(time.Second))
	e.stop()
	e = h.startWith(tune)
	kafkatest.Eventually(t, 30*time.Second, "the task restored", func() bool { return e.ActiveTasks() == 1 })
	if target.Count() != 0 {
		t.Fatalf("%d records fired before the time", target.Count())
	}
	h.advanceTo(t0.Add(2 * time.Second))
	h.waitFired(target, 1)
	h.waitFired(history, 1)
	kafkatest.Eventually(t, 30*time.Second, "the schedule's tombstone", func() bool { return tombstones.Count() == 1 })
	e.stop()

	got := target.Records()[0]
	if string(got.Key) != "vid1" || string(got.Value) != `"video 1"` {
		t.Fatalf("fired key %q value %q, want vid1 \"video 1\"", got.Key, got.Value)
	}
	headers := map[string]string{}
	var order []string
	for _, hd := range got.Headers {
		headers[hd.Key] = string(hd.Value)
		order = append(order, hd.Key)
	}
	fireID := record.FireID("schedules", "vid1-online", *d.Start)
	for k, v := range map[string]string{
		"customer-header":              "dummy",
		record.HeaderScheduleTimestamp: strconv.FormatInt(arrived.Unix(), 10),
		record.HeaderScheduleKey:       "vid1-online",
		record.HeaderScheduleTopic:     "schedules",
		record.HeaderFireID:            fireID,
	} {
		if headers[k] != v {
			t.Errorf("header %s = %q, want %q (headers %v)", k, headers[k], v, order)
		}
	}
	for _, k := range []string{record.HeaderScheduleEpoch, record.HeaderScheduleTargetTopic, record.HeaderScheduleTargetKey} {
		if _, ok := headers[k]; ok {
			t.Errorf("fired record still carries %s", k)
		}
	}
	if h := history.Records()[0]; string(h.Key) != "vid1" || string(h.Value) != `"video 1"` {
		t.Errorf("history copy %q %q", h.Key, h.Value)
	}
	tomb := tombstones.Records()[0]
	if tomb.Partition != 2 || string(tomb.Key) != "vid1-online" || tomb.Value != nil {
		t.Fatalf("tombstone on partition %d key %q value %q, want partition 2, the schedule's key, no value", tomb.Partition, tomb.Key, tomb.Value)
	}
	if len(tomb.Headers) != 1 || tomb.Headers[0].Key != record.HeaderFireID || string(tomb.Headers[0].Value) != fireID {
		t.Fatalf("tombstone headers %v, want the fire id", tomb.Headers)
	}
	// All three in one transaction: the fire and its tombstone are
	// committed together.
	if got.ProducerID != tomb.ProducerID || got.ProducerEpoch != tomb.ProducerEpoch {
		t.Fatalf("fire by producer %d/%d, tombstone by %d/%d", got.ProducerID, got.ProducerEpoch, tomb.ProducerID, tomb.ProducerEpoch)
	}
}

// TestMessageTaskOfAnotherScheduleTopicIsRefusedAlone: a message task
// whose schedule topic this node does not read (its tombstone would go by
// key, not where the schedule is) is refused with the reason, as its own
// fault; the partition's other tasks fire on time.
func TestMessageTaskOfAnotherScheduleTopicIsRefusedAlone(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	target := h.watch("online-videos")
	status := h.watch(h.topics.Status)
	e := h.startWith(func(c *Config) { c.ScheduleTopics = []string{"schedules"} })
	at := t0.Add(time.Second)
	d := task.Definition{Host: "elsewhere", Name: "vid2", Action: task.Insert, Topic: "online-videos", Start: task.Ptr(at.UnixMilli()),
		Message: &task.Message{Key: []byte("vid2"), Value: []byte("v"), From: task.Origin{Topic: "elsewhere", Partition: 0, Key: []byte("vid2")}}}
	plain := oneShot("plain", at)
	plain.Topic = "online-videos"
	h.send(d, plain)
	kafkatest.Eventually(t, 30*time.Second, "2 tasks active", func() bool { return e.ActiveTasks() == 2 })
	h.advanceTo(at)
	h.waitFired(target, 1)
	kafkatest.Eventually(t, 30*time.Second, "the refusal recorded", func() bool {
		for _, s := range kafkatest.Decode[record.Status](t, status.Records()) {
			if s.Status == record.StatusFailed && strings.Contains(s.Message, "schedule topic elsewhere is not in message_scheduler.topics") {
				return true
			}
		}
		return false
	})
	e.stop()
	for _, r := range target.Records() {
		if name := headerValue(r, record.HeaderFireName); name != "plain" {
			t.Errorf("fired %s, want only plain", name)
		}
	}
}
