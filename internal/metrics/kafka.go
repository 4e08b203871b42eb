package metrics

import (
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"
)

// kafkaNamespace prefixes kprom's metrics: jobdrop_kafka_produce_bytes_total.
const kafkaNamespace = Namespace + "_kafka"

// KafkaClients is a kgo hook for every Kafka client of the process. It
// feeds kprom's counters (connections, bytes read and written, bytes
// produced and fetched by topic), summed over all clients, and tracks the
// live clients for the buffered-records gauges.
//
// kprom alone serves one client: it registers its metrics when a client
// is created and unregisters them when it closes. jobdrop creates many
// clients, some short-lived, all from one set of options, so kprom here
// is set up once, by the first client, and never torn down; its buffered
// gauges, bound to that first client, are replaced by ones summed over
// the live clients.
type KafkaClients struct {
	prom *kprom.Metrics
	reg  *prometheus.Registry // kprom's own
	once sync.Once

	mu   sync.Mutex
	live map[*kgo.Client]struct{}
}

var (
	_ kgo.HookNewClient           = (*KafkaClients)(nil)
	_ kgo.HookClientClosed        = (*KafkaClients)(nil)
	_ kgo.HookBrokerConnect       = (*KafkaClients)(nil)
	_ kgo.HookBrokerDisconnect    = (*KafkaClients)(nil)
	_ kgo.HookBrokerThrottle      = (*KafkaClients)(nil)
	_ kgo.HookBrokerE2E           = (*KafkaClients)(nil)
	_ kgo.HookProduceBatchWritten = (*KafkaClients)(nil)
	_ kgo.HookFetchBatchRead      = (*KafkaClients)(nil)
)

// kpromBuffered starts the names of kprom's per-client buffer gauges,
// which are left out.
const kpromBuffered = kafkaNamespace + "_buffered_"

func newKafkaClients(reg *prometheus.Registry) *KafkaClients {
	own := prometheus.NewRegistry()
	k := &KafkaClients{
		prom: kprom.NewMetrics(kafkaNamespace, kprom.Registry(own)),
		reg:  own,
		live: map[*kgo.Client]struct{}{},
	}
	for _, g := range []struct {
		name, help string
		value      func(*kgo.Client) int64
	}{
		{"produce_records", "Records buffered in the Kafka clients, not yet acknowledged by the brokers.", (*kgo.Client).BufferedProduceRecords},
		{"produce_bytes", "Bytes of the records buffered in the Kafka clients, not yet acknowledged by the brokers.", (*kgo.Client).BufferedProduceBytes},
		{"fetch_records", "Records fetched by the Kafka clients and not yet polled.", (*kgo.Client).BufferedFetchRecords},
		{"fetch_bytes", "Bytes of the records fetched by the Kafka clients and not yet polled.", (*kgo.Client).BufferedFetchBytes},
	} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: kafkaNamespace, Name: "buffered_" + g.name, Help: g.help,
		}, func() float64 { return float64(k.sum(g.value)) }))
	}
	return k
}

// sum adds value over the live clients.
func (k *KafkaClients) sum(value func(*kgo.Client) int64) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	var n int64
	for cl := range k.live {
		n += value(cl)
	}
	return n
}

func (k *KafkaClients) gather() ([]*dto.MetricFamily, error) {
	return gatherFiltered(k.reg, kpromBuffered)
}

// OnNewClient sets kprom up with the first client and tracks every client.
func (k *KafkaClients) OnNewClient(cl *kgo.Client) {
	k.once.Do(func() { k.prom.OnNewClient(cl) })
	k.mu.Lock()
	k.live[cl] = struct{}{}
	k.mu.Unlock()
}

// OnClientClosed forgets a closed client. kprom's counters stay: they
// count for the process, not for one client.
func (k *KafkaClients) OnClientClosed(cl *kgo.Client) {
	k.mu.Lock()
	delete(k.live, cl)
	k.mu.Unlock()
}

// OnBrokerConnect counts connections and connection errors.
func (k *KafkaClients) OnBrokerConnect(meta kgo.BrokerMetadata, d time.Duration, conn net.Conn, err error) {
	k.prom.OnBrokerConnect(meta, d, conn, err)
}

// OnBrokerDisconnect counts closed connections.
func (k *KafkaClients) OnBrokerDisconnect(meta kgo.BrokerMetadata, conn net.Conn) {
	k.prom.OnBrokerDisconnect(meta, conn)
}

// OnBrokerThrottle observes broker throttling, when kprom is set to.
func (k *KafkaClients) OnBrokerThrottle(meta kgo.BrokerMetadata, d time.Duration, after bool) {
	k.prom.OnBrokerThrottle(meta, d, after)
}

// OnBrokerE2E counts bytes read and written and read and write errors.
func (k *KafkaClients) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	k.prom.OnBrokerE2E(meta, key, e2e)
}

// OnProduceBatchWritten counts bytes produced, by topic.
func (k *KafkaClients) OnProduceBatchWritten(meta kgo.BrokerMetadata, topic string, partition int32, m kgo.ProduceBatchMetrics) {
	k.prom.OnProduceBatchWritten(meta, topic, partition, m)
}

// OnFetchBatchRead counts bytes fetched, by topic.
func (k *KafkaClients) OnFetchBatchRead(meta kgo.BrokerMetadata, topic string, partition int32, m kgo.FetchBatchMetrics) {
	k.prom.OnFetchBatchRead(meta, topic, partition, m)
}
