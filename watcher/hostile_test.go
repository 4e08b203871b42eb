//go:build linux

package watcher

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// logTo returns a logger that writes text lines to a buffer the test can
// read, and to the test's output.
func logTo(t *testing.T) (*syncBuffer, *slog.Logger) {
	logs := &syncBuffer{}
	return logs, slog.New(slog.NewTextHandler(io.MultiWriter(logs, t.Output()), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// listenUnix leaves a bound Unix socket at path, as a server would.
func listenUnix(t *testing.T, path string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
}

// mknodNull makes a character device like /dev/null at path, if the test
// may (it needs CAP_MKNOD).
func mknodNull(t *testing.T, path string) bool {
	t.Helper()
	err := unix.Mknod(path, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3)))
	if err != nil {
		t.Logf("no device file: %v", err)
	}
	return err == nil
}

// failedReport waits for failed/name and its report, and returns the
// report.
func failedReport(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, FailedDir, name)
	waitFor(t, "failed/"+DisplayName(name)+" and its report", func() bool {
		return exists(path) && exists(path+ErrorsSuffix)
	})
	return read(t, path+ErrorsSuffix)
}

// TestEntriesThatAreNotRegularFilesAreRefused drops links (to a file in
// the folder, to one outside, dangling, looping), a named pipe, a socket
// and a device file, half before the watcher starts and half after: each
// is moved to failed/ unopened beside a report saying what it is, while
// regular files around them, here and in another folder, are handled.
func TestEntriesThatAreNotRegularFilesAreRefused(t *testing.T) {
	dir, other, outside := t.TempDir(), t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.csv")
	write(t, secret, "host,name\nsecret,row\n")
	write(t, filepath.Join(dir, "target.csv"), "target")

	type refusedEntry struct {
		name string
		make func(path string) bool
		mode fs.FileMode
		want string
	}
	entries := []refusedEntry{
		{"inside.csv", func(p string) bool { symlink(t, "target.csv", p); return true }, fs.ModeSymlink,
			`a symbolic link (to "target.csv"), not a regular file: links are not followed`},
		{"outside.csv", func(p string) bool { symlink(t, secret, p); return true }, fs.ModeSymlink,
			`a symbolic link (to "` + secret + `")`},
		{"dangling.csv", func(p string) bool { symlink(t, "missing.csv", p); return true }, fs.ModeSymlink,
			`a symbolic link (to "missing.csv")`},
		{"loop.csv", func(p string) bool { symlink(t, "loop.csv", p); return true }, fs.ModeSymlink,
			`a symbolic link (to "loop.csv")`},
		{"pipe.csv", func(p string) bool { mkfifo(t, p); return true }, fs.ModeNamedPipe,
			"a named pipe (FIFO), not a regular file: it is not read"},
		{"socket.csv", func(p string) bool { listenUnix(t, p); return true }, fs.ModeSocket,
			"a socket, not a regular file"},
		{"device.csv", func(p string) bool { return mknodNull(t, p) }, fs.ModeDevice | fs.ModeCharDevice,
			"a device file, not a regular file"},
	}
	var made []refusedEntry
	for i, e := range entries {
		if i%2 == 0 && e.make(filepath.Join(dir, e.name)) {
			made = append(made, e)
		}
	}

	obs := &observer{}
	start(t, fastConfig(dir, other), obs, nil)
	for i, e := range entries {
		if i%2 == 1 && e.make(filepath.Join(dir, e.name)) {
			made = append(made, e)
		}
	}
	// Dropped after them all: by the time these are handled, the pipe
	// has been looked at, and nothing waited on it.
	write(t, filepath.Join(dir, "good.csv"), "good")
	write(t, filepath.Join(other, "other.csv"), "other")
	for _, p := range []string{filepath.Join(dir, ArchiveDir, "good.csv"), filepath.Join(other, ArchiveDir, "other.csv"),
		filepath.Join(dir, ArchiveDir, "target.csv")} {
		waitFor(t, p, func() bool { return exists(p) })
	}

	for _, e := range made {
		report := failedReport(t, dir, e.name)
		if want := e.name + ": not taken: " + e.want; !strings.HasPrefix(report, want) {
			t.Errorf("%s: report %q, want it to start with %q", e.name, report, want)
		}
		fi, err := os.Lstat(filepath.Join(dir, FailedDir, e.name))
		if err != nil || fi.Mode().Type() != e.mode {
			t.Errorf("failed/%s: %v, %v; want the entry itself, of type %v", e.name, fi, err, e.mode)
		}
		if exists(filepath.Join(dir, e.name)) {
			t.Errorf("%s still in the folder", e.name)
		}
		waitFor(t, "the observer to hear "+e.name+" refused", func() bool {
			return slices.ContainsFunc(obs.seen(), func(ev string) bool { return strings.HasPrefix(ev, "refused "+e.name+": ") })
		})
	}
	got := obs.names()
	slices.Sort(got)
	if !slices.Equal(got, []string{"good.csv", "other.csv", "target.csv"}) {
		t.Errorf("handled %v, want good.csv, other.csv and target.csv only", got)
	}
	for _, c := range obs.got() {
		if c.Content == read(t, secret) {
			t.Errorf("%s was handed over with the content of the file outside the folder", c.File.Name)
		}
	}
	if got := read(t, secret); got != "host,name\nsecret,row\n" {
		t.Errorf("the file outside the folder changed: %q", got)
	}
	for _, ev := range obs.seen() {
		if strings.HasPrefix(ev, "seen ") && !slices.Contains([]string{"seen good.csv", "seen other.csv", "seen target.csv"}, ev) {
			t.Errorf("observer told %q: only regular files are announced", ev)
		}
	}
}

// TestSubfolderIsLeftAloneAndReportedOnce: a folder dropped into a watched
// folder is not entered, moved or read; it is reported once (log and
// observer), however many rescans see it, while a subfolder that is a
// watched folder itself, and the folder's own subfolders, are not
// reported at all.
func TestSubfolderIsLeftAloneAndReportedOnce(t *testing.T) {
	dir := t.TempDir()
	team := filepath.Join(dir, "team")
	logs, log := logTo(t)
	obs := &observer{}
	// Polled: every file below is found by a scan, so each one archived
	// after the previous one proves the folder was scanned again.
	cfg := fastConfig(team)
	cfg.Folders = append(cfg.Folders, Folder{Dir: dir, Poll: true, PollInterval: testRescan})
	start(t, cfg, obs, log)

	dropped := filepath.Join(dir, "jobs-2026")
	if err := os.Mkdir(dropped, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dropped, "inner.csv"), "inner")
	waitFor(t, "jobs-2026 reported", func() bool { return strings.Contains(logs.String(), "subfolder is not watched") })
	for _, name := range []string{"first.csv", "second.csv", "third.csv"} {
		write(t, filepath.Join(dir, name), name)
		waitFor(t, "archive/"+name, func() bool { return exists(filepath.Join(dir, ArchiveDir, name)) })
	}
	write(t, filepath.Join(team, "team.csv"), "team")
	waitFor(t, "team/archive/team.csv", func() bool { return exists(filepath.Join(team, ArchiveDir, "team.csv")) })

	var reported []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "subfolder is not watched") {
			reported = append(reported, line)
		}
	}
	if len(reported) != 1 || !strings.Contains(reported[0], "level=WARN") || !strings.Contains(reported[0], "file=jobs-2026") ||
		!strings.Contains(reported[0], "jobs-2026: not taken: a folder: only files directly in a watched folder are taken") {
		t.Errorf("log lines about subfolders: %q; want one warning naming jobs-2026 and why", reported)
	}
	var refused []string
	for _, ev := range obs.seen() {
		if strings.HasPrefix(ev, "refused ") {
			refused = append(refused, ev)
		}
	}
	if len(refused) != 1 || !strings.HasPrefix(refused[0], "refused jobs-2026: a folder") {
		t.Errorf("observer heard %q, want jobs-2026 refused once", refused)
	}
	if got := read(t, filepath.Join(dropped, "inner.csv")); got != "inner" {
		t.Errorf("jobs-2026/inner.csv = %q", got)
	}
	if slices.Contains(obs.names(), "inner.csv") {
		t.Error("a file inside a subfolder was handled")
	}
}

// dropReadOverride takes CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH out of
// the effective capabilities of every thread of the test process, so
// that root, like any user, cannot read a file without read permission.
// They stay permitted and come back when the test ends. Where they cannot
// be dropped, it runs the test as the user nobody instead and reports
// true: the caller then returns. Does nothing for other users.
func dropReadOverride(t *testing.T) (ranAsNobody bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		t.Skipf("root, and capabilities cannot be read: %v", err)
	}
	set := func(c [2]unix.CapUserData) syscall.Errno {
		h := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		_, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&c[0])), 0)
		return errno
	}
	saved := caps
	caps[0].Effective &^= 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH
	if errno := set(caps); errno != 0 {
		// A binary linked with cgo, as under -race, cannot drop them
		// from every thread: run the test again in a process of the
		// user nobody, whom permission bits do stop.
		runAsNobody(t)
		return true
	}
	t.Cleanup(func() {
		if errno := set(saved); errno != 0 {
			t.Errorf("capabilities not restored: %v", errno)
		}
	})
	return false
}

// runAsNobody runs the calling test in a copy of the test binary as the
// user nobody (uid 65534) and fails when it does not pass there.
func runAsNobody(t *testing.T) {
	t.Helper()
	dir, err := os.MkdirTemp("", "jobdrop-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "watcher.test")
	self, err := os.ReadFile(os.Args[0])
	if err == nil {
		err = os.WriteFile(bin, self, 0o755)
	}
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + os.TempDir(), "TMPDIR=" + os.TempDir()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s as the user nobody: %v\n%s", t.Name(), err, out)
	}
	t.Logf("passed as the user nobody (root cannot drop CAP_DAC_OVERRIDE from every thread of a cgo binary)")
}

// TestUnreadableFileIsRefused: a file the watcher may not read (mode
// 000) is refused with the reason, unread, and the next file goes on. As
// root the test first drops the capabilities that let root read any file.
func TestUnreadableFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.csv")
	write(t, secret, "host,name\n")
	if err := os.Chmod(secret, 0); err != nil {
		t.Fatal(err)
	}
	if dropReadOverride(t) {
		return
	}
	if _, err := os.ReadFile(secret); err == nil {
		t.Skip("a file with mode 000 can be read here: nothing to test")
	}

	obs := &observer{}
	start(t, fastConfig(dir), obs, nil)
	report := failedReport(t, dir, "secret.csv")
	if want := "secret.csv: not taken: cannot be read (permission denied); let the user jobdrop runs as read it, then drop it again\n"; report != want {
		t.Errorf("report %q, want %q", report, want)
	}
	write(t, filepath.Join(dir, "next.csv"), "next")
	waitFor(t, "archive/next.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "next.csv")) })
	if got := obs.names(); !slices.Equal(got, []string{"next.csv"}) {
		t.Errorf("handled %v, want next.csv only", got)
	}
	// Seen when it arrived (its name and type are fine); refused when
	// opened.
	if got := obs.seen(); !slices.Contains(got, "seen secret.csv") || !slices.ContainsFunc(got, func(ev string) bool {
		return strings.HasPrefix(ev, "refused secret.csv: cannot be read")
	}) {
		t.Errorf("observer heard %q", got)
	}
}

// TestOpenRegularNeverWaits: opening what the watcher takes for a
// regular file returns at once with an error when it was replaced by a
// named pipe with no writer (a plain open would wait for one) or by a
// symbolic link.
func TestOpenRegularNeverWaits(t *testing.T) {
	dir := t.TempDir()
	pipe, link, file := filepath.Join(dir, "pipe.csv"), filepath.Join(dir, "link.csv"), filepath.Join(dir, "file.csv")
	mkfifo(t, pipe)
	write(t, file, "x")
	symlink(t, file, link)
	for _, tt := range []struct {
		path string
		ok   bool
	}{{pipe, false}, {link, false}, {file, true}} {
		done := make(chan error, 1)
		go func() {
			f, err := openRegular(tt.path)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if (err == nil) != tt.ok {
				t.Errorf("openRegular(%s) = %v, want success %v", filepath.Base(tt.path), err, tt.ok)
			}
		case <-time.After(waitLimit):
			t.Fatalf("openRegular(%s) waited", filepath.Base(tt.path))
		}
	}
}
