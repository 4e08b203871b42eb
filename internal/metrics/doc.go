// Package metrics owns jobdrop's Prometheus registry and every metric in
// it: files, rows, injection latency, active tasks, fires and their
// lateness, execution outcomes, the recorder's lag, the Kafka clients'
// traffic (through kprom) and the Go runtime and process.
//
// The parts that do the work (injector, scheduler, store) do not import
// this package or Prometheus: each offers a small hook in its Config, and
// cmd/jobdrop feeds those hooks into the methods here. docs/metrics.md
// lists the metrics and what to alert on; docs/grafana/jobdrop.json is a
// dashboard built on them, and a test keeps the two in step.
package metrics
