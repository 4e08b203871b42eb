// Package bench measures jobdrop's file path end to end: a job list dropped
// into a watched folder, claimed by the watcher, converted, and committed
// in one transaction by the injector to the embedded broker, beside kcat
// producing the same number of records of the same size to the same
// broker. It holds no code jobdrop runs; run.sh prints the figures as a
// table (make bench), and docs/benchmarks.md publishes them.
package bench
