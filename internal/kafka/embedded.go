package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Broker is the embedded single-node Kafka-protocol broker, persisted under
// a directory so committed records survive restarts. It compacts its
// compacted topics itself (see compact.go).
type Broker struct {
	cluster *kfake.Cluster
	dir     string
	client  *kgo.Client // sets compaction rounds off

	compactStop chan struct{}      // closed by Close
	compactDone chan struct{}      // closed when compactEvery returns
	compacted   chan compactResult // a round's outcome
	armed       atomic.Bool        // a round's control function waits for its request
	compactMu   sync.Mutex         // held by a round under way
	closing     atomic.Bool
	closeOnce   sync.Once
}

// cleanStop names the file a broker leaves in its directory when it stops
// cleanly; without it, the last stop cut transactions off.
const cleanStop = "jobdrop-clean-stop"

// StartEmbedded starts the embedded broker as cfg says, keeping its data
// in dir. After a stop that was not clean (the process killed, the
// machine down), it first undoes a compaction the stop cut off and ends
// the transactions it cut off.
func StartEmbedded(dir string, cfg EmbeddedConfig, log *slog.Logger) (*Broker, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	held, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	err = os.Remove(filepath.Join(dir, cleanStop))
	unclean := errors.Is(err, fs.ErrNotExist) && len(held) > 0
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	restored, err := undoCutCompaction(dir)
	if len(restored) > 0 {
		log.Warn("compaction cut off by an unclean stop undone: the partitions are as they were before it", "partitions", restored)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded broker: undo a compaction cut off by an unclean stop: %w", err)
	}
	listen := cfg.Listen
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.DataDir(dir),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, listen)
		}),
		// Any session timeout from a second to half an hour, where
		// Kafka's default floor is 6s: a single node has no network to
		// be patient with.
		kfake.GroupMinSessionTimeout(time.Second),
		kfake.GroupMaxSessionTimeout(30*time.Minute),
		// The Broker compacts, not kfake.
		kfake.BrokerConfigs(compactionOff),
		kfake.WithLogger(&kfakeLogger{log: log}),
	)
	if err != nil {
		return nil, fmt.Errorf("embedded broker on %s: %w", listen, err)
	}
	b := &Broker{cluster: c, dir: dir, compactStop: make(chan struct{}), compactDone: make(chan struct{}),
		compacted: make(chan compactResult, 1)}
	if unclean {
		if err := b.repair(log); err != nil {
			c.Close()
			return nil, fmt.Errorf("embedded broker: after an unclean stop: %w", err)
		}
	}
	if b.client, err = kgo.NewClient(kgo.SeedBrokers(b.Addrs()...)); err != nil {
		c.Close()
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	go b.compactEvery(cmp.Or(cfg.CompactionInterval, defaultCompactionInterval), log)
	return b, nil
}

func (b *Broker) repair(log *slog.Logger) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), repairVersions)
	if err != nil {
		return err
	}
	defer cl.Close()
	start := time.Now()
	cut, err := repairCutTransactions(context.Background(), cl)
	for _, c := range cut {
		log.Warn("transaction cut off by an unclean stop ended with an abort marker",
			"topic", c.topic, "partition", c.partition, "producer_id", c.producerID, "first_offset", c.first)
	}
	log.Info("checked transactions after an unclean stop", "cut_off", len(cut), "duration_ms", time.Since(start).Milliseconds())
	return err
}

// Addrs are the addresses clients connect to.
func (b *Broker) Addrs() []string { return b.cluster.ListenAddrs() }

// Close stops the broker, flushing its data to disk, and marks the stop
// clean. A compaction under way is finished first.
func (b *Broker) Close() {
	b.closeOnce.Do(b.close)
}

func (b *Broker) close() {
	// A round under way is done first; one set off later does nothing.
	b.compactMu.Lock()
	b.closing.Store(true)
	b.compactMu.Unlock()
	close(b.compactStop)
	<-b.compactDone
	b.client.Close()
	b.cluster.Close()
	_ = os.WriteFile(filepath.Join(b.dir, cleanStop), nil, 0o644)
}

// storageLogEvery is how often, at most, the broker's failures to write
// its data are logged: on a full disk every write fails, and each would
// be a line.
const storageLogEvery = time.Minute

// kfakeLogger passes the broker's warnings and errors on, collapsing its
// failures to write its data to one line a minute.
type kfakeLogger struct {
	log *slog.Logger

	mu         sync.Mutex
	lastFailed time.Time // when a failure to write was last logged
	suppressed int       // failures to write not logged since
}

func (l *kfakeLogger) Logf(level kfake.LogLevel, msg string, args ...any) {
	if level > kfake.LogLevelWarn {
		return
	}
	text := fmt.Sprintf(msg, args...)
	if storageFailure(text) {
		l.mu.Lock()
		if now := time.Now(); now.Sub(l.lastFailed) >= storageLogEvery {
			n := l.suppressed
			l.lastFailed, l.suppressed = now, 0
			l.mu.Unlock()
			l.log.Error("embedded broker cannot write its data: writes to it fail until it can",
				"err", text, "failures_not_logged", n, "next_log_in", storageLogEvery)
			return
		}
		l.suppressed++
		l.mu.Unlock()
		return
	}
	lv := slog.LevelWarn
	if level == kfake.LogLevelError {
		lv = slog.LevelError
	}
	l.log.Log(context.Background(), lv, text)
}

// storageFailure reports whether a message of the broker says it could
// not write its data (a full disk, say).
func storageFailure(text string) bool {
	return strings.HasPrefix(text, "persist") || strings.Contains(text, "failed to persist") ||
		strings.HasPrefix(text, "save session state")
}
