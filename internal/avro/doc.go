// Package avro reads and writes light-scheduler's Avro records: the
// TaskDefinitionKey and TaskDefinition schemas of its producers, in
// Confluent's framing (a zero magic byte, then the schema id in four
// bytes, big-endian), with the schemas resolved through a
// Confluent-compatible schema registry.
//
// It is the one package that imports github.com/hamba/avro, whose version
// is pinned: no other package encodes or parses Avro. It knows nothing of
// Kafka topics or of the engine: it turns bytes into a task.Definition and
// back.
package avro
