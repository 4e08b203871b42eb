package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/watcher"
)

// heapPeak samples HeapInuse every 20ms until the returned stop is
// called, which returns the highest value seen.
func heapPeak() (stop func() uint64) {
	var (
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapInuse)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() uint64 {
		once.Do(func() {
			close(done)
			wg.Wait()
			sample()
		})
		return peak
	}
}

// placeFile writes name into dir the way drop does (a hidden temporary
// name, renamed into place), streaming the content from write so that a
// large file is never held in memory whole.
func placeFile(t testing.TB, dir, name string, write func(w *bufio.Writer) error) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "."+name+".part")
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<16)
	if err := write(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// writeSheetBomb writes a workbook-shaped zip (as converters' writeZipBomb
// does) whose xl/worksheets/sheet1.xml unpacks to about size bytes of
// repeated rows.
func writeSheetBomb(w *bufio.Writer, size int) error {
	zw := zip.NewWriter(w)
	for _, part := range []struct{ name, body string }{
		{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		{"xl/workbook.xml", `<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="Sheet1" sheetId="1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>`},
	} {
		pw, err := zw.Create(part.name)
		if err != nil {
			return err
		}
		if _, err := pw.Write([]byte(part.body)); err != nil {
			return err
		}
	}
	sw, err := zw.CreateHeader(&zip.FileHeader{Name: "xl/worksheets/sheet1.xml", Method: zip.Deflate})
	if err != nil {
		return err
	}
	head := `<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`
	if _, err := sw.Write([]byte(head)); err != nil {
		return err
	}
	row := `<row><c t="inlineStr"><is><t>acme</t></is></c><c t="inlineStr"><is><t>job</t></is></c><c t="inlineStr"><is><t>jobs</t></is></c></row>`
	chunk := bytes.Repeat([]byte(row), (1<<20)/len(row))
	for written := len(head); written < size; written += len(chunk) {
		if _, err := sw.Write(chunk); err != nil {
			return err
		}
	}
	if _, err := sw.Write([]byte(`</sheetData></worksheet>`)); err != nil {
		return err
	}
	return zw.Close()
}

// TestHostileFilesAreRejectedWhileOtherFoldersGoOn drops a zip bomb and a
// CSV with a 50 MB field into one folder and a valid CSV into another:
// the hostile files fail with a clear report, the valid one is injected,
// and the heap stays bounded throughout.
func TestHostileFilesAreRejectedWhileOtherFoldersGoOn(t *testing.T) {
	stopSampling := heapPeak()
	defer stopSampling()

	base := t.TempDir()
	hostile, other := filepath.Join(base, "hostile"), filepath.Join(base, "other")
	in := startInstanceEnv(t, []string{
		"JOBDROP_WATCH_0_DIR=" + hostile,
		"JOBDROP_WATCH_1_DIR=" + other,
	}, kafkatest.Cluster(t)...)
	if len(in.cfg.Watch) != 2 || in.cfg.Watch[0].Dir != hostile || in.cfg.Watch[1].Dir != other {
		t.Fatalf("watched folders %+v, want %s and %s", in.cfg.Watch, hostile, other)
	}

	placeFile(t, hostile, "bomb.xlsx", func(w *bufio.Writer) error { return writeSheetBomb(w, 200<<20) })
	if fi, err := os.Stat(filepath.Join(hostile, "bomb.xlsx")); err == nil && fi.Size() > 2<<20 {
		t.Fatalf("bomb is %d bytes, want a small file that unpacks to 200 MB", fi.Size())
	}
	placeFile(t, hostile, "longfield.csv", func(w *bufio.Writer) error {
		if _, err := w.WriteString("host,name,topic\nacme,"); err != nil {
			return err
		}
		xs := bytes.Repeat([]byte("x"), 1<<20)
		for range 50 {
			if _, err := w.Write(xs); err != nil {
				return err
			}
		}
		_, err := w.WriteString(",jobs\n")
		return err
	})
	placeFile(t, other, "valid.csv", func(w *bufio.Writer) error {
		_, err := w.WriteString("host,name,topic,timeUnit,time\nacme,fine,batch-jobs,MINUTES,5\n")
		return err
	})

	waitIn := func(dir, sub, name string) {
		t.Helper()
		kafkatest.Eventually(t, 60*time.Second, name+" in "+filepath.Join(filepath.Base(dir), sub)+"/", func() bool {
			_, err := os.Stat(filepath.Join(dir, sub, name))
			return err == nil
		})
	}
	waitIn(other, "archive", "valid.csv")
	for _, name := range []string{"bomb.xlsx", "longfield.csv"} {
		waitIn(hostile, "failed", name)
		waitIn(hostile, "failed", name+".errors.txt")
	}

	for name, want := range map[string]string{
		"bomb.xlsx":     "bomb.xlsx: the workbook unpacks to more than 128 MiB (the limit); a job list that large is more likely a zip bomb",
		"longfield.csv": "longfield.csv: after line 1: a record is longer than 1048576 bytes",
	} {
		report, err := os.ReadFile(filepath.Join(hostile, "failed", name+".errors.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(report), want) {
			t.Errorf("%s.errors.txt lacks %q:\n%.2000s", name, want, report)
		}
		t.Logf("%s.errors.txt: %s", name, strings.TrimSpace(string(report)))
	}
	for _, dir := range []string{filepath.Join(hostile, "archive"), filepath.Join(other, "failed")} {
		if n := countFiles(t, dir); n != 0 {
			t.Errorf("%d files in %s, want none", n, dir)
		}
	}

	brokers := in.brokers
	in.stop()
	valid := 0
	for _, r := range kafkatest.Drain(t, brokers, in.cfg.Topics.Input) {
		switch file := header(r, record.HeaderFile); file {
		case "valid.csv":
			valid++
		default:
			t.Errorf("command %s from %q reached the input topic", r.Key, file)
		}
	}
	if valid != 1 {
		t.Errorf("%d commands from valid.csv on the input topic, want 1", valid)
	}

	peak := stopSampling()
	t.Logf("peak HeapInuse %.1f MiB", float64(peak)/(1<<20))
	if peak >= 300<<20 {
		t.Errorf("peak HeapInuse %d MiB, want < 300 MiB", peak>>20)
	}
}

// firedAt collects the fired events of a topic by task name and
// scheduled time, counting each fire id once.
func firedAt(c *kafkatest.Collector) map[string]map[int64]bool {
	got := map[string]map[int64]bool{}
	for _, r := range c.Records() {
		var f record.Fired
		if json.Unmarshal(r.Value, &f) != nil {
			continue
		}
		if got[f.Name] == nil {
			got[f.Name] = map[int64]bool{}
		}
		got[f.Name][f.ScheduledAt] = true
	}
	return got
}

// TestHostileEntriesAreRefusedWhileGoodFilesFire drops, all at once into
// one folder: links (into the folder, out of it, dangling, looping), a
// named pipe, a live socket, a device file (as root), a subfolder, a file
// without read permission, and files whose names hold line breaks, tabs,
// escape sequences, a carriage return, bytes that are not UTF-8, or 250
// bytes; beside them a good file and one whose name starts with dashes,
// and a good file in another folder. The good files are injected and
// fire, a task scheduled before keeps firing, every bad entry is refused
// with a report in failed/ and a failed arrival in the console naming
// it, and no name reaches the log or the console raw.
func TestHostileEntriesAreRefusedWhileGoodFilesFire(t *testing.T) {
	base := t.TempDir()
	hostile, other := filepath.Join(base, "hostile"), filepath.Join(base, "other")
	in := startInstanceEnv(t, []string{"JOBDROP_WATCH_0_DIR=" + hostile, "JOBDROP_WATCH_1_DIR=" + other}, kafkatest.Cluster(t)...)
	t0 := in.clock.Now()
	jobs := kafkatest.Collect(t, in.brokers, "batch-jobs")
	csv := func(name string) string {
		return "host,name,topic,start,timeUnit,time\nacme," + name + ",batch-jobs," +
			t0.Add(10*time.Second).UTC().Format(time.RFC3339) + ",SECONDS,10\n"
	}
	placeFile(t, other, "before.csv", func(w *bufio.Writer) error { _, err := w.WriteString(csv("steady")); return err })
	kafkatest.Eventually(t, 20*time.Second, "before.csv archived", func() bool {
		_, err := os.Stat(filepath.Join(other, "archive", "before.csv"))
		return err == nil
	})

	// What is refused, and how each report goes on after "NAME: not taken: ".
	long := strings.Repeat("x", 246) + ".csv"
	refused := map[string]string{
		"link-inside.csv":  `a symbolic link (to "good.csv")`,
		"link-outside.csv": `a symbolic link (to "/etc/passwd")`,
		"dangling.csv":     `a symbolic link (to "nowhere.csv")`,
		"loop.csv":         `a symbolic link (to "loop.csv")`,
		"pipe.csv":         "a named pipe (FIFO), not a regular file",
		"socket.csv":       "a socket, not a regular file",
		"new\nline.csv":    "its name holds the control character U+000A",
		"tab\t.csv":        "its name holds the control character U+0009",
		"esc\x1b[2J.csv":   "its name holds the control character U+001B",
		"cr.csv\r":         "its name holds the control character U+000D",
		"latin1-\xe9.csv":  "its name is not valid UTF-8",
		long:               "its name is 250 bytes long, over the limit of 200",
	}
	failedAs := map[string]string{long: strings.Repeat("x", 239) + "~.csv"}
	for name, target := range map[string]string{"link-inside.csv": "good.csv", "link-outside.csv": "/etc/passwd",
		"dangling.csv": "nowhere.csv", "loop.csv": "loop.csv"} {
		if err := os.Symlink(target, filepath.Join(hostile, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(hostile, "pipe.csv"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(hostile, "socket.csv"))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // it is moved to failed/
	defer ln.Close()
	if err := syscall.Mknod(filepath.Join(hostile, "device.csv"), syscall.S_IFCHR|0o644, 1<<8|3); err == nil {
		refused["device.csv"] = "a device file, not a regular file"
	} else {
		t.Logf("no device file: %v", err)
	}
	for _, name := range []string{"new\nline.csv", "tab\t.csv", "esc\x1b[2J.csv", "cr.csv\r", "latin1-\xe9.csv", long} {
		if err := os.WriteFile(filepath.Join(hostile, name), []byte(csv("odd-name")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sub := filepath.Join(hostile, "more-jobs")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "inner.csv"), []byte(csv("inner")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostile, "unreadable.csv"), []byte(csv("unreadable")), 0); err != nil {
		t.Fatal(err)
	}
	// A process with CAP_DAC_OVERRIDE (root, as in CI) reads any file, as
	// jobdrop running as root would: then the file is simply injected.
	// watcher's TestUnreadableFileIsRefused proves the refusal as root
	// too, by dropping that capability or, in a cgo binary (-race), which
	// cannot, by running as the user nobody.
	_, readErr := os.ReadFile(filepath.Join(hostile, "unreadable.csv"))
	if readErr != nil {
		refused["unreadable.csv"] = "cannot be read (permission denied)"
	}
	for name, content := range map[string]string{"good.csv": csv("good"), "--dash.csv": csv("dash")} {
		placeFile(t, hostile, name, func(w *bufio.Writer) error { _, err := w.WriteString(content); return err })
	}
	placeFile(t, other, "other.csv", func(w *bufio.Writer) error { _, err := w.WriteString(csv("other")); return err })

	injected := []string{"good.csv", "--dash.csv"}
	if readErr == nil {
		injected = append(injected, "unreadable.csv")
	}
	waitIn := func(dir, sub, name string) {
		t.Helper()
		kafkatest.Eventually(t, 20*time.Second, watcher.DisplayName(name)+" in "+filepath.Base(dir)+"/"+sub+"/", func() bool {
			_, err := os.Lstat(filepath.Join(dir, sub, name))
			return err == nil
		})
	}
	for _, name := range injected {
		waitIn(hostile, "archive", name)
	}
	waitIn(other, "archive", "other.csv")
	for name, why := range refused {
		as := cmp.Or(failedAs[name], name)
		waitIn(hostile, "failed", as+".errors.txt")
		report, err := os.ReadFile(filepath.Join(hostile, "failed", as+".errors.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if want := watcher.DisplayName(name) + ": not taken: " + why; !strings.HasPrefix(string(report), want) {
			t.Errorf("report of %s = %q, want it to start with %q", watcher.DisplayName(name), report, want)
		}
		if _, err := os.Lstat(filepath.Join(hostile, "failed", as)); err != nil {
			t.Errorf("%s not beside its report: %v", watcher.DisplayName(name), err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(sub, "inner.csv")); err != nil || string(b) != csv("inner") {
		t.Errorf("more-jobs/inner.csv was touched: %q, %v", b, err)
	}

	// The console lists every refused entry, and the subfolder, as a
	// failed arrival saying why.
	var arrivals []storetype.Arrival
	kafkatest.Eventually(t, 20*time.Second, "the console to list every refusal", func() bool {
		arrivals = nil
		if in.getJSON("/api/arrivals?limit=100", &arrivals) != nil {
			return false
		}
		n := 0
		for _, a := range arrivals {
			if a.Status == "failed" && strings.Contains(a.Detail, ": not taken: ") {
				n++
			}
		}
		return n == len(refused)+1
	})
	for _, a := range arrivals {
		if a.Status == "failed" && (!printable(a.File) || strings.ContainsAny(a.File, "\n\uFFFD")) {
			t.Errorf("the console shows the name %q raw", a.File)
		}
	}
	if !slices.ContainsFunc(arrivals, func(a storetype.Arrival) bool {
		return a.File == "more-jobs" && strings.Contains(a.Detail, "a folder: only files directly in a watched folder are taken")
	}) {
		t.Errorf("the console does not say more-jobs is not read: %+v", arrivals)
	}
	if page := in.page("/files"); !printable(page) || !strings.Contains(page, `esc\x1b[2J.csv`) {
		t.Errorf("/files shows a name raw, or not at all")
	}

	// Everything scheduled fires: the task from before and the files
	// injected next to the refused entries.
	in.advanceTo(t0.Add(10 * time.Second))
	names := []string{"steady", "good", "dash", "other"}
	if readErr == nil {
		names = append(names, "unreadable")
	}
	kafkatest.Eventually(t, 20*time.Second, "every task to fire at t0+10s", func() bool {
		got := firedAt(jobs)
		for _, n := range names {
			if !got[n][t0.Add(10*time.Second).UnixMilli()] {
				return false
			}
		}
		return true
	})
	in.advanceTo(t0.Add(20 * time.Second))
	kafkatest.Eventually(t, 20*time.Second, "steady to fire again at t0+20s", func() bool {
		return firedAt(jobs)["steady"][t0.Add(20*time.Second).UnixMilli()]
	})
	if got := firedAt(jobs); len(got["odd-name"]) != 0 || len(got["inner"]) != 0 {
		t.Errorf("a refused file's task fired: %v", got)
	}

	// The log names every refused entry, one record per line, with no
	// raw control character.
	logs := in.logs.String()
	if n := strings.Count(logs, `msg="entry refused"`); n != len(refused) {
		t.Errorf("%d entries logged as refused, want %d", n, len(refused))
	}
	for _, line := range strings.Split(strings.TrimSuffix(logs, "\n"), "\n") {
		if !strings.HasPrefix(line, "time=") || !printable(line) {
			t.Errorf("log line %q: not one record, or holds a raw control character", line)
		}
	}
	if !strings.Contains(logs, `file="esc\x1b[2J.csv"`) || !strings.Contains(logs, `file=more-jobs`) {
		t.Errorf("the log does not name the refused entries safely:\n%s", logs)
	}
}

// printable reports whether s holds no control character other than a
// line break, and is valid UTF-8.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && unicode.IsControl(r) })
}
