// Package command writes what the console, the API and the sweeper change
// outside files: task commands on the input topic, workers' status reports
// and log lines, reaped executions and audit events, each write in one
// Kafka transaction of its own transactional producer, so none waits
// behind a file being injected.
//
// Record is the one shape of a task command on the input topic; the
// injector builds its files' commands with it too. The package does not
// read files, watch folders or schedule anything.
package command
