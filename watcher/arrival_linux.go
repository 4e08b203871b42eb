package watcher

import (
	"io/fs"
	"syscall"
	"time"
)

// arrivedWhole reports whether fi is a file that shows it came whole: a
// hard link to a file that is elsewhere too (ln), or one whose inode
// changed after its data last did (ctime after mtime), as a tool that sets
// the times once it has written leaves it (cp -p, mv across file systems,
// scp -p, rsync). A file written in place has both times set by each
// write, so it never shows it while written, and waits for the stability
// checks. (A rename may leave both times equal when it follows the last
// write closely: the folder hears of renames from inotify instead.)
func arrivedWhole(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return false
	}
	ctime := time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	return st.Nlink > 1 || ctime.After(fi.ModTime())
}
