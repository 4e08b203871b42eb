package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// header returns the value of the record's header key.
func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// commandsByFile drains the input topic and groups the command keys by the
// file header, checking that each file's commands carry one batch id.
func commandsByFile(t *testing.T, brokers []string, topic string) map[string][]string {
	t.Helper()
	byFile := map[string][]string{}
	batchOf := map[string]string{}
	for _, r := range kafkatest.Drain(t, brokers, topic) {
		file, batch := header(r, record.HeaderFile), header(r, record.HeaderBatch)
		if prev, ok := batchOf[file]; ok && prev != batch {
			t.Errorf("%s: commands of two batches, %s and %s", file, prev, batch)
		}
		batchOf[file] = batch
		byFile[file] = append(byFile[file], string(r.Key))
	}
	for _, keys := range byFile {
		slices.Sort(keys)
	}
	return byFile
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Type().IsRegular() {
			n++
		}
	}
	return n
}

// dropMany writes n two-row files straight into dir, as fast as it can.
func dropMany(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		content := fmt.Sprintf("host,name,topic,timeUnit,time\nacme,f%04d-a,jobs,MINUTES,5\nacme,f%04d-b,jobs,HOURS,1\n", i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.csv", i)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkEachFileOnce checks that each of the n files of dropMany committed
// its two commands in one batch, once.
func checkEachFileOnce(t *testing.T, brokers []string, topic string, n int) {
	t.Helper()
	byFile := commandsByFile(t, brokers, topic)
	if len(byFile) != n {
		t.Errorf("commands of %d files, want %d", len(byFile), n)
	}
	for i := range n {
		name := fmt.Sprintf("f%04d.csv", i)
		want := []string{fmt.Sprintf("acme/f%04d-a", i), fmt.Sprintf("acme/f%04d-b", i)}
		if got := byFile[name]; !slices.Equal(got, want) {
			t.Errorf("%s: commands %v, want %v once each", name, got, want)
		}
	}
}

func TestThousandFilesDroppedAtOnceAreInjectedOnceEach(t *testing.T) {
	const n = 1000
	in := startInstance(t, kafkatest.Cluster(t)...)
	dropMany(t, in.inbox, n)
	kafkatest.Eventually(t, 120*time.Second, fmt.Sprintf("%d files in archive/", n), func() bool {
		return countFiles(t, filepath.Join(in.inbox, "archive")) >= n
	})
	if got := countFiles(t, filepath.Join(in.inbox, "failed")); got != 0 {
		t.Errorf("%d files in failed/", got)
	}
	brokers := in.brokers
	in.stop()
	checkEachFileOnce(t, brokers, in.cfg.Topics.Input, n)
}

func TestTwoInstancesOnOneFolderInjectEachFileOnce(t *testing.T) {
	const n = 200
	brokers := kafkatest.Cluster(t)
	shared := filepath.Join(t.TempDir(), "inbox")
	a := startInstanceEnv(t, []string{"JOBDROP_NODE=a", "JOBDROP_WATCH_0_DIR=" + shared}, brokers...)
	b := startInstanceEnv(t, []string{"JOBDROP_NODE=b", "JOBDROP_WATCH_0_DIR=" + shared}, brokers...)
	dropMany(t, shared, n)
	kafkatest.Eventually(t, 120*time.Second, fmt.Sprintf("%d files in archive/", n), func() bool {
		return countFiles(t, filepath.Join(shared, "archive")) >= n
	})
	a.stop()
	b.stop()
	if got := countFiles(t, filepath.Join(shared, "archive")); got != n {
		t.Errorf("%d files in archive/, want %d", got, n)
	}
	checkEachFileOnce(t, brokers, a.cfg.Topics.Input, n)
}

func TestSlowlyWrittenFileIsInjectedWhole(t *testing.T) {
	// Stable for 10 checks, 20ms apart: the writer's 50ms pauses are well
	// inside that window.
	const chunks = 8
	in := startInstanceEnv(t, []string{"JOBDROP_WATCHER_STABLE_CHECKS=10"}, kafkatest.Cluster(t)...)
	f, err := os.Create(filepath.Join(in.inbox, "slow.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	fmt.Fprintln(f, "host,name,topic,timeUnit,time")
	for i := range chunks {
		if i > 0 {
			time.Sleep(50 * time.Millisecond) // the writer's pace, not a wait for a condition
		}
		fmt.Fprintf(f, "acme,slow-%d,jobs,MINUTES,%d\n", i, i+1)
		want = append(want, fmt.Sprintf("acme/slow-%d", i))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	in.waitFile("archive", "slow.csv")
	brokers := in.brokers
	in.stop()
	if got := commandsByFile(t, brokers, in.cfg.Topics.Input); len(got) != 1 || !slices.Equal(got["slow.csv"], want) {
		t.Errorf("input topic holds %v, want slow.csv with %v in one batch", got, want)
	}
}

func TestFileRenamedIntoPlaceIsInjectedOnce(t *testing.T) {
	in := startInstance(t, kafkatest.Cluster(t)...)
	in.drop("moved.csv", "host,name,topic,timeUnit,time\nacme,moved,jobs,MINUTES,1\n")
	in.waitFile("archive", "moved.csv")
	brokers := in.brokers
	in.stop()
	got := commandsByFile(t, brokers, in.cfg.Topics.Input)
	if len(got) != 1 || !slices.Equal(got["moved.csv"], []string{"acme/moved"}) {
		t.Errorf("input topic holds %v", got)
	}
}

func TestPollOnlyFolder(t *testing.T) {
	in := startInstanceEnv(t, []string{
		"JOBDROP_WATCH_0_POLL=true", "JOBDROP_WATCH_0_POLL_INTERVAL=50ms",
		// Event folders would be rescanned only after an hour.
		"JOBDROP_WATCHER_RESCAN=1h",
	}, kafkatest.Cluster(t)...)
	if !in.cfg.Watch[0].Poll || in.cfg.Watch[0].PollInterval != 50*time.Millisecond {
		t.Fatalf("folder config %+v", in.cfg.Watch[0])
	}
	in.drop("share.csv", "host,name,topic,timeUnit,time\nacme,on-share,jobs,MINUTES,1\n")
	in.waitFile("archive", "share.csv")
	brokers := in.brokers
	in.stop()
	if got := commandsByFile(t, brokers, in.cfg.Topics.Input); !slices.Equal(got["share.csv"], []string{"acme/on-share"}) {
		t.Errorf("input topic holds %v", got)
	}
}

func TestGoodRowsPolicyArchivesFileWithItsErrors(t *testing.T) {
	in := startInstanceEnv(t, []string{"JOBDROP_WATCH_0_POLICY=good-rows"}, kafkatest.Cluster(t)...)
	in.drop("mixed.csv", "host,name,topic,start,timeUnit,time\n"+
		"acme,good-1,jobs,,MINUTES,5\n"+
		"acme,bad-unit,jobs,,FORTNIGHTS,1\n"+
		"acme,good-2,jobs,,HOURS,1\n"+
		"acme,bad-start,jobs,next tuesday,,\n")
	in.waitFile("archive", "mixed.csv")
	in.waitFile("archive", "mixed.csv.errors.txt")
	report, err := os.ReadFile(filepath.Join(in.inbox, "archive", "mixed.csv.errors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2 of 4 rows rejected; the other 2 were injected",
		`mixed.csv: row 3: column timeUnit: value "FORTNIGHTS"`, `mixed.csv: row 5: column start: value "next tuesday"`,
	} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(string(report), "good-") {
		t.Errorf("report blames a good row:\n%s", report)
	}
	if n := countFiles(t, filepath.Join(in.inbox, "failed")); n != 0 {
		t.Errorf("%d files in failed/", n)
	}
	brokers := in.brokers
	in.stop()
	if got := commandsByFile(t, brokers, in.cfg.Topics.Input); len(got) != 1 || !slices.Equal(got["mixed.csv"], []string{"acme/good-1", "acme/good-2"}) {
		t.Errorf("input topic holds %v, want the two good rows of mixed.csv", got)
	}
	var found bool
	for _, a := range kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, brokers, in.cfg.Topics.Audit)) {
		if a.Action == record.ActionFileInjected && a.Object == "mixed.csv" {
			found = true
			if a.Batch == nil || a.Batch.Rows != 4 || a.Batch.Rejected != 2 || !strings.Contains(a.Detail, "2 of 4 rows injected, 2 rejected") {
				t.Errorf("audit of mixed.csv: %+v %+v", a, a.Batch)
			}
		}
	}
	if !found {
		t.Error("no file.injected audit event for mixed.csv")
	}
}

func TestFileOverSizeLimitFails(t *testing.T) {
	in := startInstanceEnv(t, []string{"JOBDROP_WATCH_0_MAX_FILE_BYTES=64"}, kafkatest.Cluster(t)...)
	big := "host,name,topic,timeUnit,time\nacme,one,jobs,MINUTES,5\nacme,two,jobs,MINUTES,5\n"
	in.drop("big.csv", big)
	in.drop("small.csv", "host,name,topic\nacme,small,jobs\n")
	in.waitFile("failed", "big.csv.errors.txt")
	in.waitFile("archive", "small.csv")
	report, err := os.ReadFile(filepath.Join(in.inbox, "failed", "big.csv.errors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("big.csv: file is %d B (%d bytes), over the size limit of 64 B (max_file_bytes: 64)", len(big), len(big)); !strings.Contains(string(report), want) {
		t.Errorf("report %q lacks %q", report, want)
	}
	brokers := in.brokers
	in.stop()
	if got := commandsByFile(t, brokers, in.cfg.Topics.Input); len(got) != 1 || len(got["small.csv"]) != 1 {
		t.Errorf("input topic holds %v, want small.csv only", got)
	}
}

func TestDoneMarkersPatternsAndMinAge(t *testing.T) {
	const minAge = 500 * time.Millisecond
	in := startInstanceEnv(t, []string{
		"JOBDROP_WATCH_0_DONE_MARKER=true", "JOBDROP_WATCH_0_MIN_AGE=" + minAge.String(),
		"JOBDROP_WATCH_0_PATTERNS_0_PATTERN=*.DAT", "JOBDROP_WATCH_0_PATTERNS_0_CONVERTER=csv",
	}, kafkatest.Cluster(t)...)
	marker := func(name string) string { return filepath.Join(in.inbox, name+".done") }
	in.drop("waiting.dat", "host,name,topic\nacme,waiting,jobs\n")
	// Dropped after waiting.dat, with its marker: once it is archived,
	// waiting.dat has been stable and old enough for longer.
	in.drop("first.dat", "host,name,topic\nacme,first,jobs\n")
	if err := os.WriteFile(marker("first.dat"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in.waitFile("archive", "first.dat")
	fi, err := os.Stat(filepath.Join(in.inbox, "archive", "first.dat"))
	if err != nil {
		t.Fatal(err)
	}
	if age := time.Since(fi.ModTime()); age < minAge {
		t.Errorf("first.dat archived at age %s, before its min age %s", age, minAge)
	}
	kafkatest.Eventually(t, 60*time.Second, "first.dat.done removed", func() bool {
		_, err := os.Stat(marker("first.dat"))
		return os.IsNotExist(err)
	})
	if _, err := os.Stat(filepath.Join(in.inbox, "waiting.dat")); err != nil {
		t.Fatalf("waiting.dat taken without its marker: %v", err)
	}

	if err := os.WriteFile(marker("waiting.dat"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in.waitFile("archive", "waiting.dat")
	kafkatest.Eventually(t, 60*time.Second, "waiting.dat.done removed", func() bool {
		_, err := os.Stat(marker("waiting.dat"))
		return os.IsNotExist(err)
	})
	brokers := in.brokers
	in.stop()
	got := commandsByFile(t, brokers, in.cfg.Topics.Input)
	if len(got) != 2 || !slices.Equal(got["first.dat"], []string{"acme/first"}) || !slices.Equal(got["waiting.dat"], []string{"acme/waiting"}) {
		t.Errorf("input topic holds %v", got)
	}
}
