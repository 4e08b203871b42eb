package kafka

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

func TestValidateNamesTheKeyAtFault(t *testing.T) {
	certs := kafkatest.NewCerts(t)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	passFile := filepath.Join(dir, "password")
	emptyFile := filepath.Join(dir, "empty")
	for path, content := range map[string]string{notPEM: "hello", passFile: "pw\n", emptyFile: "\n"} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing.pem")
	secure := func(f func(*Config)) Config {
		c := Config{
			Brokers: []string{"kafka-1:9093"},
			TLS:     TLSConfig{Enabled: true, CAFile: certs.CAFile, CertFile: certs.CertFile, KeyFile: certs.KeyFile, ServerName: certs.ServerName},
			SASL:    SASLConfig{Mechanism: "scram-sha-512", Username: "jobdrop", PasswordFile: passFile},
		}
		if f != nil {
			f(&c)
		}
		return c.WithDefaults()
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string // every one in the error; none: valid
	}{
		{"complete", secure(nil), nil},
		{"system roots", secure(func(c *Config) { c.TLS.CAFile = "" }), nil},
		{"embedded defaults", Config{}.WithDefaults(), nil},
		{"missing CA file", secure(func(c *Config) { c.TLS.CAFile = missing }), []string{"kafka.tls.ca_file", missing}},
		{"CA file not PEM", secure(func(c *Config) { c.TLS.CAFile = notPEM }), []string{"kafka.tls.ca_file", "no PEM certificate"}},
		{"missing cert file", secure(func(c *Config) { c.TLS.CertFile = missing }), []string{"kafka.tls.cert_file", missing}},
		{"missing key file", secure(func(c *Config) { c.TLS.KeyFile = missing }), []string{"kafka.tls.key_file", missing}},
		{"key does not match", secure(func(c *Config) { c.TLS.KeyFile = notPEM }), []string{"kafka.tls.cert_file, kafka.tls.key_file"}},
		{"cert without key", secure(func(c *Config) { c.TLS.KeyFile = "" }), []string{"kafka.tls.key_file: required"}},
		{"key without cert", secure(func(c *Config) { c.TLS.CertFile = "" }), []string{"kafka.tls.cert_file: required"}},
		{"CA with TLS off", secure(func(c *Config) { c.TLS.Enabled = false }), []string{"kafka.tls.ca_file: set, but kafka.tls.enabled is false"}},
		{"TLS on the embedded broker", Config{TLS: TLSConfig{Enabled: true}}.WithDefaults(), []string{"kafka.tls.enabled", "embedded"}},
		{"SASL on the embedded broker", secure(func(c *Config) { c.Brokers, c.TLS = nil, TLSConfig{} }), []string{"kafka.sasl.mechanism", "embedded"}},
		{"unknown mechanism", secure(func(c *Config) { c.SASL.Mechanism = "GSSAPI" }), []string{"kafka.sasl.mechanism", `"GSSAPI"`}},
		{"no user name", secure(func(c *Config) { c.SASL.Username = "" }), []string{"kafka.sasl.username: required"}},
		{"no password", secure(func(c *Config) { c.SASL.PasswordFile = "" }), []string{"kafka.sasl.password: required"}},
		{"two passwords", secure(func(c *Config) { c.SASL.Password = "pw" }), []string{"kafka.sasl.password_file", "keep one"}},
		{"missing password file", secure(func(c *Config) { c.SASL.PasswordFile = missing }), []string{"kafka.sasl.password_file", missing}},
		{"empty password file", secure(func(c *Config) { c.SASL.PasswordFile = emptyFile }), []string{"kafka.sasl.password_file", "is empty"}},
		{"user without mechanism", secure(func(c *Config) { c.SASL.Mechanism = "" }), []string{"kafka.sasl.username: set, but kafka.sasl.mechanism is empty"}},
		{"more in-sync replicas than replicas", secure(func(c *Config) { c.ReplicationFactor, c.MinInsyncReplicas = 2, 3 }),
			[]string{"kafka.min_insync_replicas", "above kafka.replication_factor 2"}},
		{"replication factor below -1", secure(func(c *Config) { c.ReplicationFactor = -2 }), []string{"kafka.replication_factor"}},
		{"negative transaction timeout", secure(func(c *Config) { c.TransactionTimeout = -time.Second }), []string{"kafka.transaction_timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("valid configuration refused: %v", err)
				}
				if _, err := tc.cfg.Options([]string{"k:9092"}); err != nil {
					t.Fatalf("options: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestDefaultsCreateTopicsUnlessTold(t *testing.T) {
	if c := (Config{}).WithDefaults(); c.CreateTopics == nil || !*c.CreateTopics || !c.createsTopics() {
		t.Errorf("create_topics defaults to %v, want true", c.CreateTopics)
	}
	no := false
	if c := (Config{CreateTopics: &no}).WithDefaults(); c.createsTopics() {
		t.Error("create_topics: false was overridden by the default")
	}
}
