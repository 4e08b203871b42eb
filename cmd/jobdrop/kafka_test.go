package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestRunOnSecureCluster runs jobdrop against three brokers that demand
// TLS with a client certificate and SCRAM, the password read from a file,
// and reads the fired event back as a downstream consumer would.
func TestRunOnSecureCluster(t *testing.T) {
	s := kafkatest.StartSecure(t)
	password := filepath.Join(t.TempDir(), "kafka-password")
	if err := os.WriteFile(password, []byte(s.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := startInstanceEnv(t, append(s.Env(),
		"JOBDROP_KAFKA_SASL_PASSWORD_FILE="+password,
		"JOBDROP_KAFKA_TLS_SERVER_NAME="+s.ServerName,
		"JOBDROP_KAFKA_MIN_INSYNC_REPLICAS=2",
		"JOBDROP_KAFKA_TRANSACTION_TIMEOUT=1m",
	), s.Brokers...)
	fired := kafkatest.Collect(t, s.Brokers, "batch-jobs", s.ClientOpts()...)

	at := in.clock.Now().Add(time.Second)
	in.drop("jobs.csv", "host,name,topic,start,data.command\nacme,secure-once,batch-jobs,"+at.UTC().Format(time.RFC3339)+",/opt/run.sh\n")
	in.waitFile("archive", "jobs.csv")
	in.advanceTo(at)
	kafkatest.Eventually(t, 60*time.Second, "the fired event", func() bool { return fired.Count() >= 1 })
	in.stop()

	recs := fired.Records()
	events := kafkatest.Decode[record.Fired](t, recs)
	if len(events) != 1 || string(recs[0].Key) != "acme/secure-once" || events[0].ScheduledAt != at.UnixMilli() ||
		events[0].Data["command"] != "/opt/run.sh" {
		t.Fatalf("read %d events, want one of acme/secure-once at %s: %+v", len(events), at, events)
	}

	// The topics jobdrop made carry the settings it was given.
	adm := kadm.NewClient(kafkatest.Client(t, s.Brokers, s.ClientOpts()...))
	configs, err := adm.DescribeTopicConfigs(context.Background(), in.cfg.Topics.All()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range in.cfg.Topics.All() {
		rc, err := configs.On(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, cf := range rc.Configs {
			if cf.Key == "min.insync.replicas" && cf.MaybeValue() != "2" ||
				cf.Key == "cleanup.policy" && name == in.cfg.Topics.State && cf.MaybeValue() != "compact" {
				t.Errorf("%s has %s=%s", name, cf.Key, cf.MaybeValue())
			}
		}
	}
}

// TestRunRefusesClusterItCannotUse starts jobdrop against a cluster it
// cannot work with and expects an error that says why, at once rather
// than after the connection timeout.
func TestRunRefusesClusterItCannotUse(t *testing.T) {
	s := kafkatest.StartSecure(t)
	admin := kadm.NewClient(kafkatest.Client(t, s.Brokers, s.ClientOpts()...))
	create := func(t *testing.T, name string, configs map[string]*string) {
		t.Helper()
		resp, err := admin.CreateTopic(context.Background(), 8, -1, configs, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	for _, tc := range []struct {
		name  string
		env   []string
		setup func(t *testing.T, topics record.Topics)
		conn  bool // a *kafka.ConnError
		want  func(topics record.Topics) []string
	}{
		{
			name: "wrong password",
			env:  []string{"JOBDROP_KAFKA_SASL_PASSWORD=not-" + s.Password},
			conn: true,
			want: func(record.Topics) []string {
				return []string{"kafka at [", "SASL authentication failed for user jobdrop"}
			},
		},
		{
			name: "client without the CA",
			env:  []string{"JOBDROP_KAFKA_SASL_PASSWORD=" + s.Password, "JOBDROP_KAFKA_TLS_CA_FILE="},
			conn: true,
			want: func(record.Topics) []string { return []string{"kafka at [", "TLS handshake failed", "certificate"} },
		},
		{
			name: "state topic not compacted",
			env:  []string{"JOBDROP_KAFKA_SASL_PASSWORD=" + s.Password, "JOBDROP_KAFKA_CREATE_TOPICS=false"},
			setup: func(t *testing.T, topics record.Topics) {
				for _, name := range topics.All() {
					create(t, name, nil)
				}
			},
			want: func(topics record.Topics) []string {
				return []string{"topic " + topics.State + " has cleanup.policy=delete", "want cleanup.policy=compact"}
			},
		},
		{
			name: "missing topic",
			env:  []string{"JOBDROP_KAFKA_SASL_PASSWORD=" + s.Password, "JOBDROP_KAFKA_CREATE_TOPICS=false"},
			setup: func(t *testing.T, topics record.Topics) {
				create(t, topics.Input, nil)
				create(t, topics.State, compact)
				create(t, topics.Executions, nil)
				create(t, topics.Status, nil)
			},
			want: func(topics record.Topics) []string {
				return []string{"topic " + topics.Audit + " does not exist", "kafka.create_topics is false", "create it with 8 partitions"}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := strings.ReplaceAll(tc.name, " ", "-") + "-"
			topics := record.Topics{Input: prefix + "in", State: prefix + "state", Executions: prefix + "exec", Status: prefix + "status", Audit: prefix + "audit"}
			if tc.setup != nil {
				tc.setup(t, topics)
			}
			env := append(s.Env(),
				"JOBDROP_TOPICS_INPUT="+topics.Input, "JOBDROP_TOPICS_STATE="+topics.State,
				"JOBDROP_TOPICS_EXECUTIONS="+topics.Executions, "JOBDROP_TOPICS_STATUS="+topics.Status,
				"JOBDROP_TOPICS_AUDIT="+topics.Audit)
			start := time.Now()
			err := runRefused(t, append(env, tc.env...))
			if err == nil {
				t.Fatal("run returned no error")
			}
			var refused *kafka.ConnError
			if errors.As(err, &refused) != tc.conn {
				t.Errorf("error %q: connection refused %v, want %v", err, !tc.conn, tc.conn)
			}
			if strings.Contains(err.Error(), "did not answer") {
				t.Errorf("error %q blames silence", err)
			}
			for _, w := range tc.want(topics) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			t.Logf("refused after %s: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
}

// runRefused runs jobdrop on temporary folders with env and returns what
// run returned; starting at all fails the test.
func runRefused(t *testing.T, env []string) error {
	t.Helper()
	dir := t.TempDir()
	cfg, err := loadConfig("", append([]string{
		"JOBDROP_DATA_DIR=" + filepath.Join(dir, "data"),
		"JOBDROP_NODE=test",
		"JOBDROP_CONSOLE_LISTEN=127.0.0.1:0",
		"JOBDROP_WATCH_0_DIR=" + filepath.Join(dir, "inbox"),
	}, env...))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), hooks{started: func(started) {
		t.Error("jobdrop started")
		cancel()
	}})
}
