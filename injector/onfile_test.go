package injector

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

func TestOnFileTellsEveryOutcome(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	topics := record.Topics{}.WithDefaults()
	if err := kafka.EnsureTopics(context.Background(), kafkatest.Client(t, brokers), topics, 3, -1); err != nil {
		t.Fatal(err)
	}
	var got []FileDone
	in, err := New(Config{ClientOpts: kafka.ClientOpts(brokers, "test"), TransactionalID: "test-injector", Topics: topics,
		OnFile: func(d FileDone) { got = append(got, d) }},
		nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)

	ctx := context.Background()
	good := "host,name,topic,timeUnit,time\nacme,a,jobs,MINUTES,1\nacme,b,jobs,HOURS,2\n"
	mixed := "host,name,topic,timeUnit,time\nacme,c,jobs,MINUTES,1\nacme,d,jobs,FORTNIGHTS,2\n"
	steps := []struct {
		name    string
		file    File
		content string
		want    FileDone
	}{
		{"injected", File{}, good, FileDone{Outcome: Injected, Rows: 2}},
		{"duplicate", File{}, good, FileDone{Outcome: Duplicate}},
		{"rejected", File{}, mixed, FileDone{Outcome: Rejected, Rows: 2, Rejected: 1}},
		{"partial", File{Policy: PolicyGoodRows}, mixed, FileDone{Outcome: Partial, Rows: 2, Rejected: 1}},
		{"failed", File{}, "host,name,topic\nacme,e,jobs\n", FileDone{Outcome: Failed}},
	}
	for i, s := range steps {
		if s.name == "failed" {
			in.Close() // the producer is gone: no transaction can commit
		}
		s.file.Path = writeFile(t, s.name+".csv", s.content)
		// A file the brokers could not take for now (ErrUnavailable) is
		// told of when it is tried again, as the watcher does.
		var err error
		for try := 0; try < 5; try++ {
			if _, err = in.Inject(ctx, s.file, converters.CSV{}, converters.Options{}); !errors.Is(err, ErrUnavailable) {
				break
			}
			t.Logf("%s: %v; trying again", s.name, err)
		}
		if len(got) != i+1 {
			t.Fatalf("%s: OnFile called %d times in all, want %d (Inject: %v)", s.name, len(got), i+1, err)
		}
		d := got[i]
		committed := s.want.Outcome == Injected || s.want.Outcome == Partial
		if committed != (d.Took > 0) {
			t.Errorf("%s: took %v; want a duration only for a committed file", s.name, d.Took)
		}
		d.Took = 0
		if d != s.want {
			t.Errorf("%s: OnFile got %+v, want %+v", s.name, d, s.want)
		}
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = in.Inject(cancelled, File{Path: writeFile(t, "late.csv", good)}, converters.CSV{}, converters.Options{})
	if len(got) != len(steps) {
		t.Errorf("OnFile told of a file interrupted by its context: %+v", got[len(steps):])
	}
}
