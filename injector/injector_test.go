package injector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

func newInjector(t *testing.T) (*Injector, []string, record.Topics) {
	t.Helper()
	brokers := kafkatest.Cluster(t)
	in, topics := injectorOn(t, brokers)
	return in, brokers, topics
}

// injectorOn makes jobdrop's topics on brokers and an injector writing
// to them.
func injectorOn(t *testing.T, brokers []string, opts ...func(*Config)) (*Injector, record.Topics) {
	t.Helper()
	topics := record.Topics{}.WithDefaults()
	if err := kafka.EnsureTopics(context.Background(), kafkatest.Client(t, brokers), topics, 3, -1); err != nil {
		t.Fatal(err)
	}
	cfg := Config{ClientOpts: kafka.ClientOpts(brokers, "test"), TransactionalID: "test-injector", Topics: topics}
	for _, o := range opts {
		o(&cfg)
	}
	in, err := New(cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	return in, topics
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInjectsOnceAndRecordsDuplicates(t *testing.T) {
	in, brokers, topics := newInjector(t)
	ctx := context.Background()
	content := "host,name,topic,timeUnit,time\nacme,a,jobs,MINUTES,1\nacme,b,jobs,HOURS,2\n"
	res, err := in.Inject(ctx, File{Path: writeFile(t, "jobs.csv", content)}, converters.CSV{}, converters.Options{})
	if err != nil || res.Outcome != Injected || res.Batch.Rows != 2 {
		t.Fatalf("first drop: %+v, %v", res, err)
	}
	again, err := in.Inject(ctx, File{Path: writeFile(t, "copy.csv", content)}, converters.CSV{}, converters.Options{})
	if err != nil || again.Outcome != Duplicate || again.Batch.ID != res.Batch.ID {
		t.Fatalf("same content again: %+v, %v", again, err)
	}

	cmds := kafkatest.Drain(t, brokers, topics.Input)
	if len(cmds) != 2 {
		t.Fatalf("%d commands on the input topic, want 2", len(cmds))
	}
	for _, c := range cmds {
		h := map[string]string{}
		for _, kv := range c.Headers {
			h[kv.Key] = string(kv.Value)
		}
		if h[record.HeaderBatch] != res.Batch.ID || h[record.HeaderFile] != "jobs.csv" || h[record.HeaderRow] == "" {
			t.Errorf("command %s headers %v", c.Key, h)
		}
	}
	var actions []string
	for _, a := range kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, brokers, topics.Audit)) {
		actions = append(actions, a.Action+" "+a.Object)
	}
	if got := strings.Join(actions, ", "); got != "file.injected jobs.csv, file.duplicate copy.csv" {
		t.Errorf("audit: %s", got)
	}
}

func TestRejectsWholeFileAndNamesEveryBadRow(t *testing.T) {
	in, brokers, topics := newInjector(t)
	path := writeFile(t, "bad.csv", "host,name,topic,timeUnit,time\nacme,ok,jobs,MINUTES,1\nacme,x,jobs,EONS,1\nacme,ok,jobs,MINUTES,2\n")
	res, err := in.Inject(context.Background(), File{Path: path}, converters.CSV{}, converters.Options{})
	var rej *RejectedError
	if !errors.As(err, &rej) || res.Outcome != Rejected {
		t.Fatalf("got %+v, %v; want a rejection", res, err)
	}
	report := err.Error()
	for _, want := range []string{"2 of 3 rows rejected", "row 3: column timeUnit", `"EONS"`, "row 4", "appears again (first at row 2)"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if n := len(kafkatest.Drain(t, brokers, topics.Input)); n != 0 {
		t.Errorf("%d commands of a rejected file reached the input topic", n)
	}
}

func TestLargeFileIsOneTransaction(t *testing.T) {
	in, brokers, topics := newInjector(t)
	const rows = bufferRows + 5_000 // more rows than a sync file keeps after its check
	var b strings.Builder
	b.WriteString("host,name,topic,timeUnit,time\n")
	for i := range rows {
		fmt.Fprintf(&b, "acme,job-%06d,jobs,MINUTES,%d\n", i, i%60+1)
	}
	res, err := in.Inject(context.Background(), File{Path: writeFile(t, "big.csv", b.String())}, converters.CSV{}, converters.Options{})
	if err != nil || res.Batch.Rows != rows {
		t.Fatalf("%+v, %v", res, err)
	}
	cmds := kafkatest.Decode[task.Definition](t, kafkatest.Drain(t, brokers, topics.Input))
	if len(cmds) != rows {
		t.Fatalf("%d commands, want %d", len(cmds), rows)
	}
	seen := map[string]bool{}
	for _, d := range cmds {
		seen[d.Name] = true
	}
	if len(seen) != rows {
		t.Errorf("%d distinct tasks, want %d", len(seen), rows)
	}
}

func TestReportCountsRowsNotProblems(t *testing.T) {
	in, _, _ := newInjector(t)
	path := writeFile(t, "bad.csv", "host,name,topic,start,timeUnit,time\nacme,ok,jobs,,MINUTES,5\nacme,broken,jobs,yesterday,FORTNIGHTS,1\n")
	_, err := in.Inject(context.Background(), File{Path: path}, converters.CSV{}, converters.Options{})
	var rej *RejectedError
	if !errors.As(err, &rej) || rej.Bad != 1 || rej.Problems != 2 {
		t.Fatalf("got %+v; want 1 bad row with 2 problems", rej)
	}
	if !strings.Contains(err.Error(), "1 of 2 rows rejected") {
		t.Errorf("report:\n%s", err)
	}
}

// TestTaskTooLargeForSmallBatchesIsInjected drops a file whose fourth task
// is too large for the producer's batches of 64 KiB, though within the
// brokers' 1 MiB: the file is injected whole, that task intact, and the
// files after it too.
func TestTaskTooLargeForSmallBatchesIsInjected(t *testing.T) {
	in, brokers, topics := newInjector(t)
	payload := strings.Repeat("p", 300<<10)
	var b strings.Builder
	b.WriteString("host,name,topic,timeUnit,time,data.payload\n")
	for i := range 6 {
		data := "small"
		if i == 3 {
			data = payload
		}
		fmt.Fprintf(&b, "acme,job-%d,jobs,MINUTES,5,%s\n", i, data)
	}
	res, err := in.Inject(context.Background(), File{Path: writeFile(t, "large.csv", b.String())}, converters.CSV{}, converters.Options{})
	if err != nil || res.Outcome != Injected || res.Batch.Rows != 6 {
		t.Fatalf("%+v, %v", res, err)
	}
	res, err = in.Inject(context.Background(), File{Path: writeFile(t, "after.csv", "host,name,topic,timeUnit,time\nacme,next,jobs,MINUTES,5\n")}, converters.CSV{}, converters.Options{})
	if err != nil || res.Outcome != Injected {
		t.Fatalf("the file after: %+v, %v", res, err)
	}
	cmds := kafkatest.Decode[task.Definition](t, kafkatest.Drain(t, brokers, topics.Input))
	got := map[string]int{}
	for _, d := range cmds {
		got[d.Name] = len(d.Data["payload"])
	}
	if len(cmds) != 7 || got["job-3"] != len(payload) || got["job-0"] != len("small") || len(got) != 7 {
		t.Fatalf("%d commands, payload sizes %v; want 7, job-3's of %d bytes", len(cmds), got, len(payload))
	}
}
