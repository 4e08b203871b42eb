package kafka

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Config says which Kafka to use and how to reach it.
type Config struct {
	// Brokers are the seed brokers of an existing cluster. Empty starts the
	// embedded broker.
	Brokers []string `yaml:"brokers"`
	// Embedded configures the embedded broker.
	Embedded EmbeddedConfig `yaml:"embedded"`
	// TLS secures the connections to Brokers. The embedded broker speaks
	// plaintext only, so TLS requires Brokers.
	TLS TLSConfig `yaml:"tls"`
	// SASL authenticates to Brokers. It requires Brokers, as TLS does.
	SASL SASLConfig `yaml:"sasl"`
	// SchemaRegistry resolves the schemas of light-scheduler's Avro
	// commands and events.
	SchemaRegistry SchemaRegistryConfig `yaml:"schema_registry"`
	// Partitions is the partition count of topics jobdrop creates: the input
	// and state topics share it, and it bounds how many instances share the
	// scheduling work. Defaults to 8.
	Partitions int32 `yaml:"partitions"`
	// ReplicationFactor of topics jobdrop creates. Defaults to -1, the
	// broker's default.
	ReplicationFactor int16 `yaml:"replication_factor"`
	// MinInsyncReplicas is set as min.insync.replicas on the topics jobdrop
	// creates: how many replicas must have a write before it counts, since
	// every producer of jobdrop waits for all in-sync replicas. Defaults to
	// 0, the broker's default.
	MinInsyncReplicas int16 `yaml:"min_insync_replicas"`
	// CreateTopics lets jobdrop create the topics it needs (its own and the
	// target topics of tasks) when they are missing. Clusters that forbid
	// it get their topics made by their administrators, and jobdrop only
	// checks them at start. Defaults to true.
	CreateTopics *bool `yaml:"create_topics"`
	// TransactionTimeout is how long the brokers give a transaction of the
	// injector or the scheduler before aborting it. It must not exceed
	// the brokers' transaction.max.timeout.ms. Defaults to 0, which keeps
	// each producer's own: 5m for the injector, whose large files take
	// minutes to write, 30s for the scheduler.
	TransactionTimeout time.Duration `yaml:"transaction_timeout"`
	// ClientID names this process to the brokers. Defaults to "jobdrop".
	ClientID string `yaml:"client_id"`
}

// EmbeddedConfig configures the embedded broker.
type EmbeddedConfig struct {
	// Listen is the address the broker serves the Kafka protocol on.
	// Defaults to 127.0.0.1:9092; use port 0 for a free port.
	Listen string `yaml:"listen"`
	// CompactionInterval is how often the broker compacts the state topic
	// (and any other topic whose cleanup.policy is compact), keeping the
	// latest record of each key, and applies topics' retention. Defaults
	// to 10m.
	CompactionInterval time.Duration `yaml:"compaction_interval"`
}

// TLSConfig secures the connections to the brokers.
type TLSConfig struct {
	// Enabled dials the brokers with TLS.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM file of the CAs that sign the brokers' certificates.
	// Empty trusts the system's roots.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the PEM certificate and key jobdrop shows
	// to brokers that authenticate clients by certificate. Both or
	// neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name the brokers' certificates must hold. Empty:
	// the host of the address dialled.
	ServerName string `yaml:"server_name"`
}

// SASLConfig authenticates jobdrop to the brokers.
type SASLConfig struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty turns
	// SASL off. PLAIN sends the password as it is: use it with TLS.
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	// Password, or PasswordFile: a file holding it (one trailing line
	// break is ignored), so that the secret need not sit in the
	// configuration. One of them.
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
}

// SASL mechanisms jobdrop speaks.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Embedded.Listen == "" {
		c.Embedded.Listen = "127.0.0.1:9092"
	}
	c.Embedded.CompactionInterval = cmp.Or(c.Embedded.CompactionInterval, defaultCompactionInterval)
	if c.Partitions == 0 {
		c.Partitions = 8
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.CreateTopics == nil {
		yes := true
		c.CreateTopics = &yes
	}
	if c.ClientID == "" {
		c.ClientID = "jobdrop"
	}
	c.SASL.Mechanism = strings.ToUpper(strings.TrimSpace(c.SASL.Mechanism))
	return c
}

// createsTopics reports whether jobdrop may create missing topics; unset
// means yes, as the default says.
func (c Config) createsTopics() bool { return c.CreateTopics == nil || *c.CreateTopics }

// embedded reports whether c is for the embedded broker: no brokers of
// an existing cluster.
func (c Config) embedded() bool { return len(c.Brokers) == 0 }

// Validate reports configuration mistakes, reading the files named by
// the TLS and SASL settings so that a wrong path shows before any
// connection is tried.
func (c Config) Validate() error {
	var errs []error
	if c.Partitions < 1 {
		errs = append(errs, fmt.Errorf("kafka.partitions: must be at least 1, got %d", c.Partitions))
	}
	if c.ReplicationFactor < -1 || c.ReplicationFactor == 0 {
		errs = append(errs, fmt.Errorf("kafka.replication_factor: want -1 (broker default) or at least 1, got %d", c.ReplicationFactor))
	}
	if c.MinInsyncReplicas < 0 {
		errs = append(errs, fmt.Errorf("kafka.min_insync_replicas: must not be negative, got %d", c.MinInsyncReplicas))
	} else if c.ReplicationFactor > 0 && c.MinInsyncReplicas > c.ReplicationFactor {
		errs = append(errs, fmt.Errorf("kafka.min_insync_replicas: %d is above kafka.replication_factor %d, so no write could ever be acknowledged",
			c.MinInsyncReplicas, c.ReplicationFactor))
	}
	if c.TransactionTimeout < 0 {
		errs = append(errs, fmt.Errorf("kafka.transaction_timeout: %s: must not be negative", c.TransactionTimeout))
	} else if c.TransactionTimeout > 0 && c.TransactionTimeout < time.Second {
		errs = append(errs, fmt.Errorf("kafka.transaction_timeout: %s is too short for any transaction: want at least 1s", c.TransactionTimeout))
	}
	if len(c.Brokers) == 0 {
		if _, _, err := net.SplitHostPort(c.Embedded.Listen); err != nil {
			errs = append(errs, fmt.Errorf("kafka.embedded.listen: %w", err))
		}
		if c.Embedded.CompactionInterval < 0 {
			errs = append(errs, fmt.Errorf("kafka.embedded.compaction_interval: %s: must not be negative", c.Embedded.CompactionInterval))
		}
		if c.TLS.Enabled {
			errs = append(errs, errors.New("kafka.tls.enabled: the embedded broker speaks plaintext only: set kafka.brokers to use TLS"))
		}
		if c.SASL.Mechanism != "" {
			errs = append(errs, errors.New("kafka.sasl.mechanism: the embedded broker does not authenticate: set kafka.brokers to use SASL"))
		}
	}
	errs = append(errs, c.TLS.validate(), c.SASL.validate(), c.SchemaRegistry.validate())
	return errors.Join(errs...)
}

func (t TLSConfig) validate() error { return t.validateAt("kafka.tls") }

// validateAt checks t, found at prefix in the configuration.
func (t TLSConfig) validateAt(prefix string) error {
	if !t.Enabled {
		return setWithout(prefix+".enabled is false", prefix+".",
			"ca_file", t.CAFile, "cert_file", t.CertFile, "key_file", t.KeyFile, "server_name", t.ServerName)
	}
	_, err := t.configAt(prefix)
	return err
}

// config loads the files of t into a TLS client configuration. Errors name
// the key of the file at fault.
func (t TLSConfig) config() (*tls.Config, error) { return t.configAt("kafka.tls") }

// configAt is config for t found at prefix in the configuration.
func (t TLSConfig) configAt(prefix string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	var errs []error
	if t.CAFile != "" {
		b, err := os.ReadFile(t.CAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.ca_file: %w", prefix, err))
		} else {
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(b) {
				errs = append(errs, fmt.Errorf("%s.ca_file: %s holds no PEM certificate", prefix, t.CAFile))
			}
		}
	}
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		errs = append(errs, fmt.Errorf("%[1]s.key_file: required with %[1]s.cert_file", prefix))
	case t.CertFile == "" && t.KeyFile != "":
		errs = append(errs, fmt.Errorf("%[1]s.cert_file: required with %[1]s.key_file", prefix))
	case t.CertFile != "":
		cert, cerr := os.ReadFile(t.CertFile)
		if cerr != nil {
			errs = append(errs, fmt.Errorf("%s.cert_file: %w", prefix, cerr))
		}
		key, kerr := os.ReadFile(t.KeyFile)
		if kerr != nil {
			errs = append(errs, fmt.Errorf("%s.key_file: %w", prefix, kerr))
		}
		if cerr == nil && kerr == nil {
			pair, err := tls.X509KeyPair(cert, key)
			if err != nil {
				errs = append(errs, fmt.Errorf("%[1]s.cert_file, %[1]s.key_file: %[2]s, %[3]s: %[4]w", prefix, t.CertFile, t.KeyFile, err))
			}
			tc.Certificates = []tls.Certificate{pair}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return tc, nil
}

func (s SASLConfig) validate() error {
	if s.Mechanism == "" {
		return setWithout("kafka.sasl.mechanism is empty", "kafka.sasl.",
			"username", s.Username, "password", s.Password, "password_file", s.PasswordFile)
	}
	_, err := s.mechanism()
	return err
}

// setWithout reports the keys among keyValues (key, value, key, value…)
// that are set although why makes them meaningless: a CA file with TLS off
// would otherwise be silently ignored.
func setWithout(why, prefix string, keyValues ...string) error {
	var errs []error
	for i := 0; i+1 < len(keyValues); i += 2 {
		if keyValues[i+1] != "" {
			errs = append(errs, fmt.Errorf("%s%s: set, but %s", prefix, keyValues[i], why))
		}
	}
	return errors.Join(errs...)
}

// mechanism builds the SASL mechanism, reading the password file. Errors
// name the key at fault.
func (s SASLConfig) mechanism() (sasl.Mechanism, error) {
	var errs []error
	switch s.Mechanism {
	case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
	default:
		errs = append(errs, fmt.Errorf("kafka.sasl.mechanism: %q is not %s, %s or %s", s.Mechanism, MechanismPlain, MechanismScramSHA256, MechanismScramSHA512))
	}
	if s.Username == "" {
		errs = append(errs, errors.New("kafka.sasl.username: required with kafka.sasl.mechanism"))
	}
	pass := s.Password
	switch {
	case s.Password != "" && s.PasswordFile != "":
		errs = append(errs, errors.New("kafka.sasl.password_file: set, and so is kafka.sasl.password: keep one"))
	case s.PasswordFile != "":
		b, err := os.ReadFile(s.PasswordFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("kafka.sasl.password_file: %w", err))
			break
		}
		pass = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if pass == "" {
			errs = append(errs, fmt.Errorf("kafka.sasl.password_file: %s is empty", s.PasswordFile))
		}
	case s.Password == "":
		errs = append(errs, errors.New("kafka.sasl.password: required with kafka.sasl.mechanism (or kafka.sasl.password_file)"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	switch s.Mechanism {
	case MechanismPlain:
		return plain.Auth{User: s.Username, Pass: pass}.AsMechanism(), nil
	case MechanismScramSHA256:
		return scram.Auth{User: s.Username, Pass: pass}.AsSha256Mechanism(), nil
	default:
		return scram.Auth{User: s.Username, Pass: pass}.AsSha512Mechanism(), nil
	}
}

// Options are the options every client of this process starts from, so
// that every client reaches the brokers the same way: the seed brokers
// (Brokers, or the embedded broker's addresses), the client id, TLS, SASL
// and the transaction timeout of the transactional producers. Clients add
// their own options before these; kgo applies options in order, so the
// transaction timeout set here wins over a producer's own.
func (c Config) Options(brokers []string) ([]kgo.Opt, error) {
	c = c.WithDefaults()
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID(c.ClientID),
		// Fetch sessions (KIP-227) save little to consumers that read a
		// few partitions each, as jobdrop's do, and closing a consumer
		// whose session is live races, inside kgo v1.22.2, with a fetch
		// started by a metadata update under way: runners close theirs
		// at every rebalance.
		kgo.DisableFetchSessions(),
	}
	if c.TLS.Enabled {
		tc, err := c.TLS.config()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if c.SASL.Mechanism != "" {
		m, err := c.SASL.mechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	if c.TransactionTimeout > 0 {
		opts = append(opts, kgo.TransactionTimeout(c.TransactionTimeout))
	}
	return opts, nil
}

// ClientOpts are the options of a client of a plaintext cluster without
// authentication, as the embedded broker and test clusters are. It is
// Options of a Config that only names the client.
func ClientOpts(brokers []string, clientID string) []kgo.Opt {
	opts, _ := Config{ClientID: clientID}.Options(brokers) // cannot fail without TLS or SASL
	return opts
}
