package main

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/jobdrop/jobdrop/internal/avro"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// schemaRegistry drives the schema registry the node serves beside its
// embedded broker: each documented operation and answer, then pkg/sr,
// unchanged, registering light-scheduler's schemas as a producer does,
// and a producer's Avro command fired back as Avro, read with the ids
// registered over HTTP: the engine asks the same registry.
func (c *contract) schemaRegistry() {
	t := c.t
	t.Helper()
	const base = "/schema-registry"
	schema := func(text string) []byte {
		b, _ := json.Marshal(map[string]string{"schema": text})
		return b
	}
	value := base + "/subjects/light-scheduler-value"
	c.want(403, exchange{method: "POST", path: value + "/versions", user: "otto", body: schema(avro.ValueSchema)})
	var reg struct {
		ID int `json:"id"`
	}
	c.want(200, exchange{method: "POST", path: value + "/versions", user: "ada", body: schema(avro.ValueSchema),
		contentType: "application/vnd.schemaregistry.v1+json"}).json(t, &reg)
	c.want(422, exchange{method: "POST", path: value + "/versions", user: "ada", body: schema(`{"type":"nosuchtype"}`)})
	c.want(200, exchange{method: "GET", path: base + "/subjects", user: "vera"})
	c.want(200, exchange{method: "GET", path: value + "/versions", user: "vera"})
	c.want(404, exchange{method: "GET", path: base + "/subjects/nothing/versions", user: "vera"})
	c.want(200, exchange{method: "GET", path: value + "/versions/latest", user: "vera"})
	c.want(404, exchange{method: "GET", path: value + "/versions/7", user: "vera"})
	c.want(422, exchange{method: "GET", path: value + "/versions/first", user: "vera"})
	c.want(200, exchange{method: "POST", path: value, user: "vera", body: schema(avro.ValueSchema)})
	c.want(404, exchange{method: "POST", path: value, user: "vera", body: schema(avro.KeySchema)})
	c.want(422, exchange{method: "POST", path: value, user: "vera", body: []byte(`{"schema":""}`)})
	id := base + "/schemas/ids/" + strconv.Itoa(reg.ID)
	c.want(200, exchange{method: "GET", path: id, user: "vera"})
	c.want(200, exchange{method: "GET", path: id + "/versions", user: "vera"})
	c.want(404, exchange{method: "GET", path: base + "/schemas/ids/9999", user: "vera"})
	c.want(404, exchange{method: "GET", path: base + "/schemas/ids/9999/versions", user: "vera"})

	// A light-scheduler producer: pkg/sr with a console user's basic
	// credentials registers the schemas; its command fires at once (a
	// one-shot due now) as an Avro event.
	ctx := context.Background()
	cl, err := sr.NewClient(sr.URLs(c.in.console+base), sr.BasicAuth("ada", reverse("ada")))
	if err != nil {
		t.Fatal(err)
	}
	codec := avro.New(cl)
	now := c.in.clock.Now()
	d := task.Definition{Host: "lightapi.net", Name: "avro-1", Action: task.Insert, Topic: "avro-jobs", Start: task.Ptr(now.UnixMilli()),
		Data: map[string]string{"question": "Hello"}}
	k, v, err := codec.Encode(ctx, c.in.cfg.Topics.WithDefaults().Input, &d)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := cl.SchemaByVersion(ctx, "light-scheduler-value", -1); err != nil || s.ID != reg.ID {
		t.Errorf("pkg/sr: the latest light-scheduler-value %+v %v, want id %d", s, err, reg.ID)
	}
	p := kafkatest.Client(t, c.in.brokers)
	if _, err := kadm.NewClient(p).CreateTopic(ctx, 1, -1, nil, d.Topic); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: c.in.cfg.Topics.WithDefaults().Input, Key: k, Value: v, Timestamp: now}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var fired []*kgo.Record
	kafkatest.Eventually(t, 60*time.Second, "the Avro command to fire", func() bool {
		fired = kafkatest.Drain(t, c.in.brokers, "avro-jobs")
		return len(fired) > 0
	})
	got, key, err := codec.Decode(ctx, fired[0].Key, fired[0].Value)
	if err != nil || key != d.Key() || got.Start == nil || *got.Start != *d.Start || got.Data["question"] != "Hello" {
		t.Errorf("fired %q %+v %v", key, got, err)
	}
	for _, h := range fired[0].Headers {
		if h.Key == record.HeaderFireScheduled && got.Start != nil && string(h.Value) != strconv.FormatInt(*got.Start, 10) {
			t.Errorf("start %d, scheduled at %s", *got.Start, h.Value)
		}
	}
}
