// Package storetest fills a store through its own apply path, as the
// recorder would from Kafka, for the tests and benchmarks of what reads
// it: the console above all. It writes nothing to Kafka and starts no
// engine; what it fills is a view of records no topic holds.
package storetest
