//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package watcher

import "os"

// openFlags open an entry for reading; where there are no named pipes
// to wait on, nothing more is needed.
const openFlags = os.O_RDONLY
