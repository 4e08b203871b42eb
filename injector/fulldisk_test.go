//go:build linux

package injector

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/disktest"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestBrokerOnAFullDiskLeavesTheFileUnavailable runs a broker that keeps
// its data on a real 32 MiB tmpfs and fills it: a good file then fails
// with ErrUnavailable, not as a problem of its own, and OnFile is not
// told; a bad file is still rejected for its content; once space is freed
// the good file is injected, once.
func TestBrokerOnAFullDiskLeavesTheFileUnavailable(t *testing.T) {
	dir := disktest.Tmpfs(t, "32m")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	topics := record.Topics{}.WithDefaults()
	if err := kafka.EnsureTopics(context.Background(), kafkatest.Client(t, brokers), topics, 3, -1); err != nil {
		t.Fatal(err)
	}
	var told []FileDone
	in, err := New(Config{ClientOpts: kafka.ClientOpts(brokers, "test"), TransactionalID: "test-injector", Topics: topics,
		OnFile: func(d FileDone) { told = append(told, d) }}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	ctx := context.Background()
	warm := writeFile(t, "warm.csv", "host,name,topic,timeUnit,time\nacme,warm,jobs,MINUTES,1\n")
	if _, err := in.Inject(ctx, File{Path: warm}, converters.CSV{}, converters.Options{}); err != nil {
		t.Fatalf("before the disk is full: %v", err)
	}

	free := disktest.Fill(t, dir)
	good := writeFile(t, "good.csv", "host,name,topic,timeUnit,time\nacme,a,jobs,MINUTES,1\nacme,b,jobs,MINUTES,2\n")
	_, err = in.Inject(ctx, File{Path: good}, converters.CSV{}, converters.Options{})
	var rej *RejectedError
	if !errors.Is(err, ErrUnavailable) || errors.As(err, &rej) {
		t.Fatalf("good file on a full broker disk: %v, want ErrUnavailable", err)
	}
	t.Logf("good file on a full broker disk: %v", err)
	bad := writeFile(t, "bad.csv", "host,name,topic,timeUnit,time\nacme,c,jobs,FORTNIGHTS,1\n")
	if _, err := in.Inject(ctx, File{Path: bad}, converters.CSV{}, converters.Options{}); !errors.As(err, &rej) || errors.Is(err, ErrUnavailable) {
		t.Errorf("bad file on a full broker disk: %v, want it rejected for its content", err)
	}
	if len(told) != 2 || told[1].Outcome != Rejected {
		t.Errorf("OnFile told %+v, want the warm file and the bad one only", told)
	}

	free()
	res, err := in.Inject(ctx, File{Path: good}, converters.CSV{}, converters.Options{})
	if err != nil || res.Outcome != Injected {
		t.Fatalf("good file once space is back: %+v, %v", res, err)
	}
	byKey := map[string]int{}
	for _, r := range kafkatest.Drain(t, brokers, topics.Input) {
		byKey[string(r.Key)]++
	}
	if byKey["acme/a"] != 1 || byKey["acme/b"] != 1 || byKey["acme/c"] != 0 {
		t.Errorf("commands on the input topic, read committed: %v; want acme/a and acme/b once each", byKey)
	}
}
