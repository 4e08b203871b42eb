package watcher

import (
	"errors"
	"os"
)

// errNotRegular is openRegular's error for an entry that turned out not to
// be a regular file once opened.
var errNotRegular = errors.New("not a regular file")

// openRegular opens the file at path for reading without ever waiting
// (see openFlags): a named pipe or a symbolic link put there since the
// entry was checked fails at once. It fails with errNotRegular for
// anything but a regular file.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	return f, nil
}
