package injector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// newFaultyInjector is newInjector on a cluster the test can make refuse
// requests.
func newFaultyInjector(t *testing.T) (*Injector, *kfake.Cluster, record.Topics) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	in, topics := injectorOn(t, c.ListenAddrs())
	return in, c, topics
}

// partitionOf is the input partition kgo's default partitioner gives key.
func partitionOf(topic, key string, partitions int) int32 {
	return int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(&kgo.Record{Key: []byte(key)}, partitions))
}

// TestRowOverTheBrokersLimitIsARowError sets the input topic's
// max.message.bytes low: a row whose task is larger is a row error naming
// the limit and its setting, before anything is produced.
func TestRowOverTheBrokersLimitIsARowError(t *testing.T) {
	in, c, topics := newFaultyInjector(t)
	ctx := context.Background()
	adm := kadm.NewClient(kafkatest.Client(t, c.ListenAddrs()))
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("4000")}}, topics.Input)
	if err == nil {
		_, err = resp.On(topics.Input, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 5000)
	content := "host,name,topic,data.payload\nacme,small,jobs,ok\nacme,big,jobs," + big + "\nacme,other,jobs,ok\n"
	_, err = in.Inject(ctx, File{Path: writeFile(t, "jobs.csv", content)}, converters.CSV{}, converters.Options{})
	var rej *RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("Inject = %v, want a *RejectedError", err)
	}
	report := rej.Error()
	for _, want := range []string{"jobs.csv: row 3: column data", "acme/big", "4000 bytes", "max.message.bytes of topic " + topics.Input, "1 of 3 rows rejected"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if n := len(kafkatest.Drain(t, c.ListenAddrs(), topics.Input)); n != 0 {
		t.Errorf("%d commands on the input topic, want none", n)
	}
}

// TestRecordTheBrokersRefuseFailsTheFile makes the brokers refuse the
// records of one task's partition with POLICY_VIOLATION: the file is
// rejected naming that row, its task and the brokers' answer, nothing of
// it is injected, and the next file goes in.
func TestRecordTheBrokersRefuseFailsTheFile(t *testing.T) {
	in, c, topics := newFaultyInjector(t)
	ctx := context.Background()
	bad := partitionOf(topics.Input, "acme/refused", 3)
	var rows []string
	for i := 0; len(rows) < 5; i++ {
		if name := fmt.Sprintf("good-%d", i); partitionOf(topics.Input, "acme/"+name, 3) != bad {
			rows = append(rows, "acme,"+name+",jobs")
		}
	}
	rows = append(rows[:2], append([]string{"acme,refused,jobs"}, rows[2:]...)...)
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topics.Input, Partitions: []int32{bad},
		Err: kerr.PolicyViolation, Count: -1})

	_, err := in.Inject(ctx, File{Path: writeFile(t, "jobs.csv", "host,name,topic\n"+strings.Join(rows, "\n")+"\n")},
		converters.CSV{}, converters.Options{})
	var rej *RejectedError
	if !errors.As(err, &rej) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Inject = %v, want a *RejectedError, not unavailable", err)
	}
	report := rej.Error()
	if !strings.Contains(report, "jobs.csv: row 4: task acme/refused: the brokers refused") ||
		!strings.Contains(report, "POLICY_VIOLATION") || !strings.Contains(report, "1 of 6 rows rejected") {
		t.Errorf("report:\n%s", report)
	}
	if strings.Count(report, "the brokers refused its record") != 1 {
		t.Errorf("report names other rows than the refused one:\n%s", report)
	}
	fault.Remove()

	res, err := in.Inject(ctx, File{Path: writeFile(t, "next.csv", "host,name,topic\nacme,next,jobs\n")}, converters.CSV{}, converters.Options{})
	if err != nil || res.Outcome != Injected {
		t.Fatalf("next file: %+v, %v", res, err)
	}
	var keys []string
	for _, r := range kafkatest.Drain(t, c.ListenAddrs(), topics.Input) {
		keys = append(keys, string(r.Key))
	}
	if strings.Join(keys, ",") != "acme/next" {
		t.Errorf("input topic holds %v, want only acme/next", keys)
	}
	var audits []string
	for _, a := range kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, c.ListenAddrs(), topics.Audit)) {
		audits = append(audits, a.Action+" "+a.Object)
	}
	slices.Sort(audits)
	if got := strings.Join(audits, ", "); got != "file.injected next.csv, file.rejected jobs.csv" {
		t.Errorf("audit: %s", got)
	}
}

// TestClusterFaultIsNotTheFiles makes the brokers answer NOT_ENOUGH_REPLICAS
// for a while: the file is not rejected but reported unavailable, to be
// tried again, and is injected whole once the brokers take it.
func TestClusterFaultIsNotTheFiles(t *testing.T) {
	in, c, topics := newFaultyInjector(t)
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topics.Input, Err: kerr.NotEnoughReplicas, Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	path := writeFile(t, "jobs.csv", "host,name,topic\nacme,a,jobs\nacme,b,jobs\n")
	_, err := in.Inject(ctx, File{Path: path}, converters.CSV{}, converters.Options{})
	var rej *RejectedError
	if err == nil || errors.As(err, &rej) {
		t.Fatalf("Inject while the brokers lack replicas = %v, want an error that is not a rejection", err)
	}
	t.Log("first attempt ended", time.Now())
	fault.Remove()
	res, err := in.Inject(context.Background(), File{Path: path}, converters.CSV{}, converters.Options{})
	if err != nil || res.Outcome != Injected || len(kafkatest.Drain(t, c.ListenAddrs(), topics.Input)) != 2 {
		t.Fatalf("once the brokers take it: %+v, %v", res, err)
	}
}

// TestRejectionTheAuditTrailCannotTakeIsTriedAgain: while the brokers
// refuse the audit topic, a bad file's rejection cannot be recorded, so
// the file is not done with: Inject says ErrUnavailable, as for a cluster
// fault, and OnFile is not told. Tried again once the audit topic takes
// records, it is rejected for its content, and recorded once.
func TestRejectionTheAuditTrailCannotTakeIsTriedAgain(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var told []FileDone
	in, topics := injectorOn(t, c.ListenAddrs(), func(cfg *Config) { cfg.OnFile = func(d FileDone) { told = append(told, d) } })
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topics.Audit, Err: kerr.TopicAuthorizationFailed, Count: -1})
	path := writeFile(t, "bad.csv", "host,name,topic,timeUnit,time\nacme,a,jobs,FORTNIGHTS,1\n")
	_, err = in.Inject(context.Background(), File{Path: path}, converters.CSV{}, converters.Options{})
	var rej *RejectedError
	if !errors.Is(err, ErrUnavailable) || errors.As(err, &rej) {
		t.Fatalf("a bad file while the audit topic refuses records: %v, want ErrUnavailable", err)
	}
	if len(told) != 0 {
		t.Errorf("OnFile told %+v, want nothing yet", told)
	}
	fault.Remove()
	_, err = in.Inject(context.Background(), File{Path: path}, converters.CSV{}, converters.Options{})
	if !errors.As(err, &rej) || !strings.Contains(err.Error(), "FORTNIGHTS") {
		t.Fatalf("the same file once the audit topic takes records: %v, want it rejected for FORTNIGHTS", err)
	}
	if len(told) != 1 || told[0].Outcome != Rejected {
		t.Errorf("OnFile told %+v, want the rejection", told)
	}
	rejections := 0
	for _, r := range kafkatest.Drain(t, c.ListenAddrs(), topics.Audit) {
		if strings.Contains(string(r.Value), `"action":"`+record.ActionFileRejected+`"`) {
			rejections++
		}
	}
	if rejections != 1 {
		t.Errorf("the audit topic holds %d rejections, want 1", rejections)
	}
}
