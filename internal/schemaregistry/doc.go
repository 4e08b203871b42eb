// Package schemaregistry is the schema registry jobdrop serves beside the
// embedded broker, so that light-scheduler's Avro producers need nothing
// else on a laptop: the subset of Confluent's REST API those producers and
// franz-go's pkg/sr use (register a schema under a subject, look one up
// by id, by subject and version, or by its text, list subjects and
// versions), Avro schemas only.
//
// Kafka is its source of truth, as it is the rest of jobdrop's: every
// registration is a record of a compacted topic (Confluent's _schemas by
// default, in the same key and value shapes), read back whole at start, so
// ids survive a restart. It serves one process, the one that runs the
// embedded broker; it checks no compatibility between versions and
// deletes nothing.
//
// It does not authenticate: the console that serves its routes does.
package schemaregistry
