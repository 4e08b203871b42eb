// Package arrival records a file's way through a watched folder in the
// audit trail before and after its content is injected: received,
// converting, failed or withdrawn while it arrives, and where it was moved
// once handled. Its events are produced outside any transaction, by a
// plain producer of their own, so they never wait behind a large file's
// transaction.
//
// It does not read, inject or move files; the watcher's side tells it
// what happened.
package arrival
