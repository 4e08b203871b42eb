package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
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
func placeFile(t *testing.T, dir, name string, write func(w *bufio.Writer) error) {
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
