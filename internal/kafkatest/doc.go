// Package kafkatest starts throwaway Kafka-protocol clusters for tests and
// reads topics back as a downstream consumer would: read_committed.
package kafkatest
