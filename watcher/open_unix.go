//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package watcher

import (
	"os"
	"syscall"
)

// openFlags open an entry for reading without waiting: O_NONBLOCK opens a
// named pipe at once instead of waiting for a writer, and O_NOFOLLOW
// refuses a symbolic link (ELOOP).
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOFOLLOW
