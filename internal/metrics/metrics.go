package metrics

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Namespace prefixes every metric jobdrop defines.
const Namespace = "jobdrop"

// File outcomes, the values of the outcome label of jobdrop_files_total.
const (
	FileInjected  = "injected"
	FilePartial   = "partial"
	FileRejected  = "rejected"
	FileDuplicate = "duplicate"
	FileFailed    = "failed"
)

// Execution outcomes, the values of the outcome label of
// jobdrop_executions_total: the statuses the console shows.
const (
	ExecutionSuccess = "SUCCESS"
	ExecutionFailed  = "FAILED"
	ExecutionOverdue = "OVERDUE"
)

// LatenessBuckets are the bucket bounds of jobdrop_fire_lateness_seconds:
// from 1 ms, a fire on time, to 60 s, a fire an operator should hear of.
var LatenessBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// InjectionBuckets are the bucket bounds of
// jobdrop_injection_duration_seconds: a small file commits in tens of
// milliseconds, a million rows in about a minute.
var InjectionBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Metrics holds jobdrop's metrics. Its methods are safe for concurrent use.
type Metrics struct {
	reg   *prometheus.Registry
	kafka *KafkaClients

	files        *prometheus.CounterVec
	rowsAccepted prometheus.Counter
	rowsRejected prometheus.Counter
	injection    prometheus.Histogram
	fires        prometheus.Counter
	lateness     prometheus.Histogram
	executions   *prometheus.CounterVec
	recorderLag  prometheus.Gauge
	refused      *prometheus.CounterVec
	paced        prometheus.Counter

	activeOnce  sync.Once
	pausedOnce  sync.Once
	foldersOnce sync.Once
	heldOnce    sync.Once
	lateOnce    sync.Once
}

// Folders is what the watched folders of a node are doing, read at every
// scrape by ObserveFolders.
type Folders struct {
	// Stalled counts the folders that retried one file for a reason
	// outside it for longer than the node's stall threshold, or that
	// cannot be watched.
	Stalled int
	// Queued counts the stable files waiting for their turn.
	Queued int
	// OldestProcessing is how long the oldest file being handled has
	// been in .processing/; zero when none is.
	OldestProcessing time.Duration
}

// New registers every metric, the Go runtime's and the process's
// included, in a registry of its own (not the global default one, so
// tests can run several instances in one process).
func New() *Metrics {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &Metrics{reg: reg}
	m.files = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "files_total",
		Help: "Files handled, by outcome: injected, partial (valid rows injected, invalid ones left out), rejected (invalid content, nothing injected), duplicate (same content as a file injected before) or failed (not injected for another reason, such as a file that cannot be read; files waiting for the brokers are counted once done).",
	}, []string{"outcome"})
	for _, o := range []string{FileInjected, FilePartial, FileRejected, FileDuplicate, FileFailed} {
		m.files.WithLabelValues(o) // every outcome shows, at zero, from the start
	}
	m.rowsAccepted = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "rows_accepted_total",
		Help: "Rows of files injected into Kafka as task commands.",
	})
	m.rowsRejected = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "rows_rejected_total",
		Help: "Invalid rows of files, left out of a partial file or the reason a file was rejected.",
	})
	m.injection = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "injection_duration_seconds",
		Help:    "Time from a file's claim to the commit of its Kafka transaction, for injected and partial files.",
		Buckets: InjectionBuckets,
	})
	m.fires = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "fires_total",
		Help: "Occurrences fired by this node's scheduler, counted when their transaction commits.",
	})
	m.lateness = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "fire_lateness_seconds",
		Help:    "Time from an occurrence's due time to the commit of the transaction that fired it.",
		Buckets: LatenessBuckets,
	})
	m.executions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "executions_total",
		Help: "Final execution statuses recorded, by outcome: SUCCESS, FAILED, or OVERDUE for a success reported after the task's timeout. Every node records the whole cluster's executions: take the max over instances, not the sum.",
	}, []string{"outcome"})
	for _, o := range []string{ExecutionSuccess, ExecutionFailed, ExecutionOverdue} {
		m.executions.WithLabelValues(o)
	}
	m.recorderLag = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "recorder_lag_records",
		Help: "Committed records of the audit, state, executions and status topics that this node's recorder has not stored in SQLite yet, as of its last fetch.",
	})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "fires_refused_total",
		Help: "Attempts at firing an occurrence that the brokers refused for a reason of the task's own, by the brokers' error code (MESSAGE_TOO_LARGE, TOPIC_AUTHORIZATION_FAILED, POLICY_VIOLATION, …; TARGET_UNAVAILABLE: the target topic was found unusable before writing), counted when the transaction recording the occurrence FAILED commits. The other tasks fire on time; the refused one is fired again by the fault policy, then paused.",
	}, []string{"error"})
	m.paced = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "injection_paced_seconds_total",
		Help: "Time files waited for this node's scheduler to fire on time again (pacing.lateness): rising while many files land at once, injection gives way to the schedule.",
	})
	m.kafka = newKafkaClients(reg)
	f(m.files)
	f(m.rowsAccepted)
	f(m.rowsRejected)
	f(m.injection)
	f(m.fires)
	f(m.lateness)
	f(m.executions)
	f(m.recorderLag)
	f(m.refused)
	f(m.paced)
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Gatherer gathers every metric: the registry's and kprom's.
func (m *Metrics) Gatherer() prometheus.Gatherer {
	return prometheus.Gatherers{m.reg, prometheus.GathererFunc(m.kafka.gather)}
}

// Handler serves the metrics in the Prometheus exposition formats. A
// collector that fails leaves its metrics out; the rest are served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Gatherer(), promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.reg, // counts its own errors in promhttp_metric_handler_errors_total
	})
}

// KafkaClients is the hook to give every Kafka client of the process, with
// kgo.WithHooks.
func (m *Metrics) KafkaClients() *KafkaClients { return m.kafka }

// File is what became of one file, for FileDone.
type File struct {
	// Outcome is one of the File… outcomes.
	Outcome string
	// Accepted counts the rows injected; Rejected the invalid ones.
	Accepted, Rejected int
	// Took is the time from the file's claim to the commit of its
	// transaction; zero when nothing was committed.
	Took time.Duration
}

// FileDone counts a handled file and its rows.
func (m *Metrics) FileDone(f File) {
	m.files.WithLabelValues(f.Outcome).Inc()
	m.rowsAccepted.Add(float64(f.Accepted))
	m.rowsRejected.Add(float64(f.Rejected))
	if f.Took > 0 {
		m.injection.Observe(f.Took.Seconds())
	}
}

// Fired counts the occurrences of one committed transaction, scheduled at
// these epoch milliseconds, and how late each was at committed.
func (m *Metrics) Fired(scheduled []int64, committed time.Time) {
	at := committed.UnixMilli()
	for _, s := range scheduled {
		// The lateness first: a scrape between the two then never
		// shows more fires than lateness observations.
		m.lateness.Observe(float64(max(at-s, 0)) / 1000)
	}
	m.fires.Add(float64(len(scheduled)))
}

// ExecutionsDone counts final execution statuses, by outcome.
func (m *Metrics) ExecutionsDone(outcomes map[string]int) {
	for o, n := range outcomes {
		m.executions.WithLabelValues(o).Add(float64(n))
	}
}

// SetRecorderLag records how many committed records the recorder has still
// to store.
func (m *Metrics) SetRecorderLag(records int64) { m.recorderLag.Set(float64(records)) }

// ObserveActiveTasks exposes jobdrop_active_tasks, read from active at
// every scrape: the scheduler knows its task count, so it is never copied.
// Only the first call has an effect.
func (m *Metrics) ObserveActiveTasks(active func() int64) {
	m.observe(&m.activeOnce, "active_tasks",
		"Tasks of the input partitions this node's scheduler owns, as of their last committed transaction; sum over nodes for the cluster's total.",
		func() float64 { return float64(active()) })
}

// observe registers, once, a gauge read from value at every scrape: for
// what another part of jobdrop knows, so that it is never copied.
func (m *Metrics) observe(once *sync.Once, name, help string, value func() float64) {
	once.Do(func() {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, value))
	})
}

// FireRefused counts an attempt at a fire refused for its task's own
// reason, by the brokers' error code.
func (m *Metrics) FireRefused(code string) { m.refused.WithLabelValues(code).Inc() }

// ObservePausedByFaultPolicy exposes jobdrop_tasks_paused_by_fault_policy,
// read from paused at every scrape. Only the first call has an effect.
func (m *Metrics) ObservePausedByFaultPolicy(paused func() int64) {
	m.observe(&m.pausedOnce, "tasks_paused_by_fault_policy",
		"Tasks of the input partitions this node's scheduler owns that the fault policy paused, their fires refused by the brokers for a reason of their own as many times as scheduler.refused_fires.attempts allows; sum over nodes. Each stays paused until an operator resumes it.",
		func() float64 { return float64(paused()) })
}

// ObserveFolders exposes jobdrop_folders_stalled, jobdrop_files_queued and
// jobdrop_processing_oldest_seconds, read from folders at every scrape.
// Only the first call has an effect.
func (m *Metrics) ObserveFolders(folders func() Folders) {
	m.foldersOnce.Do(func() {
		for _, g := range []struct {
			name, help string
			value      func(Folders) float64
		}{
			{"folders_stalled", "Watched folders of this node that are stalled: retrying one file for a reason outside it (brokers unreachable or refusing writes, a full disk) for longer than watcher.stall_after, or that cannot be watched. Their later files wait; /readyz fails naming them.",
				func(f Folders) float64 { return float64(f.Stalled) }},
			{"files_queued", "Files of this node's watched folders found stable and waiting for their turn.",
				func(f Folders) float64 { return float64(f.Queued) }},
			{"processing_oldest_seconds", "How long the oldest file this node is handling has been in .processing/; 0 when none is.",
				func(f Folders) float64 { return f.OldestProcessing.Seconds() }},
		} {
			m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: g.name, Help: g.help},
				func() float64 { return g.value(folders()) }))
		}
	})
}

// Paced counts a wait of a file for the scheduler.
func (m *Metrics) Paced(d time.Duration) { m.paced.Add(d.Seconds()) }

// ObserveSchedulerLateness exposes jobdrop_scheduler_lateness_seconds,
// read from late at every scrape. Only the first call has an effect.
func (m *Metrics) ObserveSchedulerLateness(late func() time.Duration) {
	m.observe(&m.lateOnce, "scheduler_lateness_seconds",
		"How late this node's scheduler fires now: how long ago the earliest occurrence due and not fired yet was due; 0 when none waits. Above pacing.lateness, files wait for it.",
		func() float64 { return late().Seconds() })
}

// ObserveHeldFiles exposes jobdrop_files_held, read from held at every
// scrape. Only the first call has an effect.
func (m *Metrics) ObserveHeldFiles(held func() int) {
	m.observe(&m.heldOnce, "files_held",
		"Files of sync folders held for review because they would delete too much of what earlier versions created: they wait in held/ for an operator's Apply or Reject. Every node counts the whole cluster's: take the max over instances.",
		func() float64 { return float64(held()) })
}

// gatherFiltered gathers g and drops the families whose names start with
// prefix.
func gatherFiltered(g prometheus.Gatherer, prefix string) ([]*dto.MetricFamily, error) {
	mfs, err := g.Gather()
	out := mfs[:0]
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), prefix) {
			out = append(out, mf)
		}
	}
	return out, err
}
