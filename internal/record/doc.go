// Package record defines what jobdrop writes to Kafka besides the commands
// themselves: task state, fired events, execution and status records, audit
// events and the one constructor of them (NewAudit), the header names, and
// the deterministic fire id. Every writer and every reader of a topic uses
// these types, so the formats live in one place.
//
// It holds data and encoding only: no client, no I/O.
package record
