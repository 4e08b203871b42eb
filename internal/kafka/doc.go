// Package kafka owns how jobdrop reaches Kafka: client options, the topics
// it creates and checks, and the embedded Kafka-protocol broker used when no
// brokers are configured.
//
// It knows nothing of tasks or files; packages that read and write records
// build their clients from the options it gives.
package kafka
