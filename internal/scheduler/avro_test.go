package scheduler

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/jobdrop/jobdrop/internal/avro"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/schemaregistry"
	"github.com/jobdrop/jobdrop/task"
)

// registries are the two registries light-scheduler's producers register
// through: for each, the pkg/sr client a producer uses over HTTP and the
// one the engine uses.
var registries = map[string]func(t *testing.T, brokers []string) (producer, engine *sr.Client){
	"srfake": func(t *testing.T, _ []string) (*sr.Client, *sr.Client) {
		reg := srfake.New()
		t.Cleanup(reg.Close)
		cl, err := sr.NewClient(sr.URLs(reg.URL()))
		if err != nil {
			t.Fatal(err)
		}
		return cl, cl
	},
	"embedded": func(t *testing.T, brokers []string) (*sr.Client, *sr.Client) {
		reg, err := schemaregistry.Open(context.Background(), schemaregistry.Config{ClientOpts: kafka.ClientOpts(brokers, "registry")},
			slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(reg.Close)
		srv := httptest.NewServer(reg.Handler())
		t.Cleanup(srv.Close)
		producer, err := sr.NewClient(sr.URLs(srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		engine, err := reg.Client()
		if err != nil {
			t.Fatal(err)
		}
		return producer, engine
	},
}

// TestAvroCommands drives the engine with light-scheduler's Avro
// commands, a JSON one and a record of an unknown schema id, all on one
// partition, and reads the fired events back as a light-scheduler
// consumer does: Avro tasks fire Avro, with the registry's schema, across
// a restart; the bad record is audited and skipped.
func TestAvroCommands(t *testing.T) {
	for name, registry := range registries {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t)
			producerSR, engineSR := registry(t, h.brokers)
			producer := avro.New(producerSR)
			tune := func(c *Config) { c.Avro = avro.New(engineSR) }
			a := h.startWith(tune)
			jobs, audit := h.watch("jobs"), h.watch(h.topics.Audit)

			now := h.clock.Now()
			market := every("market", now.Add(time.Minute), task.Minutes, 1)
			market.Data = map[string]string{"question": "Hello", "owner": "market"}
			late := oneShot("late", now.Add(2*time.Minute))
			late.Data = nil
			plain := oneShot("plain", now.Add(time.Minute))
			rec := func(d task.Definition) *kgo.Record {
				k, v, err := producer.Encode(ctx, h.topics.Input, &d)
				if err != nil {
					t.Fatal(err)
				}
				return &kgo.Record{Key: k, Value: v}
			}
			unknown := rec(late)
			unknown.Value = append([]byte{0, 0, 0, 0x27, 0x0f}, unknown.Value[5:]...) // schema id 9999
			jv, _ := json.Marshal(plain)
			recs := []*kgo.Record{rec(market), unknown, {Key: []byte(plain.Key()), Value: jv}, rec(late)}
			cl := kafkatest.Client(t, h.brokers, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			for _, r := range recs {
				r.Topic, r.Partition, r.Timestamp = h.topics.Input, 1, now
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			kafkatest.Eventually(t, 30*time.Second, "3 tasks active", func() bool { return a.ActiveTasks() == 3 })
			h.advanceTo(now.Add(time.Minute))
			h.waitFired(jobs, 2)
			// A restart restores the tasks from the state topic: the Avro
			// ones still fire Avro.
			a.stop()
			a = h.startWith(tune)
			kafkatest.Eventually(t, 30*time.Second, "2 tasks restored", func() bool { return a.ActiveTasks() == 2 })
			h.advanceTo(now.Add(2 * time.Minute))
			h.waitFired(jobs, 4)

			fired := map[string][]int64{}
			for _, r := range jobs.Records() {
				headers := map[string]string{}
				for _, hd := range r.Headers {
					headers[hd.Key] = string(hd.Value)
				}
				scheduled, _ := strconv.ParseInt(headers[record.HeaderFireScheduled], 10, 64)
				name := headers[record.HeaderFireName]
				if headers[record.HeaderFireHost] != "acme" || headers[record.HeaderFireID] != record.FireID("acme", name, scheduled) {
					t.Errorf("headers %v", headers)
				}
				fired[name] = append(fired[name], scheduled)
				if name == "plain" {
					if avro.Framed(r.Value) || string(r.Key) != "acme/plain" {
						t.Errorf("the JSON task fired %q %q", r.Key, r.Value)
					}
					continue
				}
				d, key, err := avro.New(producerSR).Decode(ctx, r.Key, r.Value)
				want := market
				if name == "late" {
					want = late
				}
				if err != nil || key != "acme/"+name || d.Key() != key || d.Start == nil || *d.Start != scheduled || d.Topic != "jobs" ||
					!maps.Equal(d.Data, want.Data) || (d.Frequency == nil) != (want.Frequency == nil) || d.Action != task.Insert {
					t.Errorf("%s fired %q %+v (start %v), %v; want start %d and %+v", name, key, d, d.Start, err, scheduled, want)
				}
			}
			m := now.Add(time.Minute).UnixMilli()
			if want := map[string][]int64{"market": {m, m + 60_000}, "plain": {m}, "late": {m + 60_000}}; !maps.EqualFunc(fired, want, func(a, b []int64) bool {
				return len(a) == len(b) && (len(a) == 0 || a[0] == b[0] && a[len(a)-1] == b[len(b)-1])
			}) {
				t.Errorf("fired %v, want %v", fired, want)
			}
			found := false
			for _, ev := range kafkatest.Decode[record.Audit](t, audit.Records()) {
				if ev.Action == record.ActionTaskRejected {
					found = true
					for _, want := range []string{"topic " + h.topics.Input, "partition 1", "offset 1", "schema id 9999", "unknown schema id"} {
						if !strings.Contains(ev.Detail, want) {
							t.Errorf("rejection %q does not say %q", ev.Detail, want)
						}
					}
					if ev.Object != "acme/late" {
						t.Errorf("rejection of %q, want acme/late", ev.Object)
					}
				}
			}
			if !found {
				t.Error("the record of an unknown schema id was not audited")
			}
		})
	}
}

// An Avro command with no registry configured is refused by name, and
// the partition goes on.
func TestAvroWithoutRegistry(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	a := h.start()
	reg := srfake.New()
	defer reg.Close()
	cl, _ := sr.NewClient(sr.URLs(reg.URL()))
	d := oneShot("a", h.clock.Now().Add(time.Hour))
	k, v, err := avro.New(cl).Encode(ctx, h.topics.Input, &d)
	if err != nil {
		t.Fatal(err)
	}
	audit := h.watch(h.topics.Audit)
	p := kafkatest.Client(t, h.brokers)
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: h.topics.Input, Key: k, Value: v}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	h.send(oneShot("b", h.clock.Now().Add(time.Hour)))
	kafkatest.Eventually(t, 30*time.Second, "the JSON task", func() bool { return a.ActiveTasks() == 1 })
	kafkatest.Eventually(t, 30*time.Second, "the refusal audited", func() bool {
		for _, ev := range kafkatest.Decode[record.Audit](t, audit.Records()) {
			if ev.Action == record.ActionTaskRejected && strings.Contains(ev.Detail, errNoRegistry.Error()) {
				return true
			}
		}
		return false
	})
}

// TestAvroTaskTakesJobdropsOwnCommands creates a task with an Avro command
// keyed, as light-scheduler's producers key it, by its framed
// TaskDefinitionKey, which picks another input partition than the task's
// key host/name does; then deletes it with a JSON command keyed host/name,
// as the console and the API send it. The delete must reach the task: it
// fires nothing, and its state lives on one partition only.
func TestAvroTaskTakesJobdropsOwnCommands(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	producerSR, engineSR := registries["srfake"](t, h.brokers)
	e := h.startWith(func(c *Config) { c.Avro = avro.New(engineSR) })
	jobs, audit := h.watch("jobs"), h.watch(h.topics.Audit)
	now := h.clock.Now()
	cl := kafkatest.Client(t, h.brokers) // the default partitioner: by key
	part := kgo.StickyKeyPartitioner(nil).ForTopic(h.topics.Input)
	var d task.Definition
	var k, v []byte
	for i := 0; ; i++ { // a task whose two keys pick different partitions
		d = every("market-"+strconv.Itoa(i), now.Add(time.Minute), task.Minutes, 1)
		var err error
		if k, v, err = avro.New(producerSR).Encode(ctx, h.topics.Input, &d); err != nil {
			t.Fatal(err)
		}
		if part.Partition(&kgo.Record{Key: k}, partitions) != part.Partition(&kgo.Record{Key: []byte(d.Key())}, partitions) {
			break
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: h.topics.Input, Key: k, Value: v, Timestamp: now}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 30*time.Second, "the Avro task active", func() bool { return e.ActiveTasks() == 1 })
	del := task.Definition{Host: d.Host, Name: d.Name, Action: task.Delete}
	h.send(del)
	kafkatest.Eventually(t, 30*time.Second, "the task deleted", func() bool { return e.ActiveTasks() == 0 })
	h.advanceTo(now.Add(2 * time.Minute))
	e.stop()
	if n := jobs.Count(); n != 0 {
		t.Fatalf("%d events fired by a deleted task", n)
	}
	want := part.Partition(&kgo.Record{Key: []byte(d.Key())}, partitions)
	for _, r := range kafkatest.Drain(t, h.brokers, h.topics.State) {
		if string(r.Key) == d.Key() && int(r.Partition) != want {
			t.Errorf("state of %s on partition %d, want only %d (its key's)", d.Key(), r.Partition, want)
		}
	}
	deleted := false
	for _, ev := range kafkatest.Decode[record.Audit](t, audit.Records()) {
		deleted = deleted || ev.Action == record.ActionTaskDeleted && ev.Object == d.Key() && ev.Outcome == record.OutcomeOK
	}
	if !deleted {
		t.Error("no task.deleted ok in the audit trail")
	}
}
