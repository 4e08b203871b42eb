package kafka

import (
	"errors"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Config says which Kafka to use.
type Config struct {
	// Brokers are the seed brokers of an existing cluster. Empty starts the
	// embedded broker.
	Brokers []string `yaml:"brokers"`
	// Embedded configures the embedded broker.
	Embedded EmbeddedConfig `yaml:"embedded"`
	// Partitions is the partition count of topics jobdrop creates: the input
	// and state topics share it, and it bounds how many instances share the
	// scheduling work. Defaults to 8.
	Partitions int32 `yaml:"partitions"`
	// ReplicationFactor of topics jobdrop creates. Defaults to -1, the
	// broker's default.
	ReplicationFactor int16 `yaml:"replication_factor"`
	// ClientID names this process to the brokers. Defaults to "jobdrop".
	ClientID string `yaml:"client_id"`
}

// EmbeddedConfig configures the embedded broker.
type EmbeddedConfig struct {
	// Listen is the address the broker serves the Kafka protocol on.
	// Defaults to 127.0.0.1:9092; use port 0 for a free port.
	Listen string `yaml:"listen"`
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Embedded.Listen == "" {
		c.Embedded.Listen = "127.0.0.1:9092"
	}
	if c.Partitions == 0 {
		c.Partitions = 8
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.ClientID == "" {
		c.ClientID = "jobdrop"
	}
	return c
}

// Validate reports configuration mistakes.
func (c Config) Validate() error {
	var errs []error
	if c.Partitions < 1 {
		errs = append(errs, fmt.Errorf("kafka.partitions: must be at least 1, got %d", c.Partitions))
	}
	if len(c.Brokers) == 0 {
		if _, _, err := net.SplitHostPort(c.Embedded.Listen); err != nil {
			errs = append(errs, fmt.Errorf("kafka.embedded.listen: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ClientOpts are the options every client of this process starts from.
func ClientOpts(brokers []string, clientID string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID(clientID),
	}
}
