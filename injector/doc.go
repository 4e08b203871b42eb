// Package injector puts a converted file into Kafka: every command of one
// file in one transaction on the input topic, together with the file's own
// audit record, so a file is injected all or nothing, and only once.
//
// It owns one transactional producer; it does not watch folders, move files
// or schedule anything.
package injector
