// Package sweep keeps the executions' view in order over time: it reaps
// executions left with no final status past their task's timeout and a
// grace after it (a FAILED status and an audit event, written to Kafka),
// and drops execution logs past their retention from the node's store.
//
// It reads the store and writes through command.Writer; it never writes an
// execution's status to the store itself: the recorder does, from the
// status topic, on every node alike.
package sweep
