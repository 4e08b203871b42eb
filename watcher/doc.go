// Package watcher owns the watched folders: it notices job list files dropped
// into them (fsnotify events, an initial scan and a periodic rescan for events
// that were missed or overflowed), waits until a file has stopped changing,
// claims it with an atomic rename into the folder's .processing/ subfolder,
// hands it to a Handler, and then moves it to archive/ (handled) or failed/
// (with NAME.errors.txt holding the handler's error).
//
// Layout of every watched folder:
//
//	DIR/              files are dropped here
//	DIR/.processing/  claimed files while they are handled, and after a crash
//	DIR/archive/      handled files; NAME.errors.txt beside one handled in part
//	DIR/failed/       rejected files, each beside NAME.errors.txt
//
// Only regular files directly in a folder are input. Hidden names (".x"),
// lock files ("~x") and names ending in .tmp, .part, .crdownload, .swp or
// .errors.txt are never touched, so a tool can write "jobs.csv.part" and
// rename it to "jobs.csv" when done. Every other entry is checked once,
// before it is claimed, and refused with a RefusedError when it is not a
// regular file (a symbolic link, wherever it points, a named pipe, a
// socket, a device), when it cannot be read, or when its name holds
// control characters, is not UTF-8 or is longer than MaxNameBytes: it is
// moved to failed/ beside NAME.errors.txt, never opened (reading a named
// pipe would wait for a writer). A subfolder is left where it is and
// reported once. Names are shown in logs and reports by DisplayName.
//
// A file the Handler cannot handle for a reason outside it (RetryError),
// or one that cannot be moved (a full disk), stays in .processing/ and is
// tried again until it works; the folder's later files wait behind it.
//
// Per folder, Folder.Poll replaces events by frequent scans (network shares
// send none), Folder.MinAge holds files back until they are old enough, and
// Folder.DoneMarker waits for a NAME.done marker from the sender.
//
// Several watchers, in one process or in several, may watch the same folder:
// the claim is a rename that never replaces an existing file, and the claimed
// file stays locked (flock) while it is handled, so no file is handled by two
// of them at once.
//
// The package must not know what a file contains: it neither parses files nor
// talks to Kafka; converting and injecting is the Handler's business. It never
// deletes or overwrites a dropped file: a name taken in archive/ or failed/
// gets a UTC timestamp before its extension (jobs.20261122T101500Z.csv). The
// one exception: the NAME.done marker of a handled file is removed.
package watcher
