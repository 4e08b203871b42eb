// Command jobdrop moves a batch schedule onto Kafka: it watches folders for
// job lists, injects each file into Kafka in one transaction, fires every
// task exactly once and serves a web console.
//
// This package reads the configuration (config*.go: YAML, then JOBDROP_…
// variables, then defaults and validation) and connects the parts: the
// embedded broker or a cluster, the watcher, the intake and the injector,
// the scheduler engine, the recorder and its store, the sweeper, the
// message-scheduler bridge and the console (app.go). It decides nothing
// the parts own: what becomes of a file is internal/intake's, what is
// fired when is internal/scheduler's. Besides `run` it holds the commands
// users type once: convert, inject, diff and hash-password.
package main
