//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package watcher

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive advisory lock on f without waiting. It returns
// false and no error when another open file holds the lock, and an error when
// the file system cannot lock at all. The lock follows the file through
// renames and is released when f is closed.
func tryLock(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return false, nil
	default:
		return false, err
	}
}
