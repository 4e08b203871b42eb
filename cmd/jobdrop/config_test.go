package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// yamlPaths lists every key path of t, as "kafka.embedded.listen".
func yamlPaths(t reflect.Type, prefix string) []string {
	var out []string
	for _, f := range yamlFields(t) {
		name := strings.TrimPrefix(prefix+"."+f.name, ".")
		ft := f.typ
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.String() != "time.Duration" {
			out = append(out, yamlPaths(ft, name)...)
			continue
		}
		out = append(out, name)
	}
	return out
}

func nodePaths(n *yaml.Node, prefix string, out map[string]bool) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			nodePaths(c, prefix, out)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := strings.TrimPrefix(prefix+"."+n.Content[i].Value, ".")
			out[p] = true
			nodePaths(n.Content[i+1], p, out)
		}
	}
}

func TestSampleConfigDocumentsEveryKey(t *testing.T) {
	path := filepath.Join("..", "..", "samples", "jobdrop.yaml")
	if _, err := loadConfig(path, nil); err != nil {
		t.Fatalf("the sample does not load: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	nodePaths(&doc, "", documented)
	for _, p := range yamlPaths(reflect.TypeFor[Config](), "") {
		if !documented[p] {
			t.Errorf("samples/jobdrop.yaml does not document %s", p)
		}
	}
}

func TestConfigRejectsUnknownKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	yml := "console:\n  listn: 127.0.0.1:1\nwatch:\n  - dir: ./in\n  - dir: ./other\n    polcy: good_rows\n"
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := loadConfig(path, nil)
	for _, want := range []string{
		"line 2: console.listn: unknown key (did you mean listen?); console takes listen, users, secure_cookies",
		"line 6: watch[1].polcy: unknown key (did you mean policy?)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error saying %q", err, want)
		}
	}
	_, err = loadConfig("", []string{"JOBDROP_CONSOLE_LISTN=x"})
	if err == nil || !strings.Contains(err.Error(), "JOBDROP_CONSOLE_LISTN") {
		t.Fatalf("got %v, want an error naming JOBDROP_CONSOLE_LISTN", err)
	}
}

func TestEnvironmentOverridesEveryKind(t *testing.T) {
	cfg, err := loadConfig("", []string{
		"JOBDROP_KAFKA_BROKERS=k1:9092, k2:9092",
		"JOBDROP_KAFKA_PARTITIONS=3",
		"JOBDROP_WATCHER_RESCAN=5s",
		"JOBDROP_WATCH_1_DIR=/srv/drop",
		"JOBDROP_WATCH_1_DEFAULTS_HOST=acme",
		"JOBDROP_WATCH_1_MAPPING_JOB_NAME=name",
		"PATH=/bin",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Kafka.Brokers, []string{"k1:9092", "k2:9092"}) || cfg.Kafka.Partitions != 3 ||
		cfg.Watcher.Rescan.String() != "5s" || len(cfg.Watch) != 2 || cfg.Watch[0].Dir != "./inbox" ||
		cfg.Watch[1].Dir != "/srv/drop" || cfg.Watch[1].Defaults.Host != "acme" || cfg.Watch[1].Mapping["job_name"] != "name" {
		t.Fatalf("overrides not applied: %+v", cfg)
	}
	if _, err := loadConfig("", []string{"JOBDROP_KAFKA_PARTITIONS=many"}); err == nil {
		t.Fatal("a non-number partition count was accepted")
	}
}

func TestConvertPreviewsFireTimes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.csv")
	if err := os.WriteFile(path, []byte("host,name,topic,start,timeUnit,time\n"+
		"acme,every-6h,jobs,2026-03-01 08:00,HOURS,6\nacme,bad,jobs,,DECADES,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := mainErr(context.Background(), []string{"convert", path, "--preview", "3", "--from", "2026-03-01T09:00:00Z"}, &stdout, &stderr)
	var exit exitError
	if !errors.As(err, &exit) || exit != 1 {
		t.Fatalf("exit %v, want status 1 for the bad row", err)
	}
	var got struct {
		Name      string   `json:"name"`
		NextFires []string `json:"nextFires"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("stdout %q: %v", stdout.String(), err)
	}
	want := []string{"2026-03-01T14:00:00Z", "2026-03-01T20:00:00Z", "2026-03-02T02:00:00Z"}
	if got.Name != "every-6h" || !slices.Equal(got.NextFires, want) {
		t.Errorf("got %+v, want every-6h firing at %v", got, want)
	}
	if !strings.Contains(stderr.String(), "row 3: column timeUnit") {
		t.Errorf("stderr %q does not name row 3's timeUnit", stderr.String())
	}
}

// TestConvertRefusesWhatADropWould: the dry run applies the checks a
// drop applies beyond each row's own: a task twice in one file, a task
// firing into jobdrop's own topics.
func TestConvertRefusesWhatADropWould(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.csv")
	if err := os.WriteFile(path, []byte("host,name,topic\nacme,twice,jobs\nacme,twice,jobs\nacme,audit,light-scheduler-audit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := mainErr(context.Background(), []string{"convert", path}, &stdout, &stderr)
	var exit exitError
	if !errors.As(err, &exit) || exit != 1 {
		t.Fatalf("exit %v, want status 1", err)
	}
	for _, want := range []string{"row 3: column name: value \"twice\": task acme/twice appears again (first at row 2)",
		"row 4: column topic: value \"light-scheduler-audit\": is jobdrop's audit topic", "2 invalid rows"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
}

func TestKafkaSecurityFromYAMLAndEnvironment(t *testing.T) {
	certs := kafkatest.NewCerts(t)
	dir := t.TempDir()
	password := filepath.Join(dir, "password")
	if err := os.WriteFile(password, []byte("pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("kafka:\n  brokers: [k1:9093]\n  create_topics: false\n"+
		"  tls: {enabled: true, ca_file: "+certs.CAFile+"}\n"+
		"  sasl: {mechanism: SCRAM-SHA-256, username: jobdrop, password_file: "+password+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, []string{
		"JOBDROP_KAFKA_TLS_CERT_FILE=" + certs.CertFile,
		"JOBDROP_KAFKA_TLS_KEY_FILE=" + certs.KeyFile,
		"JOBDROP_KAFKA_MIN_INSYNC_REPLICAS=2",
		"JOBDROP_KAFKA_TRANSACTION_TIMEOUT=2m",
	})
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Kafka
	if *k.CreateTopics || !k.TLS.Enabled || k.TLS.CAFile != certs.CAFile || k.TLS.CertFile != certs.CertFile ||
		k.SASL.Mechanism != "SCRAM-SHA-256" || k.SASL.PasswordFile != password || k.MinInsyncReplicas != 2 ||
		k.TransactionTimeout != 2*time.Minute {
		t.Fatalf("not applied: %+v", k)
	}
	cfg, err = loadConfig(path, []string{"JOBDROP_KAFKA_CREATE_TOPICS=true"})
	if err != nil || !*cfg.Kafka.CreateTopics {
		t.Fatalf("JOBDROP_KAFKA_CREATE_TOPICS=true did not win over the file: %v", err)
	}
	if cfg, err := loadConfig("", nil); err != nil || !*cfg.Kafka.CreateTopics {
		t.Fatalf("create_topics does not default to true: %v", err)
	}
	if _, err := loadConfig("", []string{"JOBDROP_KAFKA_CREATE_TOPICS=maybe"}); err == nil || !strings.Contains(err.Error(), "JOBDROP_KAFKA_CREATE_TOPICS") {
		t.Fatalf("got %v, want an error naming JOBDROP_KAFKA_CREATE_TOPICS", err)
	}
	missing := filepath.Join(dir, "missing.pem")
	_, err = loadConfig(path, []string{"JOBDROP_KAFKA_TLS_CA_FILE=" + missing})
	if err == nil || !strings.Contains(err.Error(), "kafka.tls.ca_file") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("got %v, want an error naming kafka.tls.ca_file and %s", err, missing)
	}
}

// TestCommandsRefuseWhatIsNotAFile: convert and inject given a named pipe
// or a folder say so at once, rather than wait for a writer.
func TestCommandsRefuseWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "jobs.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"convert", fifo}, {"inject", fifo}, {"convert", dir}} {
		done := make(chan error, 1)
		go func() { done <- mainErr(context.Background(), args, io.Discard, io.Discard) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%v: %v, want a refusal naming what it is", args, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%v still waiting after 30s", args)
		}
	}
}

// TestCommandsReadFilesAsTheWatchedFolderWould converts a file kept
// outside the inbox: the only watched folder's settings (defaults,
// encoding) apply, as they would to a drop.
func TestCommandsReadFilesAsTheWatchedFolderWould(t *testing.T) {
	t.Setenv("JOBDROP_WATCH_0_DIR", filepath.Join(t.TempDir(), "inbox"))
	t.Setenv("JOBDROP_WATCH_0_DEFAULTS_HOST", "acme")
	t.Setenv("JOBDROP_WATCH_0_DEFAULTS_TOPIC", "batch-jobs")
	t.Setenv("JOBDROP_WATCH_0_CSV_ENCODING", "windows-1252")
	path := filepath.Join(t.TempDir(), "export.csv")
	if err := os.WriteFile(path, []byte("name;start\nCl\xf4ture;2026-03-01 08:00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := mainErr(context.Background(), []string{"convert", path}, &stdout, &stderr); err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr.String())
	}
	var got struct{ Host, Name, Topic string }
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("stdout %q: %v", stdout.String(), err)
	}
	if got.Host != "acme" || got.Name != "Clôture" || got.Topic != "batch-jobs" {
		t.Errorf("got %+v, want acme/Clôture on batch-jobs", got)
	}
}

// TestInjectSaysWhenNoBrokerAnswers runs inject with no jobdrop running:
// it must say where it looked, not wait.
func TestInjectSaysWhenNoBrokerAnswers(t *testing.T) {
	t.Setenv("JOBDROP_KAFKA_EMBEDDED_LISTEN", kafkatest.ClosedAddr(t))
	t.Setenv("JOBDROP_DATA_DIR", t.TempDir())
	path := filepath.Join(t.TempDir(), "jobs.csv")
	if err := os.WriteFile(path, []byte("host,name,topic\nacme,once,batch-jobs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := mainErr(context.Background(), []string{"inject", path}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no Kafka broker answered at") || !strings.Contains(err.Error(), "jobdrop run") {
		t.Errorf("inject with no broker: %v, want it to say no broker answered and where", err)
	}
}

// TestConvertRefusesTheChainsInjectRefuses: the dry run checks the chains
// a drop checks, but for the running tasks it cannot ask about: a
// predecessor the file deletes, and a cycle; a name outside the file is
// left unchecked, which a warning says, naming the file's task it may
// have meant. The rows come from an exec converter that prints the file
// as it is.
func TestConvertRefusesTheChainsInjectRefuses(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "jobdrop.yaml")
	if err := os.WriteFile(conf, []byte("watch:\n  - dir: "+filepath.Join(dir, "inbox")+"\n    converter: exec\n    exec:\n      program: cat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	def := func(name, after string) string {
		d := `{"host":"acme","name":"` + name + `","topic":"jobs"`
		if after == "" {
			return d + `,"cron":"0 1 * * *"}` + "\n"
		}
		return d + `,"after":` + after + "}\n"
	}
	for _, tc := range []struct {
		name, rows string
		want       []string // on stderr
		ok         bool     // exit status 0, the definitions on stdout
	}{
		{"a chain", def("extract", "") + def("load", `["extract"]`) + def("report", `["load","other/audit"]`),
			[]string{"warning: jobs.jsonl: row 3: column after: predecessor other/audit is not in the file and was not checked: no task store to ask whether it runs\n"}, true},
		{"a name close to one of the file", def("extract", "") + def("load", `["extract"]`) + def("report", `["laod"]`),
			[]string{"warning: jobs.jsonl: row 3: column after: predecessor acme/laod is not in the file and was not checked: no task store to ask whether it runs; did you mean load?"}, true},
		{"a predecessor the file deletes", def("extract", "") + `{"host":"acme","name":"old","action":"DELETE"}` + "\n" + def("load", `["extract","old"]`),
			[]string{`row 3: column after: value "old": predecessor acme/old is deleted by row 2 of the file`, "1 invalid row"}, false},
		{"a cycle", def("a", `["b"]`) + def("b", `["a"]`),
			[]string{"jobs.jsonl: column after: the chains close a cycle, acme/a → acme/b → acme/a (acme/a at row 1, acme/b at row 2)"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "jobs.jsonl")
			if err := os.WriteFile(path, []byte(tc.rows), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			err := mainErr(context.Background(), []string{"convert", "--config", conf, path}, &stdout, &stderr)
			if tc.ok {
				if err != nil || strings.Count(stdout.String(), "\n") != 3 {
					t.Fatalf("exit %v, stderr %q, stdout %q; want the three definitions", err, stderr.String(), stdout.String())
				}
			} else if exit := exitError(0); !errors.As(err, &exit) || exit != 1 {
				t.Fatalf("exit %v, want status 1; stderr %q", err, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
		})
	}
}

// TestInjectWithoutADatabaseSaysWhatItLeftUnchecked: jobdrop inject
// beside no node's database cannot ask whether the tasks a file follows
// outside it run: it injects the file with its links, and says which
// predecessors it left unchecked.
func TestInjectWithoutADatabaseSaysWhatItLeftUnchecked(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	topics := record.Topics{}.WithDefaults()
	if err := kafka.EnsureTopics(context.Background(), kafkatest.Client(t, brokers), topics, 1, -1); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("JOBDROP_KAFKA_BROKERS", strings.Join(brokers, ","))
	t.Setenv("JOBDROP_DATA_DIR", filepath.Join(dir, "data"))
	t.Setenv("JOBDROP_WATCH_0_DIR", filepath.Join(dir, "inbox"))
	t.Setenv("JOBDROP_WATCH_0_CONVERTER", "exec")
	t.Setenv("JOBDROP_WATCH_0_EXEC_PROGRAM", "cat")
	path := filepath.Join(dir, "jobs.jsonl")
	if err := os.WriteFile(path, []byte(`{"host":"acme","name":"load","topic":"jobs","cron":"0 1 * * *"}`+"\n"+
		`{"host":"acme","name":"report","topic":"jobs","after":["load","extract"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := mainErr(context.Background(), []string{"inject", path}, &stdout, &stderr); err != nil {
		t.Fatalf("inject: %v; stderr %q", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "jobs.jsonl: injected, 2 rows, 0 rejected") ||
		stderr.String() != "warning: jobs.jsonl: row 2: column after: predecessor acme/extract is not in the file and was not checked: no task store to ask whether it runs\n" {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	var links []string
	for _, rec := range kafkatest.Drain(t, brokers, topics.Input) {
		for _, h := range rec.Headers {
			if h.Key == record.HeaderLink {
				links = append(links, string(rec.Key))
			}
		}
	}
	if slices.Sort(links); !slices.Equal(links, []string{"acme/extract", "acme/load"}) {
		t.Errorf("links keyed by %q, want acme/extract and acme/load", links)
	}
}

// TestFireAheadStaysWithinTheTransactionTimeout: a transaction written
// ahead stays open from its lead to its due time, so scheduler.fire_ahead
// may be at most a third of the transaction timeout, the scheduler's own
// (30s) or kafka.transaction_timeout.
func TestFireAheadStaysWithinTheTransactionTimeout(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string // in the error; empty: none
	}{
		{nil, ""},
		{[]string{"JOBDROP_SCHEDULER_FIRE_AHEAD=10s"}, ""},
		{[]string{"JOBDROP_SCHEDULER_FIRE_AHEAD=11s"}, "scheduler.fire_ahead: 11s is over a third of the scheduler's transaction timeout (30s, kafka.transaction_timeout)"},
		{[]string{"JOBDROP_KAFKA_TRANSACTION_TIMEOUT=3s", "JOBDROP_SCHEDULER_FIRE_AHEAD=2s"}, "scheduler.fire_ahead: 2s is over a third of the scheduler's transaction timeout (3s"},
		{[]string{"JOBDROP_KAFKA_TRANSACTION_TIMEOUT=3s"}, ""}, // the default is kept within it
		{[]string{"JOBDROP_SCHEDULER_FIRE_AHEAD=-1s"}, ""},
	} {
		_, err := loadConfig("", tc.env)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: got %v, want an error saying %q", tc.env, err, tc.want)
		}
	}
}
