package command

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

func newWriter(t *testing.T) (*Writer, []string, record.Topics) {
	t.Helper()
	brokers := kafkatest.Cluster(t)
	topics := record.Topics{}.WithDefaults()
	if err := kafka.EnsureTopics(context.Background(), kafkatest.Client(t, brokers), topics, 3, -1); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w, err := New(Config{ClientOpts: kafka.ClientOpts(brokers, "test"), TransactionalID: "test-commands", Topics: topics,
		Clock: clockwork.NewFakeClockAt(at)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, brokers, topics
}

func header(t *testing.T, headers map[string]string, key string) string {
	t.Helper()
	v, ok := headers[key]
	if !ok {
		t.Fatalf("no header %s in %v", key, headers)
	}
	return v
}

// TestWritesCommandsAndReports: commands carry their actor and the
// writer's clock, a trigger's fire id follows from where it was written,
// and a report comes with its audit event.
func TestWritesCommandsAndReports(t *testing.T) {
	w, brokers, topics := newWriter(t)
	ctx := context.Background()
	d := task.Definition{Host: "acme", Name: "a", Action: task.Insert, Topic: "jobs"}
	if err := w.Send(ctx, "alice", d); err != nil {
		t.Fatal(err)
	}
	id, err := w.Trigger(ctx, "bob", "acme", "a")
	if err != nil {
		t.Fatal(err)
	}
	cmds := kafkatest.Drain(t, brokers, topics.Input)
	if len(cmds) != 2 {
		t.Fatalf("%d commands, want 2", len(cmds))
	}
	byActor := map[string]string{}
	for _, rec := range cmds {
		h := map[string]string{}
		for _, x := range rec.Headers {
			h[x.Key] = string(x.Value)
		}
		var got task.Definition
		if err := json.Unmarshal(rec.Value, &got); err != nil {
			t.Fatal(err)
		}
		byActor[header(t, h, record.HeaderActor)] = string(got.Action)
		if string(rec.Key) != "acme/a" || !rec.Timestamp.Equal(w.cfg.Clock.Now()) {
			t.Errorf("command %s at %s, want acme/a at %s", rec.Key, rec.Timestamp, w.cfg.Clock.Now())
		}
		if got.Action == task.Trigger {
			if want := record.TriggerFireID("acme", "a", rec.Partition, rec.Offset); id != want {
				t.Errorf("trigger's fire id %q, want %q", id, want)
			}
		}
	}
	if byActor["alice"] != string(task.Insert) || byActor["bob"] != string(task.Trigger) {
		t.Errorf("commands by actor %v", byActor)
	}

	s := record.Status{FireID: "fire-1", Status: record.StatusRunning, Worker: "w1", Message: "started"}
	if err := w.ReportStatus(ctx, "w1", s); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendLogs(ctx, record.Status{FireID: "fire-1", Worker: "w1", Logs: []record.LogLine{{Message: "line"}}}); err != nil {
		t.Fatal(err)
	}
	if n := len(kafkatest.Drain(t, brokers, topics.Status)); n != 2 {
		t.Errorf("%d status records, want the report and the logs", n)
	}
	audits := kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, brokers, topics.Audit))
	if len(audits) != 1 || audits[0].Action != "execution.running" || audits[0].Object != "fire-1" || audits[0].Detail != "started" {
		t.Errorf("audit events %+v, want the report's alone (logs are not audited)", audits)
	}
}

// TestSendPutsLinksBeforeCommands: a chain sent in one call is one
// transaction whose link records, keyed by each predecessor, come before
// every command in each partition; a DELETE has none.
func TestSendPutsLinksBeforeCommands(t *testing.T) {
	w, brokers, topics := newWriter(t)
	def := func(name string, after ...string) task.Definition {
		d := task.Definition{Host: "acme", Name: name, Action: task.Insert, Topic: "jobs", After: after}
		if len(after) == 0 {
			d.Cron = "0 1 * * *"
		}
		return d
	}
	defs := []task.Definition{def("extract"), def("transform", "extract"), def("load", "extract"),
		def("report", "transform", "load", "other/audit"), {Host: "acme", Name: "old", Action: task.Delete, After: []string{"extract"}}}
	if err := w.Send(context.Background(), "alice", defs...); err != nil {
		t.Fatal(err)
	}
	recs := kafkatest.Drain(t, brokers, topics.Input)
	var links, cmds []string
	commandSeen := map[int32]bool{}
	for _, rec := range recs {
		op := ""
		for _, h := range rec.Headers {
			if h.Key == record.HeaderLink {
				op = string(h.Value)
			}
		}
		if op == "" {
			commandSeen[rec.Partition] = true
			cmds = append(cmds, string(rec.Key))
			continue
		}
		var l record.Link
		if err := json.Unmarshal(rec.Value, &l); err != nil {
			t.Fatal(err)
		}
		if commandSeen[rec.Partition] {
			t.Errorf("link %s → %s after a command of partition %d", rec.Key, l.Follower, rec.Partition)
		}
		links = append(links, op+" "+string(rec.Key)+" → "+l.Follower)
	}
	slices.Sort(links)
	slices.Sort(cmds)
	want := []string{"add acme/extract → acme/load", "add acme/extract → acme/transform", "add acme/load → acme/report",
		"add acme/transform → acme/report", "add other/audit → acme/report"}
	if !slices.Equal(links, want) {
		t.Errorf("links %q, want %q", links, want)
	}
	if want := []string{"acme/extract", "acme/load", "acme/old", "acme/report", "acme/transform"}; !slices.Equal(cmds, want) {
		t.Errorf("commands %q, want %q", cmds, want)
	}
}

func TestClosedWriterRefuses(t *testing.T) {
	w, _, _ := newWriter(t)
	w.Close()
	w.Close() // twice is fine
	if err := w.Audit(context.Background(), record.NewAudit(time.Now(), "a", "x", "y", record.OutcomeOK)); err == nil {
		t.Fatal("a closed writer wrote")
	}
}
