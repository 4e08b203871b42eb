//go:build !linux

package watcher

// renameNoReplace renames src to dst, failing with an error that matches
// fs.ErrExist if dst exists, and fs.ErrNotExist if src does not. Outside
// Linux the check and the rename are two steps; the lock on the claimed file
// still keeps two watchers off the same file.
func renameNoReplace(src, dst string) error { return renameChecked(src, dst) }
