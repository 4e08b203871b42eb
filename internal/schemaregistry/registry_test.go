package schemaregistry

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/jobdrop/jobdrop/internal/avro"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

func open(t *testing.T, brokers []string) *Registry {
	t.Helper()
	r, err := Open(context.Background(), Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(brokers...)}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// client is pkg/sr, unchanged, over HTTP.
func client(t *testing.T, r *Registry) *sr.Client {
	t.Helper()
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(srv.Close)
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func code(err error) int {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return 0
}

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	brokers := kafkatest.Cluster(t)
	cl := client(t, open(t, brokers))

	keyID, err := cl.RegisterSchema(ctx, "light-scheduler-key", sr.Schema{Schema: avro.KeySchema}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	valueID, err := cl.RegisterSchema(ctx, "light-scheduler-value", sr.Schema{Schema: avro.ValueSchema}, -1, -1)
	if err != nil || valueID == keyID {
		t.Fatalf("value id %d (key %d): %v", valueID, keyID, err)
	}
	// Again, and under another subject: the same id; a new version of the
	// same id under the new subject.
	if again, err := cl.RegisterSchema(ctx, "light-scheduler-key", sr.Schema{Schema: avro.KeySchema}, -1, -1); err != nil || again != keyID {
		t.Errorf("registered again: id %d %v, want %d", again, err, keyID)
	}
	if ss, err := cl.CreateSchema(ctx, "market-key", sr.Schema{Schema: avro.KeySchema}); err != nil || ss.ID != keyID || ss.Version != 1 {
		t.Errorf("the same schema under another subject: %+v %v, want id %d version 1", ss, err, keyID)
	}
	grown := `{"type":"record","name":"TaskDefinitionKey","namespace":"com.networknt.scheduler","fields":[{"name":"host","type":"string"},{"name":"name","type":"string"},{"name":"zone","type":"string","default":""}]}`
	grownID, err := cl.RegisterSchema(ctx, "market-key", sr.Schema{Schema: grown}, -1, -1)
	if err != nil || grownID <= valueID {
		t.Fatalf("a second version: id %d %v", grownID, err)
	}

	check := func(cl *sr.Client) {
		t.Helper()
		s, err := cl.SchemaByID(ctx, valueID)
		if err != nil || avro.Valid(s.Schema) != nil || s.Type != sr.TypeAvro {
			t.Errorf("schema %d: %+v %v", valueID, s, err)
		}
		if us, err := cl.SchemaVersionsByID(ctx, keyID); err != nil || len(us) != 2 || us[1] != (sr.SubjectVersion{Subject: "market-key", Version: 1}) {
			t.Errorf("usages of %d: %+v %v", keyID, us, err)
		}
		if _, err := cl.SchemaByID(ctx, 9999); code(err) != 40403 {
			t.Errorf("unknown id: %v, want 40403", err)
		}
		subjects, err := cl.Subjects(ctx)
		if want := []string{"light-scheduler-key", "light-scheduler-value", "market-key"}; err != nil || !slices.Equal(subjects, want) {
			t.Errorf("subjects %v %v, want %v", subjects, err, want)
		}
		if vs, err := cl.SubjectVersions(ctx, "market-key"); err != nil || !slices.Equal(vs, []int{1, 2}) {
			t.Errorf("versions %v %v", vs, err)
		}
		latest, err := cl.SchemaByVersion(ctx, "market-key", -1)
		if err != nil || latest.ID != grownID || latest.Version != 2 || latest.Subject != "market-key" {
			t.Errorf("latest %+v %v", latest, err)
		}
		first, err := cl.SchemaByVersion(ctx, "market-key", 1)
		if err != nil || first.ID != keyID {
			t.Errorf("version 1 %+v %v", first, err)
		}
		if _, err := cl.SchemaByVersion(ctx, "market-key", 3); code(err) != 40402 {
			t.Errorf("version 3: %v, want 40402", err)
		}
		if _, err := cl.SchemaByVersion(ctx, "nothing", 1); code(err) != 40401 {
			t.Errorf("no subject: %v, want 40401", err)
		}
		found, err := cl.LookupSchema(ctx, "market-key", sr.Schema{Schema: grown})
		if err != nil || found.ID != grownID || found.Version != 2 {
			t.Errorf("lookup %+v %v", found, err)
		}
		if _, err := cl.LookupSchema(ctx, "light-scheduler-key", sr.Schema{Schema: grown}); code(err) != 40403 {
			t.Errorf("lookup of a schema the subject lacks: %v, want 40403", err)
		}
	}
	check(cl)

	// Refused: no Avro, another type, references.
	for _, s := range []sr.Schema{
		{Schema: `{"type":"record","name":"X","fields":[{"name":"a","type":"nosuchtype"}]}`},
		{Schema: `syntax = "proto3";`, Type: sr.TypeProtobuf},
		{Schema: avro.KeySchema, References: []sr.SchemaReference{{Name: "a", Subject: "b", Version: 1}}},
	} {
		if _, err := cl.RegisterSchema(ctx, "bad-value", s, -1, -1); code(err) != 42201 {
			t.Errorf("%.40s: %v, want 42201", s.Schema, err)
		}
	}

	// A restart reads the same ids back from the topic; the in-process
	// client sees what HTTP clients see.
	again := open(t, brokers)
	check(client(t, again))
	in, err := again.Client()
	if err != nil {
		t.Fatal(err)
	}
	check(in)
	if id, err := in.RegisterSchema(ctx, "fresh-value", sr.Schema{Schema: avro.ValueSchema}, -1, -1); err != nil || id != valueID {
		t.Errorf("registered after the restart: %d %v, want %d", id, err, valueID)
	}
	if id, err := in.RegisterSchema(ctx, "fresh-key", sr.Schema{Schema: `"string"`}, -1, -1); err != nil || id != grownID+1 {
		t.Errorf("a new schema after the restart: id %d %v, want %d", id, err, grownID+1)
	}
	srv := httptest.NewServer(again.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/nothing")
	if err == nil {
		resp.Body.Close()
	}
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %v %v", resp, err)
	}
}
