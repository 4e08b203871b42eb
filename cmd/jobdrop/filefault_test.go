package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/watcher"
)

// TestOversizedRowFailsItsFileAndTheFolderGoesOn drops a JSON job list one
// task of which carries about 1 MiB of data, over what the broker takes,
// then a good file into the same folder: the first lands in failed/ with a
// report naming the row and the limit, and the second is injected.
func TestOversizedRowFailsItsFileAndTheFolderGoesOn(t *testing.T) {
	in := startInstance(t)
	big := `[{"host":"acme","name":"small","topic":"batch-jobs"},` +
		`{"host":"acme","name":"huge","topic":"batch-jobs","data":{"blob":"` + strings.Repeat("x", 1<<20) + `"}}]`
	start := time.Now()
	in.drop("big.json", big)
	in.drop("good.csv", "host,name,topic\nacme,good,batch-jobs\n")
	in.waitFile("failed", "big.json")
	in.waitFile("archive", "good.csv")
	took := time.Since(start)

	report, err := os.ReadFile(filepath.Join(in.inbox, watcher.FailedDir, "big.json"+watcher.ErrorsSuffix))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"big.json: row 2: column data", "acme/huge", "over the 1048576 bytes a record may have", "nothing was injected"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	cmds := commandsByFile(t, in.brokers, in.cfg.Topics.Input)
	if len(cmds["big.json"]) != 0 || strings.Join(cmds["good.csv"], ",") != "acme/good" {
		t.Errorf("commands by file: %v, want only acme/good from good.csv", cmds)
	}
	if n := countFiles(t, filepath.Join(in.inbox, watcher.ProcessingDir)); n != 0 {
		t.Errorf("%d files left in .processing/", n)
	}
	if took > 10*time.Second {
		t.Errorf("both files took %s to be handled, want under 10s", took)
	}
	t.Logf("oversized file failed and the next injected within %s; report:\n%s", took.Round(time.Millisecond), report)
}

// TestStoppedBrokerStallsTheFolderUntilItIsBack stops the brokers jobdrop
// runs on while files are dropped: the folder is reported stalled (on
// /readyz with the reason, in the metrics, above the console's pages)
// within the threshold, the files wait in the folder, and once the broker
// is back both are injected, once each.
func TestStoppedBrokerStallsTheFolderUntilItIsBack(t *testing.T) {
	data := t.TempDir()
	port := kafkatest.ClosedAddr(t)
	_, portStr, _ := strings.Cut(port, ":")
	p, _ := strconv.Atoi(portStr)
	startBroker := func() *kfake.Cluster {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(p), kfake.DataDir(data), kfake.GroupMinSessionTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	broker := startBroker()
	t.Cleanup(func() { broker.Close() })
	in := startInstanceEnv(t, []string{"JOBDROP_WATCHER_STALL_AFTER=2s", "JOBDROP_WATCHER_RESCAN=1s"}, broker.ListenAddrs()...)
	kafkatest.Eventually(t, 60*time.Second, "the node to be ready", func() bool {
		code, _ := in.readyz()
		return code == http.StatusOK
	})

	broker.Close()
	stopped := time.Now()
	in.drop("first.csv", "host,name,topic\nacme,first,batch-jobs\n")
	in.drop("second.csv", "host,name,topic\nacme,second,batch-jobs\n")
	var reason string
	kafkatest.Eventually(t, 30*time.Second, "/readyz to name the stalled folder", func() bool {
		code, r := in.readyz()
		reason = r.Checks["folders"]
		return code == http.StatusServiceUnavailable && strings.Contains(reason, "stalled")
	})
	t.Logf("%s after the broker stopped, /readyz says folders: %s", time.Since(stopped).Round(time.Millisecond), reason)
	// The folder takes the two files in the order it finds them: the stall
	// names whichever it holds.
	stuck := "first.csv"
	if strings.Contains(reason, "second.csv") {
		stuck = "second.csv"
	}
	if !strings.Contains(reason, in.inbox) || !strings.Contains(reason, stuck) {
		t.Errorf("/readyz folders check %q does not name the folder and its file", reason)
	}
	if got := in.scrape().value("jobdrop_folders_stalled"); got != 1 {
		t.Errorf("jobdrop_folders_stalled = %v, want 1", got)
	}
	if page := in.page("/"); !strings.Contains(page, "stalled") || !strings.Contains(page, stuck) {
		t.Errorf("the dashboard does not say the folder is stalled")
	}
	for _, sub := range []string{watcher.ArchiveDir, watcher.FailedDir} {
		if n := countFiles(t, filepath.Join(in.inbox, sub)); n != 0 {
			t.Errorf("%d files in %s/ while the broker is down", n, sub)
		}
	}

	broker = startBroker()
	in.waitFile("archive", "first.csv")
	in.waitFile("archive", "second.csv")
	kafkatest.Eventually(t, 60*time.Second, "/readyz 200 once the broker is back", func() bool {
		code, _ := in.readyz()
		return code == http.StatusOK
	})
	cmds := commandsByFile(t, broker.ListenAddrs(), in.cfg.Topics.Input)
	if strings.Join(cmds["first.csv"], ",") != "acme/first" || strings.Join(cmds["second.csv"], ",") != "acme/second" {
		t.Errorf("commands by file: %v, want acme/first and acme/second once each", cmds)
	}
}
