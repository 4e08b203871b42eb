package watcher

import (
	"context"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// moveWatch hears of files renamed into the folders (inotify's
// IN_MOVED_TO), which fsnotify reports as a plain Create, the same as a
// file opened to be written in place. A file renamed in was complete
// before it arrived, so it is taken at once.
type moveWatch struct {
	fd   int // for adding watches; Fd() would put file in blocking mode
	file *os.File
	mu   sync.Mutex
	wds  map[int32]*folder
}

// newMoveWatch opens the inotify instance, or returns nil when it cannot:
// files then wait for the stability checks, as every other file.
func newMoveWatch() *moveWatch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	return &moveWatch{fd: fd, file: os.NewFile(uintptr(fd), "inotify"), wds: map[int32]*folder{}}
}

// add watches f's folder; adding it again, as refresh does after the
// folder was replaced, is harmless.
func (m *moveWatch) add(f *folder) {
	if m == nil {
		return
	}
	wd, err := unix.InotifyAddWatch(m.fd, f.dir, unix.IN_MOVED_TO|unix.IN_ONLYDIR)
	if err != nil {
		return
	}
	m.mu.Lock()
	m.wds[int32(wd)] = f
	m.mu.Unlock()
}

// run reads the events until ctx is done and tells each folder the names
// renamed into it.
func (m *moveWatch) run(ctx context.Context) {
	if m == nil {
		return
	}
	stop := context.AfterFunc(ctx, func() { _ = m.file.Close() })
	defer stop()
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := m.file.Read(buf)
		if err != nil {
			// Closed at the end, or broken: files still arrive through
			// fsnotify, and wait for the stability checks.
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameAt := off + unix.SizeofInotifyEvent
			end := nameAt + int(ev.Len)
			if end > n {
				break
			}
			name := cString(buf[nameAt:end])
			off = end
			if ev.Mask&unix.IN_MOVED_TO == 0 || ev.Mask&unix.IN_ISDIR != 0 || name == "" {
				continue
			}
			m.mu.Lock()
			f := m.wds[ev.Wd]
			m.mu.Unlock()
			if f != nil {
				f.signal(func() {
					f.touched[name] = struct{}{}
					f.movedIn[name] = struct{}{}
				})
			}
		}
	}
}

// cString is the NUL-padded name of an inotify event.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
