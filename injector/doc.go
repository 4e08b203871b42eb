// Package injector puts a converted file into Kafka: every command of one
// file in one transaction on the input topic, together with the file's own
// audit record, so a file is injected all or nothing, and only once.
// Under the good-rows policy "all" means all of its valid rows: the invalid
// ones are left out and reported, and the audit record counts them. A file
// over its size limit is rejected before it is read. A file whose rows
// follow tasks (after) is checked whole first: each predecessor must be
// a task of the file or one that runs, and no chain may close a cycle;
// its link records go first in its transaction.
//
// It owns one transactional producer; it does not watch folders, move files
// or schedule anything.
package injector
