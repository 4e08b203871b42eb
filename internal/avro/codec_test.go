package avro

import (
	"context"
	"errors"
	"maps"
	"testing"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/jobdrop/jobdrop/task"
)

func newCodec(t testing.TB) (*Codec, *sr.Client) {
	t.Helper()
	reg := srfake.New()
	t.Cleanup(reg.Close)
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	return New(cl), cl
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	c, cl := newCodec(t)
	start := int64(1_700_000_000_000)
	d := task.Definition{Host: "lightapi.net", Name: "market-1", Action: task.Insert, Topic: "market",
		Frequency: &task.Frequency{TimeUnit: task.Minutes, Time: 2}, Start: &start, Data: map[string]string{"question": "Hello"}}
	key, value, err := c.Encode(ctx, "light-scheduler", &d)
	if err != nil {
		t.Fatal(err)
	}
	if !Framed(key) || !Framed(value) {
		t.Fatalf("not framed: % x / % x", key[:5], value[:5])
	}
	// A second codec asks the registry for the ids the first registered.
	got, k, err := New(cl).Decode(ctx, key, value)
	if err != nil {
		t.Fatal(err)
	}
	if k != "lightapi.net/market-1" || got.Host != d.Host || got.Name != d.Name || got.Action != d.Action || got.Topic != d.Topic ||
		*got.Frequency != *d.Frequency || *got.Start != start || !maps.Equal(got.Data, d.Data) {
		t.Errorf("decoded %q %+v, want %+v", k, got, d)
	}
	subjects, err := cl.Subjects(ctx)
	if err != nil || len(subjects) != 2 {
		t.Errorf("subjects %v %v, want light-scheduler-key and -value", subjects, err)
	}
	// One-shot, no data: the nulls come back nil.
	one := task.Definition{Host: "h", Name: "n", Action: task.Delete, Topic: "t"}
	_, value, err = c.Encode(ctx, "light-scheduler", &one)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err = c.Decode(ctx, []byte("h/n"), value); err != nil || got.Frequency != nil || got.Start != nil || got.Data != nil || got.Action != task.Delete {
		t.Errorf("one-shot: %+v %v", got, err)
	}
}

// A producer whose schema grew a field, and one that wrote another
// record, under ids the registry knows; and ids and bytes it does not.
func TestDecodeRefuses(t *testing.T) {
	ctx := context.Background()
	c, cl := newCodec(t)
	grown := `{"type":"record","name":"TaskDefinition","namespace":"com.networknt.scheduler","fields":[
		{"name":"host","type":"string"},{"name":"name","type":"string"},
		{"name":"action","type":{"type":"enum","name":"DefinitionAction","symbols":["INSERT","UPDATE","DELETE"]}},
		{"name":"owner","type":"string"},{"name":"topic","type":"string"}]}`
	grownID, err := cl.RegisterSchema(ctx, "light-scheduler-value", sr.Schema{Schema: grown}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := parse(grown)
	body, err := hamba.Marshal(s, map[string]any{"host": "h", "name": "n", "action": "INSERT", "owner": "ops", "topic": "t"})
	if err != nil {
		t.Fatal(err)
	}
	framed := func(id int, body []byte) []byte {
		b, _ := (&sr.ConfluentHeader{}).AppendEncode(nil, id, nil)
		return append(b, body...)
	}
	d, _, err := c.Decode(ctx, []byte("h/n"), framed(grownID, body))
	if err != nil || d.Key() != "h/n" || d.Topic != "t" || d.Frequency != nil {
		t.Errorf("a grown schema: %+v %v", d, err)
	}
	otherID, err := cl.RegisterSchema(ctx, "other-value", sr.Schema{Schema: `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		key, value []byte
		part       string
		id         int
		want       error
	}{
		{"unknown id", []byte("h/n"), framed(9999, body), "value", 9999, ErrUnknownSchema},
		{"unknown key id", framed(4242, nil), framed(grownID, body), "key", 4242, ErrUnknownSchema},
		{"another record", []byte("h/n"), framed(otherID, body), "value", otherID, ErrWrongSchema},
		{"cut short", []byte("h/n"), framed(grownID, body[:3]), "value", grownID, ErrUndecodable},
		{"no framing", []byte("h/n"), []byte{0, 1}, "value", -1, ErrUndecodable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := c.Decode(ctx, tc.key, tc.value)
			var re *RecordError
			if !errors.As(err, &re) || re.Part != tc.part || re.SchemaID != tc.id || !errors.Is(err, tc.want) {
				t.Errorf("err %v, want a %s error on the %s, schema id %d", err, tc.want, tc.part, tc.id)
			}
		})
	}
}

// A registry out of reach is no fault of the record's.
func TestRegistryDown(t *testing.T) {
	reg := srfake.New()
	cl, _ := sr.NewClient(sr.URLs(reg.URL()))
	c := New(cl)
	d := task.Definition{Host: "h", Name: "n", Action: task.Insert, Topic: "t"}
	key, value, err := c.Encode(context.Background(), "in", &d)
	if err != nil {
		t.Fatal(err)
	}
	reg.Close()
	_, _, err = New(cl).Decode(context.Background(), key, value)
	var re *RecordError
	if err == nil || errors.As(err, &re) {
		t.Errorf("registry down: %v, want an error that is no RecordError", err)
	}
}

// BenchmarkCodec is one command read and one event written, the ids and
// schemas known.
func BenchmarkCodec(b *testing.B) {
	ctx := context.Background()
	c, _ := newCodec(b)
	start := int64(1_700_000_000_000)
	d := task.Definition{Host: "lightapi.net", Name: "market-1", Action: task.Insert, Topic: "market",
		Frequency: &task.Frequency{TimeUnit: task.Minutes, Time: 2}, Start: &start, Data: map[string]string{"question": "Hello", "owner": "market"}}
	key, value, err := c.Encode(ctx, "light-scheduler", &d)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Decode(ctx, key, value); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Encode(ctx, "market", &d); err != nil {
			b.Fatal(err)
		}
	}
}
