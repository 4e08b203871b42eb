package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/msgsched"
	"github.com/jobdrop/jobdrop/internal/record"
)

// arrivals reads a topic read_committed, as a downstream consumer does,
// and notes when each record was seen.
type arrivals struct {
	mu   sync.Mutex
	recs []*kgo.Record
	seen []time.Time
}

func watchArrivals(t *testing.T, brokers []string, topic string) *arrivals {
	cl := kafkatest.Client(t, brokers, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	a := &arrivals{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now()
			a.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { a.recs, a.seen = append(a.recs, r), append(a.seen, now) })
			a.mu.Unlock()
		}
	}()
	return a
}

func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.recs)
}

func (a *arrivals) all() ([]*kgo.Record, []time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.recs), slices.Clone(a.seen)
}

func headerOf(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// produceSchedule writes one schedule of kafka-message-scheduler's
// protocol, as its client library does.
func produceSchedule(ctx context.Context, cl *kgo.Client, topic, key string, value []byte, epoch int64, target, targetKey string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: []byte(key), Value: value, Headers: []kgo.RecordHeader{
		{Key: record.HeaderScheduleEpoch, Value: []byte(strconv.FormatInt(epoch, 10))},
		{Key: record.HeaderScheduleTargetTopic, Value: []byte(target)},
		{Key: record.HeaderScheduleTargetKey, Value: []byte(targetKey)},
		{Key: "customer-header", Value: []byte("dummy-" + key)},
	}}
	cl.Produce(ctx, r, nil)
	return r
}

// childURL waits for the log line of c that says msg and returns its url.
func childURL(t *testing.T, c *child, msg string) string {
	t.Helper()
	re := regexp.MustCompile(`msg="` + regexp.QuoteMeta(msg) + `".* url=(\S+)`)
	var url string
	kafkatest.Eventually(t, 60*time.Second, "the log to say "+msg, func() bool {
		f, err := os.Open(c.log)
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				url = m[1]
			}
		}
		return url != ""
	})
	return url
}

// TestMessageSchedulesFireOnceAcrossKill runs jobdrop as
// kafka-message-scheduler on a schedule topic of 3 partitions: 10,000
// schedules, some with a second version and some deleted by a tombstone.
// Each live key's latest value reaches its target topic exactly once, at
// its time, with the schedule's headers and the scheduler's; each fired
// schedule gets its tombstone on the partition it was read from. jobdrop
// is killed with kill -9 halfway through; the schedules due while it is
// down fire as soon as it is back.
func TestMessageSchedulesFireOnceAcrossKill(t *testing.T) {
	n := 10_000
	brokers := kafkatest.Cluster(t)
	admin := kafkatest.Client(t, brokers)
	ctx := context.Background()
	if err := kafka.EnsureTopics(ctx, admin, record.Topics{}.WithDefaults(), 8, -1); err != nil {
		t.Fatal(err)
	}
	if err := kafka.NewTargetTopics(admin, 3, -1, true).Ensure(ctx, "schedules"); err != nil {
		t.Fatal(err)
	}
	if err := kafka.NewTargetTopics(admin, 4, -1, true).Ensure(ctx, "targets"); err != nil {
		t.Fatal(err)
	}
	fired := watchArrivals(t, brokers, "targets")
	schedules := watchArrivals(t, brokers, "schedules")

	// Due over 8 seconds from 12 seconds on, 1,250 a second. The topic
	// holds every version and tombstone before jobdrop starts, as at a
	// switch-over: whatever its pace, jobdrop knows each key's latest
	// version when it is due.
	base := time.Now().Add(12 * time.Second).Truncate(time.Second)
	prod := kafkatest.Client(t, brokers)
	type want struct {
		value, targetKey string
		epoch            int64
		partition        int32
		timestamp        int64
	}
	wants := map[string]*want{}
	var written []*kgo.Record
	for i := range n {
		key := fmt.Sprintf("s%05d", i)
		epoch := base.Unix() + int64(i%8)
		written = append(written, produceSchedule(ctx, prod, "schedules", key, []byte("v1-"+key), epoch, "targets", "t-"+key))
		wants[key] = &want{value: "v1-" + key, targetKey: "t-" + key, epoch: epoch}
	}
	for i := 0; i < n; i += 7 { // a new version: later, another value and target key
		key := fmt.Sprintf("s%05d", i)
		epoch := base.Unix() + int64((i+3)%8)
		written = append(written, produceSchedule(ctx, prod, "schedules", key, []byte("v2-"+key), epoch, "targets", "u-"+key))
		wants[key] = &want{value: "v2-" + key, targetKey: "u-" + key, epoch: epoch}
	}
	deleted := 0
	for i := 5; i < n; i += 11 { // deleted
		deleted++
		key := fmt.Sprintf("s%05d", i)
		prod.Produce(ctx, &kgo.Record{Topic: "schedules", Key: []byte(key)}, nil)
		delete(wants, key)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range written { // the partition and timestamp of each key's latest version
		if w, ok := wants[string(r.Key)]; ok && w.value == string(r.Value) {
			w.partition, w.timestamp = r.Partition, r.Timestamp.Unix()
		}
	}
	node := startChildEnv(t, "ms1", "JOBDROP_KAFKA_BROKERS="+strings.Join(brokers, ","),
		"JOBDROP_MESSAGE_SCHEDULER_TOPICS=schedules", "JOBDROP_MESSAGE_SCHEDULER_HISTORY_TOPIC=schedule-history")

	// kill -9 halfway, then start again.
	killAt := base.Add(4 * time.Second)
	time.Sleep(time.Until(killAt)) // the kill's moment is what is tested
	node.kill()
	t.Logf("kill -9 at %s, %d of %d fired", time.Now().Format("15:04:05.000"), fired.count(), len(wants))

	kafkatest.Eventually(t, 3*time.Minute, fmt.Sprintf("%d fired records and their tombstones", len(wants)), func() bool {
		return fired.count() >= len(wants) && schedules.count() >= len(written)+deleted+len(wants)
	})
	// Whatever was committed twice would be there by now: the last
	// tombstones commit with the last fires.
	recs, seen := fired.all()
	got := map[string]int{}
	var onTime []time.Duration
	for i, r := range recs {
		key, _ := headerOf(r, record.HeaderScheduleKey)
		got[key]++
		w, ok := wants[key]
		if !ok {
			t.Errorf("key %s fired, but its schedule was deleted", key)
			continue
		}
		if string(r.Value) != w.value || string(r.Key) != w.targetKey {
			t.Errorf("key %s fired %q to key %q, want its latest version %q to %q", key, r.Value, r.Key, w.value, w.targetKey)
		}
		for h, v := range map[string]string{"customer-header": "dummy-" + key, record.HeaderScheduleTopic: "schedules",
			record.HeaderScheduleTimestamp: strconv.FormatInt(w.timestamp, 10)} {
			if g, _ := headerOf(r, h); g != v {
				t.Errorf("key %s: header %s = %q, want %q", key, h, g, v)
			}
		}
		due := time.Unix(w.epoch, 0)
		if seen[i].Before(due) {
			t.Errorf("key %s seen at %s, before its time %s", key, seen[i].Format("15:04:05.000"), due.Format("15:04:05"))
		}
		if due.Before(killAt) {
			onTime = append(onTime, seen[i].Sub(due))
		}
	}
	for key := range wants {
		if got[key] != 1 {
			t.Errorf("key %s fired %d times, want once", key, got[key])
		}
	}
	// The schedule topic: each fired key's tombstone, on its partition.
	tombs, _ := schedules.all()
	tombstoned := map[string]int32{}
	for _, r := range tombs {
		if _, ours := headerOf(r, record.HeaderFireID); ours && r.Value == nil {
			tombstoned[string(r.Key)] = r.Partition
		}
	}
	for key, w := range wants {
		if p, ok := tombstoned[key]; !ok || p != w.partition {
			t.Errorf("key %s: tombstone on partition %d (found %v), want %d", key, p, ok, w.partition)
		}
	}
	slices.Sort(onTime)
	p99 := onTime[len(onTime)*99/100]
	t.Logf("%d fired once each; %d due before the kill: p50 %s, p99 %s, max %s late", len(wants), len(onTime),
		onTime[len(onTime)/2], p99, onTime[len(onTime)-1])
	if !raceDetector && p99 > time.Second {
		t.Errorf("p99 lateness %s of the fires due before the kill, want under 1s", p99)
	}
}

// TestMessageSchedulerProtocolThroughKcatAndAdmin schedules with kcat's
// -H, as a shell script of a team leaving kafka-message-scheduler does,
// and reads the admin REST its admin page reads. A schedule arriving past
// due fires within the grace and is dropped beyond it; a record that is
// no schedule is rejected with its place named, and the next one applies.
func TestMessageSchedulerProtocolThroughKcatAndAdmin(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed; .ci/run installs it")
		}
		t.Skip("kcat is not installed")
	}
	brokers := kafkatest.Cluster(t)
	node := startChildEnv(t, "ms2", "JOBDROP_KAFKA_BROKERS="+strings.Join(brokers, ","),
		"JOBDROP_MESSAGE_SCHEDULER_TOPICS=schedules", "JOBDROP_MESSAGE_SCHEDULER_GRACE=1m",
		"JOBDROP_MESSAGE_SCHEDULER_LISTEN=127.0.0.1:0")
	adminURL := childURL(t, node, "message scheduler admin listening")
	console := childURL(t, node, "console listening")
	kafkatest.Eventually(t, 60*time.Second, "/liveness 200", func() bool {
		resp, err := http.Get(adminURL + "/liveness")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	var info struct {
		Kafka struct {
			BootstrapServers string   `json:"bootstrap_servers"`
			Topics           []string `json:"topics"`
		} `json:"kafka"`
		APIServerAddress string `json:"api_server_address"`
	}
	if err := getJSON(adminURL+"/info", &info); err != nil || info.Kafka.BootstrapServers != strings.Join(brokers, ",") ||
		!slices.Equal(info.Kafka.Topics, []string{"schedules"}) || "http://"+info.APIServerAddress != adminURL {
		t.Fatalf("/info %+v (%v)", info, err)
	}

	fired := watchArrivals(t, brokers, "online-videos")
	// Far enough ahead for the schedule to be taken in before its time
	// on a loaded machine, under -race.
	epoch := time.Now().Add(8 * time.Second).Unix()
	kcatProduce := func(key, value string, headers ...string) {
		t.Helper()
		args := []string{"-b", brokers[0], "-P", "-t", "schedules", "-k", key}
		for _, h := range headers {
			args = append(args, "-H", h)
		}
		cmd := exec.Command(kcat, args...)
		cmd.Stdin = strings.NewReader(value)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kcat -P: %v\n%s", err, out)
		}
	}
	kcatProduce("vid1-online", "video 1", "scheduler-epoch="+strconv.FormatInt(epoch, 10),
		"scheduler-target-topic=online-videos", "scheduler-target-key=vid1", "customer-header=dummy")
	// No schedule: rejected, named; a late one within the grace fires at
	// once, one beyond it is dropped.
	kcatProduce("no-headers", "x")
	kcatProduce("late", "late but in grace", "scheduler-epoch="+strconv.FormatInt(time.Now().Add(-30*time.Second).Unix(), 10),
		"scheduler-target-topic=online-videos", "scheduler-target-key=late")
	kcatProduce("too-late", "never", "scheduler-epoch="+strconv.FormatInt(time.Now().Add(-2*time.Minute).Unix(), 10),
		"scheduler-target-topic=online-videos", "scheduler-target-key=too-late")

	var listed []msgsched.Schedule
	kafkatest.Eventually(t, 60*time.Second, "/schedules to list vid1-online", func() bool {
		return getJSON(adminURL+"/schedules?q=vid1", &listed) == nil && len(listed) == 1
	})
	if s := listed[0]; s.ID != "vid1-online" || s.Epoch != epoch || s.TargetTopic != "online-videos" || s.TargetKey != "vid1" ||
		s.Topic != "schedules" || string(s.Value) != "video 1" {
		t.Fatalf("/schedules %+v", s)
	}
	var tasks []struct {
		Key, Schedule, Status string
	}
	if err := getJSON(console+"/api/tasks?host=schedules", &tasks); err != nil ||
		!slices.ContainsFunc(tasks, func(tk struct{ Key, Schedule, Status string }) bool {
			return tk.Key == "schedules/vid1-online" && tk.Schedule == "once" && tk.Status == "active"
		}) {
		t.Fatalf("console tasks %+v (%v), want schedules/vid1-online active, once", tasks, err)
	}

	kafkatest.Eventually(t, 60*time.Second, "2 records on online-videos", func() bool { return fired.count() >= 2 })
	recs, _ := fired.all()
	byKey := map[string]int{}
	for i, r := range recs {
		byKey[string(r.Key)] = i
	}
	i, ok := byKey["vid1"]
	if !ok {
		t.Fatalf("fired keys %v, want vid1", byKey)
	}
	// When it fired: the record's timestamp, set as the engine produced
	// it; when a consumer reads it also depends on that consumer.
	due := time.Unix(epoch, 0)
	if late := recs[i].Timestamp.Sub(due); late < 0 || late > time.Second {
		t.Errorf("vid1 fired %s after its time, want within 1s", late)
	}
	if r := recs[i]; string(r.Value) != "video 1" {
		t.Errorf("vid1 value %q", r.Value)
	}
	for h, v := range map[string]string{"customer-header": "dummy", record.HeaderScheduleKey: "vid1-online", record.HeaderScheduleTopic: "schedules"} {
		if g, _ := headerOf(recs[i], h); g != v {
			t.Errorf("header %s = %q, want %q", h, g, v)
		}
	}
	if _, ok := byKey["late"]; !ok {
		t.Errorf("the schedule 30s late (grace 1m) did not fire: fired %v", byKey)
	}
	var audit []struct {
		Action, Object, Detail string
	}
	kafkatest.Eventually(t, 60*time.Second, "the rejected and the dropped schedule in the audit trail", func() bool {
		if getJSON(console+"/api/audit?actor="+msgsched.Actor, &audit) != nil {
			return false
		}
		var actions []string
		for _, a := range audit {
			actions = append(actions, a.Action)
		}
		return slices.Contains(actions, record.ActionScheduleRejected) && slices.Contains(actions, record.ActionScheduleDropped)
	})
	for _, a := range audit {
		switch a.Action {
		case record.ActionScheduleRejected:
			if !strings.Contains(a.Detail, "schedules partition") || !strings.Contains(a.Detail, `(key "no-headers")`) ||
				!strings.Contains(a.Detail, "header scheduler-epoch") {
				t.Errorf("rejection says %q, want the record's place and the missing headers", a.Detail)
			}
		case record.ActionScheduleDropped:
			if a.Object != "schedules/too-late" || !strings.Contains(a.Detail, "more than the grace of 1m0s") {
				t.Errorf("drop %+v", a)
			}
		}
	}
	if _, ok := byKey["too-late"]; ok {
		t.Errorf("the schedule 2m late (grace 1m) fired")
	}
}
