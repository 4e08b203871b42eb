// Package storetype holds the rows the store answers with: files (batches),
// tasks, executions, audit events and the dashboard summary, plus the
// filter and error values its queries take and return.
//
// It exists so that readers of the store, the web console above all, can
// name these types without importing the store itself and with it SQLite
// and the Kafka client: it depends on the standard library only and does
// no I/O.
package storetype
