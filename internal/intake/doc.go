// Package intake takes the files the watcher claims to the injector and
// decides what becomes of each once the injector answers: archived,
// archived beside the report of the rows left out, failed, held for an
// operator, or kept in .processing/ to be tried again when Kafka did not
// take it. It records each file's way in the audit trail as it goes
// (received, converting, failed, withdrawn, moved) and remembers who
// uploaded a file through the console, so that its batch names them. Its
// Reviewer carries out an operator's Apply or Reject of a held file.
//
// It implements watcher.Handler and the watcher's observers; it does not
// watch folders, move files or write transactions itself: the watcher
// moves what it decides, the injector injects.
package intake
