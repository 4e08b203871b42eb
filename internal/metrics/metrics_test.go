package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// traffic creates a topic, produces a record to it and fetches it back
// through clients hooked to m, then closes them; and fails to connect
// once, so every kprom family has a series.
func traffic(t *testing.T, m *Metrics) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	brokers := kafkatest.Cluster(t)
	hooks := kgo.WithHooks(m.KafkaClients())
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), hooks)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 1, 1, nil, "jobs"); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "jobs", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers...), hooks, kgo.ConsumeTopics("jobs"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if fs := cons.PollFetches(ctx); len(fs.Records()) != 1 {
		t.Fatalf("fetched %v, errors %v", fs.Records(), fs.Errors())
	}

	dead, err := kgo.NewClient(kgo.SeedBrokers(kafkatest.ClosedAddr(t)), hooks)
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	if err := dead.Ping(ctx); err == nil {
		t.Fatal("a closed port answered")
	}
}

func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// dashboard is what the test reads of the Grafana dashboard.
type dashboard struct {
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var (
	// quoted, braced and bracketed parts of PromQL hold label values,
	// matchers and ranges, never metric names.
	promqlNoise = regexp.MustCompile(`"[^"]*"|\{[^}]*\}|\[[^\]]*\]`)
	metricName  = regexp.MustCompile(`\b(?:jobdrop|go|process)_[a-zA-Z0-9_]+\b`)
)

// metricNames lists the metric names a PromQL expression reads.
func metricNames(expr string) []string {
	return metricName.FindAllString(promqlNoise.ReplaceAllString(expr, " "), -1)
}

// TestDashboardUsesExposedMetrics keeps docs/grafana/jobdrop.json in step
// with the metrics: it parses, it picks its Prometheus data source from a
// variable, every name its queries read is one the registry exposes, and
// every jobdrop metric of our own has a panel.
func TestDashboardUsesExposedMetrics(t *testing.T) {
	exposed := exposedMetrics(t)

	b, err := os.ReadFile("../../docs/grafana/jobdrop.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	var exprs []string
	hasDatasource := false
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
			hasDatasource = true
		}
		if q, ok := v.Query.(map[string]any); ok {
			s, _ := q["query"].(string)
			exprs = append(exprs, s)
		}
	}
	if !hasDatasource {
		t.Error("no variable named datasource of type datasource picking a Prometheus source")
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" || p.Datasource.Type != "prometheus" {
			t.Errorf("panel %q: data source %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}

	used := checkExprs(t, exposed, exprs)
	for name := range exposed {
		if strings.HasPrefix(name, Namespace+"_") && !strings.HasPrefix(name, kafkaNamespace+"_") && !used[name] {
			t.Errorf("the dashboard shows nothing of %s", name)
		}
	}
}

// exposedMetrics is every metric a node exposes once it has seen traffic.
func exposedMetrics(t *testing.T) map[string]*dto.MetricFamily {
	m := New()
	m.ObserveActiveTasks(func() int64 { return 0 })
	m.ObserveFolders(func() Folders { return Folders{} })
	m.ObserveHeldFiles(func() int { return 0 })
	m.ObservePausedByFaultPolicy(func() int64 { return 0 })
	m.ObserveSchedulerLateness(func() time.Duration { return 0 })
	m.FireRefused("MESSAGE_TOO_LARGE")
	traffic(t, m)
	return gather(t, m)
}

// TestAlertRulesUseExposedMetrics keeps deploy/alerts.yaml in step with the
// metrics: it parses as a Prometheus rule file, every rule has a name and
// an expression, and every name its expressions read is exposed.
func TestAlertRulesUseExposedMetrics(t *testing.T) {
	b, err := os.ReadFile("../../deploy/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	var exprs []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Annotations["summary"] == "" {
				t.Errorf("group %s: rule %+v lacks a name, an expression or a summary", g.Name, r)
			}
			exprs = append(exprs, r.Expr)
		}
	}
	if len(exprs) == 0 {
		t.Fatal("alerts.yaml holds no rule")
	}
	checkExprs(t, exposedMetrics(t), exprs)
}

// checkExprs checks that every metric the PromQL expressions read is
// exposed, histograms through their series, and returns the families
// read.
func checkExprs(t *testing.T, exposed map[string]*dto.MetricFamily, exprs []string) map[string]bool {
	t.Helper()
	used := map[string]bool{}
	for _, e := range exprs {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("query %q reads no metric", e)
		}
		for _, n := range names {
			family := n
			if _, ok := exposed[n]; !ok {
				// A histogram's series: name_bucket, name_sum, name_count.
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base, cut := strings.CutSuffix(n, suffix); cut && exposed[base].GetType() == dto.MetricType_HISTOGRAM {
						family = base
					}
				}
			}
			switch mf, ok := exposed[family]; {
			case !ok:
				t.Errorf("query %q reads %s, which the registry does not expose", e, n)
			case family == n && mf.GetType() == dto.MetricType_HISTOGRAM:
				t.Errorf("query %q reads histogram %s with no _bucket, _sum or _count", e, n)
			}
			used[family] = true
		}
	}
	return used
}

func TestMetricNamesOfPromQL(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`sum by (outcome) (rate(jobdrop_files_total{instance=~"$instance"}[$__rate_interval]))`, "jobdrop_files_total"},
		{`histogram_quantile(0.99, sum by (le) (rate(jobdrop_fire_lateness_seconds_bucket{outcome="go_x"}[5m])))`, "jobdrop_fire_lateness_seconds_bucket"},
		{`process_resident_memory_bytes + go_goroutines`, "process_resident_memory_bytes go_goroutines"},
		{`label_values(jobdrop_fires_total, instance)`, "jobdrop_fires_total"},
	} {
		if got := strings.Join(metricNames(tc.expr), " "); got != tc.want {
			t.Errorf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// TestKafkaClientsCountForTheProcess: kprom's counters survive the client
// that set them up and the buffered gauges follow the live clients.
func TestKafkaClientsCountForTheProcess(t *testing.T) {
	m := New()
	traffic(t, m) // every client it made is closed now
	mfs := gather(t, m)
	var produced float64
	for _, s := range mfs[kafkaNamespace+"_produce_bytes_total"].GetMetric() {
		produced += s.GetCounter().GetValue()
	}
	if produced <= 0 {
		t.Errorf("produce bytes gone with the clients: %v", mfs[kafkaNamespace+"_produce_bytes_total"])
	}
	for _, name := range []string{"produce_records", "produce_bytes", "fetch_records", "fetch_bytes"} {
		if mf, ok := mfs[kafkaNamespace+"_buffered_"+name]; !ok || mf.GetMetric()[0].GetGauge().GetValue() != 0 {
			t.Errorf("%s_buffered_%s: %v, want 0 with no client", kafkaNamespace, name, mf)
		}
	}
	for name := range mfs {
		if strings.HasPrefix(name, kpromBuffered) && strings.HasSuffix(name, "_total") {
			t.Errorf("kprom's one-client gauge %s is served", name)
		}
	}
}
