// Package msgsched reads kafka-message-scheduler's schedule topics: each
// record with its scheduling headers becomes a one-shot task on jobdrop's
// input topic, fired by the engine as the record it carries (see
// internal/scheduler/message.go). It also answers the REST endpoints that
// scheduler's admin page reads.
package msgsched
