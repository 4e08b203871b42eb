// Package store is each node's queryable view of jobdrop's Kafka topics: the
// SQLite schema and its migrations, the Recorder that copies the audit,
// state, executions and status topics into SQLite, and the queries the
// console and the injector ask.
//
// Kafka is the source of truth. The store holds nothing that cannot be
// rebuilt by reading the topics again: delete the database and restart,
// and the Recorder replays every topic from its start. To make that and
// crash recovery exact, every batch of records is applied in one SQLite
// transaction together with the offsets it advances to.
//
// The package writes only through the Recorder's apply path, besides
// dropping execution logs past their retention when the sweeper asks
// (DropLogsBefore); it never writes to Kafka and never decides anything
// about tasks.
package store
