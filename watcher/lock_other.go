//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package watcher

import (
	"errors"
	"os"
)

// tryLock reports that locking is unsupported here; claims then rely on the
// rename alone.
func tryLock(*os.File) (bool, error) { return false, errors.New("file locks unsupported") }
