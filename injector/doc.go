// Package injector puts a converted file into Kafka: every command of one
// file in one transaction on the input topic, together with the file's own
// audit record, so a file is injected all or nothing, and only once.
// Under the good-rows policy "all" means all of its valid rows: the invalid
// ones are left out and reported, and the audit record counts them. A file
// over its size limit is rejected before it is read.
//
// It owns one transactional producer; it does not watch folders, move files
// or schedule anything.
package injector
