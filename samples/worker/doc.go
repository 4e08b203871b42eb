// Command worker is a sample executor for jobdrop: it consumes the events
// jobdrop fires into a target topic, runs each one, and reports how it went
// so the console shows the execution RUNNING, then SUCCESS or FAILED.
//
// It is meant to be read and copied. It speaks only the public formats:
// the fired event (JSON, with the scheduler-* headers) on the target topic,
// and the status report, either as a record on the status topic or as a
// POST to the console's /api/executions/{fireId}/status.
//
//	worker -brokers 127.0.0.1:9092 -topic batch-jobs            # log each event, report over Kafka
//	worker -brokers 127.0.0.1:9092 -topic batch-jobs -run       # also run data.command with sh -c
//	worker ... -from start                                      # a new group also runs what fired before
//	worker ... -report http -console http://127.0.0.1:8080 -user ops -password-file ops.pw
//
// Delivery to a worker is at least once: a worker that dies before
// committing its offsets gets the same events again. The fire id is the
// same for every copy of an occurrence, so a worker that must not run a
// job twice keeps the fire ids it has run (this sample keeps the last
// ones in memory).
package main
