package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// readyBody is the answer of /readyz.
type readyBody struct {
	Ready  bool              `json:"ready"`
	Checks map[string]string `json:"checks"`
}

func (in *instance) readyz() (int, readyBody) {
	in.t.Helper()
	code, body := in.call(http.MethodGet, "/readyz", "", "")
	var r readyBody
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		in.t.Fatalf("/readyz answered %d %q: %v", code, body, err)
	}
	return code, r
}

// scrape reads /metrics as Prometheus does and parses it.
func (in *instance) scrape() scraped {
	in.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, in.console+"/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		in.t.Fatalf("GET /metrics: %s\n%s", resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		in.t.Fatalf("parse /metrics: %v", err)
	}
	return scraped{t: in.t, mfs: mfs}
}

// scraped is one scrape of /metrics.
type scraped struct {
	t   testing.TB
	mfs map[string]*dto.MetricFamily
}

// metric finds the series of name with these label pairs (name, value,
// …) among its labels.
func (s scraped) metric(name string, labels ...string) (*dto.Metric, bool) {
	mf, ok := s.mfs[name]
	if !ok {
		return nil, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		return m, true
	}
	return nil, false
}

// value is a counter's or gauge's value, -1 when the series is missing.
func (s scraped) value(name string, labels ...string) float64 {
	m, ok := s.metric(name, labels...)
	switch {
	case !ok:
		return -1
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return m.GetUntyped().GetValue()
}

// histogram is a histogram's series, nil when missing.
func (s scraped) histogram(name string) *dto.Histogram {
	m, ok := s.metric(name)
	if !ok {
		return nil
	}
	return m.GetHistogram()
}

// sum adds up every series of name.
func (s scraped) sum(name string) float64 {
	var n float64
	for _, m := range s.mfs[name].GetMetric() {
		n += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return n
}

// holdFirstJoin keeps the first JoinGroup request waiting until the
// returned function is called: until then no consumer group member can
// join.
func holdFirstJoin(c *kfake.Cluster) (release func()) {
	ch := make(chan struct{})
	var held sync.Once
	c.ControlKey(kmsg.JoinGroup.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		held.Do(func() { c.SleepControl(func() { <-ch }) })
		c.DropControl()
		return nil, nil, false // then the broker handles it as usual
	})
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// TestMetricsHealthAndReadiness runs a node whose scheduler cannot join
// its group yet, then drops a file, fires its tasks, reports their
// executions, and reads it all back from /metrics as Prometheus would.
func TestMetricsHealthAndReadiness(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	release := holdFirstJoin(c)
	in := startInstance(t, c.ListenAddrs()...)
	t.Cleanup(release) // before the instance stops, should the test end early

	if code, body := in.call(http.MethodGet, "/healthz", "", ""); code != http.StatusOK {
		t.Errorf("/healthz = %d %s", code, body)
	}
	kafkatest.Eventually(t, 60*time.Second, "the recorder to catch up", func() bool {
		_, r := in.readyz()
		return r.Checks["recorder"] == "ok"
	})
	code, r := in.readyz()
	if code != http.StatusServiceUnavailable || r.Ready || !strings.Contains(r.Checks["scheduler"], "consumer group jobdrop-scheduler") ||
		r.Checks["kafka"] != "ok" || r.Checks["topics"] != "ok" || r.Checks["recorder"] != "ok" {
		t.Errorf("/readyz while the scheduler's JoinGroup is held = %d %+v", code, r)
	}
	release()
	kafkatest.Eventually(t, 60*time.Second, "/readyz 200", func() bool {
		code, _ := in.readyz()
		return code == http.StatusOK
	})
	if _, r := in.readyz(); !r.Ready || len(r.Checks) != 6 || r.Checks["data_dir"] != "ok" || r.Checks["folders"] != "ok" {
		t.Errorf("/readyz once ready: %+v", r)
	}

	t0 := in.clock.Now()
	due := t0.Add(time.Second)
	jobs := kafkatest.Collect(t, in.brokers, "batch-jobs")
	in.drop("jobs.csv", "host,name,topic,start,timeUnit,time\n"+
		"acme,once,batch-jobs,"+due.UTC().Format(time.RFC3339)+",,\n"+
		"acme,hourly,batch-jobs,"+due.UTC().Format(time.RFC3339)+",HOURS,1\n")
	in.waitFile("archive", "jobs.csv")
	// A symbolic link is refused, moved to failed/ and counted failed.
	if err := os.Symlink(filepath.Join(in.inbox, "archive", "jobs.csv"), filepath.Join(in.inbox, "link.csv")); err != nil {
		t.Fatal(err)
	}
	in.waitFile("failed", "link.csv")
	// A task with a timeout, through the API: its success comes late.
	if code, body := in.call(http.MethodPost, "/schedulers", "",
		`{"host":"acme","name":"slow","topic":"batch-jobs","start":`+strconv.FormatInt(due.UnixMilli(), 10)+`,"timeout":60000}`); code != http.StatusOK {
		t.Fatalf("POST /schedulers: %d %s", code, body)
	}
	kafkatest.Eventually(t, 60*time.Second, "3 tasks in the console", func() bool {
		var tasks []json.RawMessage
		return in.getJSON("/api/tasks", &tasks) == nil && len(tasks) == 3
	})
	in.advanceTo(due)
	kafkatest.Eventually(t, 60*time.Second, "3 fires", func() bool { return jobs.Count() == 3 })
	kafkatest.Eventually(t, 60*time.Second, "3 fires counted", func() bool {
		s := in.scrape()
		return s.value("jobdrop_fires_total") == 3 && s.histogram("jobdrop_fire_lateness_seconds").GetSampleCount() == 3
	})

	var execs []struct {
		FireID string `json:"fireId"`
		Name   string `json:"name"`
	}
	kafkatest.Eventually(t, 60*time.Second, "3 executions in the console", func() bool {
		return in.getJSON("/api/executions", &execs) == nil && len(execs) == 3
	})
	fireOf := map[string]string{}
	for _, e := range execs {
		fireOf[e.Name] = e.FireID
	}
	report := func(name, status string) {
		t.Helper()
		if code, body := in.call(http.MethodPost, "/api/executions/"+fireOf[name]+"/status", "", `{"status":"`+status+`"}`); code != http.StatusOK {
			t.Fatalf("report %s %s: %d %s", name, status, code, body)
		}
	}
	report("once", "SUCCESS")
	report("hourly", "FAILED")
	in.advanceTo(due.Add(2 * time.Minute)) // past slow's timeout of a minute
	report("slow", "SUCCESS")
	kafkatest.Eventually(t, 60*time.Second, "3 executions counted", func() bool {
		return in.scrape().sum("jobdrop_executions_total") == 3
	})
	kafkatest.Eventually(t, 60*time.Second, "the recorder caught up", func() bool {
		return in.scrape().value("jobdrop_recorder_lag_records") == 0
	})

	s := in.scrape()
	for _, want := range []struct {
		name   string
		labels []string
		value  float64
	}{
		{"jobdrop_files_total", []string{"outcome", "injected"}, 1},
		{"jobdrop_files_total", []string{"outcome", "rejected"}, 0},
		{"jobdrop_files_total", []string{"outcome", "duplicate"}, 0},
		{"jobdrop_files_total", []string{"outcome", "failed"}, 1},
		{"jobdrop_rows_accepted_total", nil, 2},
		{"jobdrop_rows_rejected_total", nil, 0},
		{"jobdrop_fires_total", nil, 3},
		// once and slow fired their only occurrence; hourly goes on.
		{"jobdrop_active_tasks", nil, 1},
		{"jobdrop_executions_total", []string{"outcome", "SUCCESS"}, 1},
		{"jobdrop_executions_total", []string{"outcome", "FAILED"}, 1},
		{"jobdrop_executions_total", []string{"outcome", "OVERDUE"}, 1},
		{"jobdrop_recorder_lag_records", nil, 0},
	} {
		if got := s.value(want.name, want.labels...); got != want.value {
			t.Errorf("%s%v = %v, want %v", want.name, want.labels, got, want.value)
		}
	}
	if h := s.histogram("jobdrop_injection_duration_seconds"); h.GetSampleCount() != 1 || h.GetSampleSum() <= 0 {
		t.Errorf("injection duration: %d files, %vs in all; want 1 file that took some time", h.GetSampleCount(), h.GetSampleSum())
	}
	// The fake clock stood still at the due time until all three fires
	// were counted: each was on time, in the first bucket.
	late := s.histogram("jobdrop_fire_lateness_seconds")
	if late.GetSampleCount() != uint64(s.value("jobdrop_fires_total")) || late.GetSampleSum() != 0 ||
		late.GetBucket()[0].GetUpperBound() != 0.001 || late.GetBucket()[0].GetCumulativeCount() != 3 {
		t.Errorf("lateness: %d observations summing to %vs, buckets %v", late.GetSampleCount(), late.GetSampleSum(), late.GetBucket())
	}
	for _, want := range [][]string{
		{"jobdrop_kafka_produce_bytes_total", "topic", "light-scheduler"},
		{"jobdrop_kafka_produce_bytes_total", "topic", "batch-jobs"},
		{"jobdrop_kafka_fetch_bytes_total", "topic", "light-scheduler-audit"},
		{"jobdrop_kafka_connects_total"},
		{"jobdrop_kafka_read_bytes_total"},
	} {
		if v := s.value(want[0], want[1:]...); v <= 0 {
			t.Errorf("%s%v = %v, want some", want[0], want[1:], v)
		}
	}
	for _, name := range []string{"jobdrop_kafka_buffered_produce_records", "jobdrop_kafka_buffered_fetch_bytes",
		"go_goroutines", "process_resident_memory_bytes"} {
		if s.value(name) < 0 {
			t.Errorf("%s missing", name)
		}
	}
	for name := range s.mfs {
		if strings.HasPrefix(name, "jobdrop_kafka_buffered_") && strings.HasSuffix(name, "_total") {
			t.Errorf("kprom's one-client gauge %s is served", name)
		}
	}

	// The brokers gone, the node is no longer ready, but alive.
	c.Close()
	kafkatest.Eventually(t, 60*time.Second, "/readyz 503 naming kafka", func() bool {
		code, r := in.readyz()
		return code == http.StatusServiceUnavailable && r.Checks["kafka"] != "ok"
	})
	if code, _ := in.call(http.MethodGet, "/healthz", "", ""); code != http.StatusOK {
		t.Errorf("/healthz with the brokers gone = %d, want 200", code)
	}
	_, r = in.readyz()
	t.Logf("readiness with the brokers gone: %s", fmt.Sprint(r.Checks))
}
