//go:build linux

package watcher

import (
	"cmp"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/jobdrop/jobdrop/internal/disktest"
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

// TestNamesAreCheckedAndShownSafely: names with control characters,
// invalid UTF-8, bidirectional overrides or over MaxNameBytes are refused
// with a report that quotes them; names that only look odd (leading
// dashes, dots, backslashes, non-ASCII letters) are handled as they are,
// except hidden ones (a leading dot), which are never touched.
// No name gets a raw control character into the log, and nothing is
// written outside the folder.
func TestNamesAreCheckedAndShownSafely(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "inbox")
	long := strings.Repeat("x", 246) + ".csv"
	refused := map[string]string{ // name → its failed/ name
		"line\nbreak.csv":                "",
		"tab\there.csv":                  "",
		"esc\x1b[31mred\x1b[0m.csv":      "",
		"cr.csv\r":                       "",
		"forged.csv\ntime=x level=ERROR": "",
		"latin1-\xe9t\xe9.csv":           "",
		"bidi-\u202egpj.csv":             "",
		long:                             strings.Repeat("x", 255-len(ErrorsSuffix)-len(".csv")-len("~")) + "~.csv",
	}
	handled := []string{"-rf.csv", "--help.csv", "jobs..csv", `evil\..\..\x.csv`, "ünïcode ✓.csv",
		strings.Repeat("y", MaxNameBytes-len(".csv")) + ".csv"}
	logs, log := logTo(t)
	obs := &observer{}
	w, err := New(fastConfig(dir), obs, log)
	if err != nil {
		t.Fatal(err)
	}
	run(t, w)
	for name := range refused {
		write(t, filepath.Join(dir, name), "content of "+name)
	}
	for _, name := range handled {
		write(t, filepath.Join(dir, name), "content of "+name)
	}
	// A name starting with a dot is hidden, like a file still being
	// written: never touched.
	hidden := filepath.Join(dir, `..\..\hidden.csv`)
	write(t, hidden, "hidden")

	for _, name := range handled {
		waitFor(t, "archive/"+name, func() bool { return exists(filepath.Join(dir, ArchiveDir, name)) })
	}
	for name, as := range refused {
		report := failedReport(t, dir, cmp.Or(as, name))
		want := DisplayName(name) + ": not taken: "
		if !strings.HasPrefix(report, want) || strings.Count(report, "\n") != 1 {
			t.Errorf("report of %q = %q, want one line starting with %q", name, report, want)
		}
		if name != long && !strings.HasPrefix(want, `"`) {
			t.Errorf("DisplayName(%q) = %s, want it quoted", name, want)
		}
		if got := read(t, filepath.Join(dir, FailedDir, cmp.Or(as, name))); got != "content of "+name {
			t.Errorf("failed/%q holds %q", cmp.Or(as, name), got)
		}
	}
	if r := read(t, filepath.Join(dir, FailedDir, refused[long]+ErrorsSuffix)); !strings.Contains(r, "its name is 250 bytes long, over the limit of 200") {
		t.Errorf("report of the long name: %q", r)
	}
	got := obs.names()
	slices.Sort(got)
	want := slices.Clone(handled)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
	for _, ev := range obs.seen() {
		if name, ok := strings.CutPrefix(ev, "seen "); ok && !slices.Contains(handled, name) {
			t.Errorf("a refused name was announced as seen: %q", name)
		}
	}

	// Every line of the log is one record: no name forged a line, and no
	// control character reached it raw.
	text := logs.String()
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if !strings.HasPrefix(line, "time=") {
			t.Errorf("log line not written by the logger: %q", line)
		}
		if strings.ContainsFunc(line, func(r rune) bool { return r < ' ' || r == 0x7f || r == 0x202e }) {
			t.Errorf("log line holds a raw control character: %q", line)
		}
	}
	if !strings.Contains(text, `file="esc\x1b[31mred\x1b[0m.csv"`) {
		t.Errorf("the log does not show the escape sequence escaped")
	}
	if !exists(hidden) {
		t.Error(`..\..\hidden.csv was touched`)
	}
	if entries, err := os.ReadDir(base); err != nil || len(entries) != 1 {
		t.Errorf("beside the folder: %v, %v; want the folder alone", entries, err)
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

// TestRetryErrorKeepsTheFileAndItsPlace: a file whose handler says
// "retry" stays in .processing and is handed over again until it is
// handled, logged once; the files dropped after it in its folder wait,
// other folders go on.
func TestRetryErrorKeepsTheFileAndItsPlace(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	release := make(chan struct{})
	var mu sync.Mutex
	attempts := 0
	rec := &recorder{react: func(_ context.Context, f File) error {
		if f.Name != "first.csv" {
			return nil
		}
		mu.Lock()
		attempts++
		mu.Unlock()
		select {
		case <-release:
			return nil
		default:
			return &RetryError{Err: errors.New("inject first.csv: brokers refuse writes")}
		}
	}}
	logs, log := logTo(t)
	start(t, fastConfig(dirA, dirB), rec, log)

	write(t, filepath.Join(dirA, "first.csv"), "first")
	waitFor(t, "first.csv claimed", func() bool { return exists(filepath.Join(dirA, ProcessingDir, "first.csv")) })
	write(t, filepath.Join(dirA, "second.csv"), "second")
	write(t, filepath.Join(dirB, "b.csv"), "b")
	waitFor(t, "B/archive/b.csv", func() bool { return exists(filepath.Join(dirB, ArchiveDir, "b.csv")) })
	waitFor(t, "three attempts at first.csv", func() bool { mu.Lock(); defer mu.Unlock(); return attempts >= 3 })
	if !exists(filepath.Join(dirA, ProcessingDir, "first.csv")) || exists(filepath.Join(dirA, FailedDir, "first.csv")) {
		t.Fatal("first.csv left .processing while it is retried")
	}
	if slices.Contains(rec.names(), "second.csv") {
		t.Fatal("second.csv handled before first.csv, dropped before it")
	}

	close(release)
	waitFor(t, "archive/second.csv", func() bool { return exists(filepath.Join(dirA, ArchiveDir, "second.csv")) })
	if !exists(filepath.Join(dirA, ArchiveDir, "first.csv")) {
		t.Error("first.csv not archived once handled")
	}
	var order []string
	for _, n := range rec.names() {
		if len(order) == 0 || order[len(order)-1] != n {
			order = append(order, n)
		}
	}
	if i, j := slices.Index(order, "first.csv"), slices.Index(order, "second.csv"); i < 0 || j < i || slices.Contains(order[j:], "first.csv") {
		t.Errorf("handled in order %v, want every attempt at first.csv before second.csv", order)
	}
	text := logs.String()
	if n := strings.Count(text, "level=ERROR msg=\"cannot handle the file"); n != 1 {
		t.Errorf("%d error lines for first.csv's retries, want 1:\n%s", n, text)
	}
	if !strings.Contains(text, "retry succeeded: handle the file") {
		t.Error("the success after retries is not logged")
	}
}

// TestFullDiskKeepsFilesUntilTheyCanBeMoved: on a folder whose disk is
// full, a rejected file's report cannot be written: the file stays in
// .processing, the failure is logged once, the files dropped after it
// wait, and once space is freed it moves to failed/ with its report and
// the others follow. Runs on a real 1 MiB tmpfs.
func TestFullDiskKeepsFilesUntilTheyCanBeMoved(t *testing.T) {
	dir := disktest.Tmpfs(t, "1m")
	if err := createLayout(dir); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "bad.csv"), "bad")
	free := disktest.Fill(t, dir)

	rec := &recorder{react: func(_ context.Context, f File) error {
		if f.Name == "bad.csv" {
			return errors.New("bad.csv: row 2: column time: not a number")
		}
		return nil
	}}
	logs, log := logTo(t)
	start(t, fastConfig(dir), rec, log)
	waitFor(t, "the failed move logged", func() bool { return strings.Contains(logs.String(), "cannot move the file to failed/") })
	if !exists(filepath.Join(dir, ProcessingDir, "bad.csv")) {
		t.Fatal("bad.csv is not kept in .processing while failed/ is full")
	}
	if got := files(t, filepath.Join(dir, FailedDir)); len(got) != 0 {
		t.Fatalf("failed/ holds %v on a full disk", got)
	}
	// Neither needs a data block, so both can be made on the full disk.
	symlink(t, "/etc/passwd", filepath.Join(dir, "link.csv"))
	write(t, filepath.Join(dir, "next.csv"), "")

	free()
	if got := failedReport(t, dir, "bad.csv"); got != "bad.csv: row 2: column time: not a number\n" {
		t.Errorf("report %q", got)
	}
	if got := failedReport(t, dir, "link.csv"); !strings.HasPrefix(got, `link.csv: not taken: a symbolic link (to "/etc/passwd")`) {
		t.Errorf("report %q", got)
	}
	waitFor(t, "archive/next.csv", func() bool { return exists(filepath.Join(dir, ArchiveDir, "next.csv")) })
	text := logs.String()
	if n := strings.Count(text, `level=ERROR msg="cannot move the file to failed/`); n != 1 {
		t.Errorf("%d error lines about the move, want 1", n)
	}
	if !strings.Contains(text, "no space left on device") || !strings.Contains(text, "retry succeeded: move the file to failed/") {
		t.Error("the log does not say the disk was full, or that the move succeeded later")
	}
}
