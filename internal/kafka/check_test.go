package kafka

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// secureConfig reaches s with everything it demands.
func secureConfig(s *kafkatest.SecureCluster) Config {
	return Config{
		Brokers: s.Brokers,
		TLS:     TLSConfig{Enabled: true, CAFile: s.CAFile, CertFile: s.CertFile, KeyFile: s.KeyFile, ServerName: s.ServerName},
		SASL:    SASLConfig{Mechanism: s.Mechanism, Username: s.User, Password: s.Password},
	}.WithDefaults()
}

// topicsFor names a test's own topics, so that cases can share a cluster.
func topicsFor(t *testing.T) record.Topics {
	p := regexp.MustCompile(`[^a-zA-Z0-9._-]+`).ReplaceAllString(t.Name(), "-") + "-"
	return record.Topics{Input: p + "in", State: p + "state", Executions: p + "exec", Status: p + "status", Audit: p + "audit"}
}

func prepare(t *testing.T, c Config, topics record.Topics) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Prepare(ctx, c, c.Brokers, topics, slog.New(slog.NewTextHandler(t.Output(), nil)))
}

func TestPrepareCreatesCheckedTopicsOnSecureCluster(t *testing.T) {
	s := kafkatest.StartSecure(t)
	c := secureConfig(s)
	c.Partitions, c.MinInsyncReplicas, c.TransactionTimeout = 4, 2, time.Minute
	topics := topicsFor(t)
	if err := prepare(t, c, topics); err != nil {
		t.Fatal(err)
	}
	// Again, as a restarted instance does: every topic now exists.
	if err := prepare(t, c, topics); err != nil {
		t.Fatalf("second start: %v", err)
	}

	ctx := context.Background()
	adm := kadm.NewClient(kafkatest.Client(t, s.Brokers, s.ClientOpts()...))
	details, err := adm.ListTopics(ctx, topics.All()...)
	if err != nil {
		t.Fatal(err)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, topics.All()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range topics.All() {
		if n := len(details[name].Partitions); n != 4 {
			t.Errorf("%s has %d partitions, want 4", name, n)
		}
		if n := replicaCount(details[name]); n != 3 {
			t.Errorf("%s has %d replicas, want the broker default of 3", name, n)
		}
		want := map[string]string{"min.insync.replicas": "2", "cleanup.policy": "delete"}
		if name == topics.State {
			want["cleanup.policy"], want["retention.ms"] = "compact", "-1"
		}
		rc, err := configs.On(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, cf := range rc.Configs {
			if w, ok := want[cf.Key]; ok && cf.MaybeValue() != w {
				t.Errorf("%s has %s=%s, want %s", name, cf.Key, cf.MaybeValue(), w)
			}
		}
	}
}

// TestOptionsReachSecureClusterTransactionally proves that a
// transactional producer built on Options commits over TLS and SASL, with
// each mechanism, and that the transaction timeout of Options wins over
// the producer's own: the producer asks for more than the brokers allow,
// which would fail its first transaction if Options did not override it.
func TestOptionsReachSecureClusterTransactionally(t *testing.T) {
	s := kafkatest.StartSecure(t, kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "120000"}))
	users := append([]kafkatest.SASLUser{{Mechanism: s.Mechanism, User: s.User, Password: s.Password}}, s.Others...)
	for _, u := range users {
		t.Run(u.Mechanism, func(t *testing.T) {
			c := secureConfig(s)
			c.SASL = SASLConfig{Mechanism: u.Mechanism, Username: u.User, Password: u.Password}
			c.TransactionTimeout = time.Minute
			topics := topicsFor(t)
			if err := prepare(t, c, topics); err != nil {
				t.Fatal(err)
			}
			opts, err := c.Options(s.Brokers)
			if err != nil {
				t.Fatal(err)
			}
			prod := kafkatest.Client(t, nil, append([]kgo.Opt{kgo.TransactionalID("txn-test-" + u.Mechanism), kgo.TransactionTimeout(10 * time.Minute)}, opts...)...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = Transact(ctx, prod, func(produce func(*kgo.Record)) error {
				produce(&kgo.Record{Topic: topics.Input, Key: []byte("acme/one"), Value: []byte(u.Mechanism)})
				return nil
			}, nil)
			if err != nil {
				t.Fatalf("transaction: %v", err)
			}
			got := kafkatest.Collect(t, s.Brokers, topics.Input, s.ClientOpts()...)
			kafkatest.Eventually(t, 30*time.Second, "the committed record", func() bool { return got.Count() == 1 })
			if v := string(got.Records()[0].Value); v != u.Mechanism {
				t.Errorf("read %q, want the record written as the %s user", v, u.Mechanism)
			}
		})
	}
}

func TestPrepareSaysWhyItCannotStart(t *testing.T) {
	s := kafkatest.StartSecure(t, kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "120000"}))
	admin := kadm.NewClient(kafkatest.Client(t, s.Brokers, s.ClientOpts()...))
	create := func(t *testing.T, name string, partitions int32, rf int16, configs map[string]*string) {
		t.Helper()
		resp, err := admin.CreateTopic(context.Background(), partitions, rf, configs, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	no := false
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, c *Config, topics record.Topics)
		conn  bool     // a *ConnError
		want  []string // every one in the error
	}{
		{"wrong password", func(_ *testing.T, c *Config, _ record.Topics) { c.SASL.Password = "wrong" },
			true, []string{"SASL authentication failed for user jobdrop", "SCRAM-SHA-512"}},
		{"unknown user", func(_ *testing.T, c *Config, _ record.Topics) { c.SASL.Username = "nobody" },
			true, []string{"SASL authentication failed for user nobody"}},
		{"mechanism the user lacks", func(_ *testing.T, c *Config, _ record.Topics) { c.SASL.Mechanism = MechanismScramSHA256 },
			true, []string{"SASL authentication failed for user jobdrop (SCRAM-SHA-256)"}},
		{"wrong PLAIN password", func(_ *testing.T, c *Config, _ record.Topics) {
			c.SASL = SASLConfig{Mechanism: MechanismPlain, Username: s.Others[0].User, Password: "wrong"}
		}, true, []string{"SASL authentication failed for user jobdrop-plain (PLAIN)"}},
		{"system roots only", func(_ *testing.T, c *Config, _ record.Topics) { c.TLS.CAFile = "" },
			true, []string{"TLS handshake failed", "certificate", "kafka.tls.ca_file"}},
		{"no client certificate", func(_ *testing.T, c *Config, _ record.Topics) { c.TLS.CertFile, c.TLS.KeyFile = "", "" },
			true, []string{"TLS handshake failed", "certificate required"}},
		{"wrong server name", func(_ *testing.T, c *Config, _ record.Topics) { c.TLS.ServerName = "kafka.example.com" },
			true, []string{"TLS handshake failed", "kafka.example.com", "kafka.tls.server_name"}},
		{"no TLS", func(_ *testing.T, c *Config, _ record.Topics) { c.TLS = TLSConfig{} },
			true, []string{"closed the connection", "TLS"}},
		{"no SASL", func(_ *testing.T, c *Config, _ record.Topics) { c.SASL = SASLConfig{} },
			true, []string{"closed the connection", "SASL"}},
		{"missing topic", func(t *testing.T, c *Config, topics record.Topics) {
			c.CreateTopics = &no
			create(t, topics.Input, 8, -1, nil)
			create(t, topics.State, 8, -1, compact)
			create(t, topics.Executions, 8, -1, nil)
		}, false, []string{"-status does not exist", "kafka.create_topics is false",
			"-audit does not exist", "create it with 8 partitions"}},
		{"missing state topic follows the input's partitions", func(t *testing.T, c *Config, topics record.Topics) {
			c.CreateTopics = &no
			for _, name := range topics.All() {
				if name != topics.State {
					create(t, name, 5, -1, nil)
				}
			}
		}, false, []string{"-state does not exist", "create it with 5 partitions, cleanup.policy=compact",
			"-in has 5 partitions but kafka.partitions is 8: set kafka.partitions: 5"}},
		{"state topic not compacted", func(t *testing.T, c *Config, topics record.Topics) {
			c.CreateTopics = &no
			for _, name := range topics.All() {
				create(t, name, 8, -1, nil)
			}
		}, false, []string{"-state has cleanup.policy=delete, want cleanup.policy=compact"}},
		{"state topic compacted and deleted", func(t *testing.T, _ *Config, topics record.Topics) {
			create(t, topics.State, 8, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact,delete")})
		}, false, []string{"-state has cleanup.policy=compact,delete, want cleanup.policy=compact"}},
		{"partition counts differ", func(t *testing.T, _ *Config, topics record.Topics) {
			create(t, topics.Input, 8, -1, nil)
			create(t, topics.State, 6, -1, compact)
		}, false, []string{"-state has 6 partitions but kafka.partitions is 8"}},
		{"fewer partitions than configured", func(t *testing.T, c *Config, topics record.Topics) {
			create(t, topics.Input, 4, -1, nil)
			create(t, topics.State, 4, -1, compact)
		}, false, []string{"-in has 4 partitions but kafka.partitions is 8: set kafka.partitions: 4", "cannot change once tasks exist"}},
		{"fewer replicas than configured", func(t *testing.T, c *Config, topics record.Topics) {
			c.ReplicationFactor = 3
			create(t, topics.Audit, 8, 1, nil)
		}, false, []string{"-audit has 1 replicas of each partition but kafka.replication_factor is 3"}},
		{"fewer in-sync replicas than configured", func(t *testing.T, c *Config, topics record.Topics) {
			c.MinInsyncReplicas = 2
			create(t, topics.Audit, 8, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("1")})
		}, false, []string{"-audit has min.insync.replicas=1 but kafka.min_insync_replicas is 2"}},
		{"more in-sync replicas than replicas", func(t *testing.T, _ *Config, topics record.Topics) {
			create(t, topics.Audit, 8, 1, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
		}, false, []string{"-audit has min.insync.replicas=2 but only 1 replicas"}},
		{"transaction timeout above the brokers' limit", func(_ *testing.T, c *Config, _ record.Topics) { c.TransactionTimeout = 5 * time.Minute },
			false, []string{"kafka.transaction_timeout: 5m0s is above the brokers' transaction.max.timeout.ms (2m0s)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := secureConfig(s)
			topics := topicsFor(t)
			tc.setup(t, &c, topics)
			if err := c.Validate(); err != nil {
				t.Fatalf("the case's configuration is invalid: %v", err)
			}
			start := time.Now()
			err := prepare(t, c, topics)
			if err == nil {
				t.Fatal("prepared; want an error")
			}
			var ce *ConnError
			if errors.As(err, &ce) != tc.conn {
				t.Errorf("error %q (%T): connection error %v, want %v", err, err, !tc.conn, tc.conn)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %q came from waiting out the deadline", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			t.Logf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
}

func TestTargetTopicsFollowConfig(t *testing.T) {
	s := kafkatest.StartSecure(t)
	cl := kafkatest.Client(t, s.Brokers, s.ClientOpts()...)
	// A client of its own, whose metadata cache never saw the topics
	// missing.
	adm := kadm.NewClient(kafkatest.Client(t, s.Brokers, s.ClientOpts()...))
	ctx := context.Background()

	c := secureConfig(s)
	c.Partitions, c.MinInsyncReplicas = 2, 2
	if err := c.Targets(cl).Ensure(ctx, "made-by-jobdrop"); err != nil {
		t.Fatal(err)
	}
	details, err := adm.ListTopics(ctx, "made-by-jobdrop")
	if err != nil || len(details["made-by-jobdrop"].Partitions) != 2 {
		t.Fatalf("target topic not created with 2 partitions: %v %+v", err, details)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "made-by-jobdrop")
	if err != nil {
		t.Fatal(err)
	}
	for _, cf := range rcs[0].Configs {
		if cf.Key == "min.insync.replicas" && cf.MaybeValue() != "2" {
			t.Errorf("target topic has min.insync.replicas=%s, want 2", cf.MaybeValue())
		}
	}

	// Without creation, a missing topic is an error until an administrator
	// creates it, and then it is found without a restart.
	no := false
	c.CreateTopics = &no
	targets := c.Targets(cl)
	targets.recheck = 0
	if err := targets.Ensure(ctx, "made-later"); err == nil || !strings.Contains(err.Error(), "target topic made-later does not exist") {
		t.Fatalf("got %v, want an error naming made-later", err)
	}
	if resp, err := adm.CreateTopic(ctx, 1, -1, nil, "made-later"); err != nil || resp.Err != nil {
		t.Fatal(err, resp.Err)
	}
	kafkatest.Eventually(t, 30*time.Second, "made-later to be found", func() bool { return targets.Ensure(ctx, "made-later") == nil })
}

// TestPrepareWhenAnotherInstanceCreatesTheTopics has a second instance
// create the topics between this one finding them missing and creating
// them, as when two instances start together on a new cluster.
func TestPrepareWhenAnotherInstanceCreatesTheTopics(t *testing.T) {
	s := kafkatest.StartSecure(t)
	topics := topicsFor(t)
	opts, err := secureConfig(s).Options(s.Brokers)
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(kafkatest.Client(t, nil, opts...))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// This instance's client learns that the topics are missing…
	if _, err := adm.ListTopics(ctx, topics.All()...); err != nil {
		t.Fatal(err)
	}
	// …then the other instance creates them.
	other := kafkatest.Client(t, s.Brokers, s.ClientOpts()...)
	if err := EnsureTopics(ctx, other, topics, 3, -1); err != nil {
		t.Fatal(err)
	}
	if err := prepareTopics(ctx, adm, topics, secureConfig(s), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("second instance: %v", err)
	}
}
