package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Broker is the embedded single-node Kafka-protocol broker, persisted under
// a directory so committed records survive restarts.
type Broker struct {
	cluster *kfake.Cluster
}

// StartEmbedded starts the embedded broker listening on listen, keeping its
// data in dir.
func StartEmbedded(dir, listen string, log *slog.Logger) (*Broker, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.DataDir(dir),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, listen)
		}),
		kfake.BrokerConfigs(map[string]string{
			// Compact the state topic every ten minutes rather than hourly.
			"log.cleaner.backoff.ms": "600000",
		}),
		kfake.WithLogger(kfakeLogger{log}),
	)
	if err != nil {
		return nil, fmt.Errorf("embedded broker on %s: %w", listen, err)
	}
	return &Broker{cluster: c}, nil
}

// Addrs are the addresses clients connect to.
func (b *Broker) Addrs() []string { return b.cluster.ListenAddrs() }

// Close stops the broker, flushing its data to disk.
func (b *Broker) Close() { b.cluster.Close() }

type kfakeLogger struct{ log *slog.Logger }

func (l kfakeLogger) Logf(level kfake.LogLevel, msg string, args ...any) {
	if level > kfake.LogLevelWarn {
		return
	}
	lv := slog.LevelWarn
	if level == kfake.LogLevelError {
		lv = slog.LevelError
	}
	l.log.Log(context.Background(), lv, fmt.Sprintf(msg, args...))
}
