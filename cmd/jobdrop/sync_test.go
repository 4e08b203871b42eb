package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/watcher"
)

// syncEnv makes the instance's folder a crontab folder of host acme.
var syncEnv = []string{"JOBDROP_WATCH_0_DEFAULTS_HOST=acme", "JOBDROP_WATCH_0_DEFAULTS_TOPIC=cron-jobs"}

// liveTasks lists the names of the tasks the console says run.
func (in *instance) liveTasks() []string {
	in.t.Helper()
	var tasks []storetype.Task
	if err := in.getJSON("/api/tasks?status=active&limit=1000", &tasks); err != nil {
		in.t.Fatal(err)
	}
	var names []string
	for _, t := range tasks {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

// batchOf waits for the file's batch as the console records it.
func (in *instance) batchOf(file, status string) storetype.Batch {
	in.t.Helper()
	var found storetype.Batch
	kafkatest.Eventually(in.t, 30*time.Second, file+" recorded "+status, func() bool {
		var files []storetype.Batch
		if err := in.getJSON("/api/files", &files); err != nil {
			return false
		}
		for _, b := range files {
			if b.File == file && b.Status == status {
				found = b
				return true
			}
		}
		return false
	})
	if err := in.getJSON("/api/files/"+found.ID, &found); err != nil {
		in.t.Fatal(err)
	}
	return found
}

// waitFiles waits until sub/ holds n files named name, or as the
// watcher names a later one (etl.20261125T101500Z.xlsx).
func (in *instance) waitFiles(sub, name string, n int) {
	in.t.Helper()
	kafkatest.Eventually(in.t, 60*time.Second, fmt.Sprintf("%d files %s in %s/", n, name, sub), func() bool {
		entries, _ := os.ReadDir(filepath.Join(in.inbox, sub))
		ext := filepath.Ext(name)
		base := strings.TrimSuffix(name, ext)
		got := 0
		for _, e := range entries {
			if e.Name() == name || strings.HasPrefix(e.Name(), base+".") && strings.HasSuffix(e.Name(), ext) && !strings.HasSuffix(e.Name(), ".txt") {
				got++
			}
		}
		return got >= n
	})
}

// cronTaskNames converts a crontab as the folder does and maps each
// command to its task's name.
func cronTaskNames(t *testing.T, in *instance, crontab string) map[string]string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crontab")
	if err := os.WriteFile(path, []byte(crontab), 0o644); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(runConvert(t, in, path), "\n") {
		if line == "" {
			continue
		}
		var d struct {
			Name string            `json:"name"`
			Data map[string]string `json:"data"`
		}
		if err := jsonUnmarshal(line, &d); err != nil {
			t.Fatalf("convert line %q: %v", line, err)
		}
		out[d.Data["command"]] = d.Name
	}
	return out
}

// runConvert is `jobdrop convert` of path with the instance's configuration.
func runConvert(t *testing.T, in *instance, path string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := convert(context.Background(), in.cfg, path, in.inbox, 0, "", &stdout, &stderr); err != nil {
		t.Fatalf("convert %s: %v\n%s", path, err, stderr.String())
	}
	return stdout.String()
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// runDiff is `jobdrop diff` with args, and its exit status.
func runDiff(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := mainErr(context.Background(), append([]string{"diff"}, args...), &out, &errOut)
	var exit exitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = int(exit)
	default:
		t.Fatalf("jobdrop diff: %v", err)
	}
	return code, out.String(), errOut.String()
}

// TestCrontabDroppedAgainKeepsTheScheduleInStepWithTheFile drops a crontab
// of six lines, two of them named, lets its tasks fire, then an edited
// version: one line moved, one schedule changed, one line removed, one
// added. The engine then holds exactly the second version's tasks, the
// moved one with its history, the changed one on its new schedule; the
// removed one fires no more; the change went in one batch; the audit and
// the file's page show the diff. Dropped again, it changes nothing.
func TestCrontabDroppedAgainKeepsTheScheduleInStepWithTheFile(t *testing.T) {
	in := startInstanceEnv(t, syncEnv)
	v1 := "# name: backup\n0 2 * * * /usr/local/bin/backup.sh\n# name: report\n30 6 * * 1-5 /opt/report/run --daily\n" +
		"*/15 * * * * /opt/sync/pull\n0 * * * * /opt/metrics/push\n0 3 * * * /opt/cleanup/tmp.sh\n45 23 * * * /opt/rotate/logs.sh\n"
	v2 := "# name: backup\n30 2 * * * /usr/local/bin/backup.sh\n# name: report\n30 6 * * 1-5 /opt/report/run --daily\n" +
		"0 3 * * * /opt/cleanup/tmp.sh\n45 23 * * * /opt/rotate/logs.sh\n10 4 * * * /opt/new/job.sh\n*/15 * * * * /opt/sync/pull\n"
	names := cronTaskNames(t, in, v1)
	for k, v := range cronTaskNames(t, in, v2) {
		names[k] = v
	}
	pull, push, added := names["/opt/sync/pull"], names["/opt/metrics/push"], names["/opt/new/job.sh"]
	jobs := kafkatest.Collect(t, in.brokers, "cron-jobs")

	in.drop("crontab", v1)
	in.waitFile("archive", "crontab")
	kafkatest.Eventually(t, 30*time.Second, "v1's six tasks", func() bool { return len(in.liveTasks()) == 6 })
	// An hour of fires: pull four times, push once.
	t0 := in.clock.Now()
	hour := t0.Truncate(time.Hour).Add(time.Hour)
	in.advanceTo(hour)
	kafkatest.Eventually(t, 30*time.Second, "pull and push to fire at "+hour.Format(time.Kitchen), func() bool {
		got := firedAt(jobs)
		return got[pull][hour.UnixMilli()] && got[push][hour.UnixMilli()]
	})
	var before storetype.Task
	kafkatest.Eventually(t, 30*time.Second, "pull's fire recorded", func() bool {
		return in.getJSON("/api/tasks/acme/"+pull, &before) == nil && before.Executions >= 1
	})

	// Before dropping it, jobdrop diff says what v2 would change.
	v2path := filepath.Join(t.TempDir(), "crontab")
	if err := os.WriteFile(v2path, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runDiff(t, v2path, "--node", in.console)
	t.Logf("jobdrop diff before v2 (exit %d):\n%s%s", code, out, errOut)
	if code != 1 || !strings.Contains(out, "1 added, 1 changed, 1 removed, 4 unchanged") ||
		!strings.Contains(out, "~ acme/backup: cron 0 2 * * * → cron 30 2 * * *") {
		t.Errorf("jobdrop diff before v2: exit %d, %q, want 1 and the diff", code, out)
	}

	in.drop("crontab", v2)
	in.waitFiles(watcher.ArchiveDir, "crontab", 2)
	b := in.batchOf("crontab", storetype.BatchInjected)
	for b.Diff == nil || b.Diff.Added != 1 {
		b = in.batchOf("crontab", storetype.BatchInjected) // the first version's batch is listed too
		if b.Diff != nil && b.Diff.Added == 1 {
			break
		}
	}
	want := []string{added, "backup", "logs-sh-", pull, "report", "tmp-sh-"}
	kafkatest.Eventually(t, 30*time.Second, "the engine to hold v2's tasks", func() bool {
		got := in.liveTasks()
		if len(got) != 6 || slices.Contains(got, push) {
			return false
		}
		for _, w := range want {
			if !slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, w) }) {
				return false
			}
		}
		return true
	})
	if d := b.Diff; d.Added != 1 || d.Changed != 1 || d.Removed != 1 || d.Unchanged != 4 {
		t.Errorf("diff %+v, want 1 added, 1 changed, 1 removed, 4 unchanged", *d)
	}
	lines := strings.Join(b.Diff.Lines, "\n")
	for _, w := range []string{"+ acme/" + added + ": cron 10 4 * * *", "~ acme/backup: cron 0 2 * * * → cron 30 2 * * *", "- acme/" + push + ": cron 0 * * * *"} {
		if !strings.Contains(lines, w) {
			t.Errorf("diff lines lack %q:\n%s", w, lines)
		}
	}
	page := in.page("/files/" + b.ID)
	for _, w := range []string{"1 added", "1 changed", "1 removed", "4 unchanged", "cron 0 2 * * * → cron 30 2 * * *"} {
		if !strings.Contains(page, w) {
			t.Errorf("the file's page does not show %q", w)
		}
	}
	var audit []storetype.AuditEvent
	if err := in.getJSON("/api/audit?limit=1000", &audit); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(audit, func(a storetype.AuditEvent) bool {
		return a.Action == record.ActionFileInjected && strings.Contains(a.Detail, "1 added, 1 changed, 1 removed, 4 unchanged")
	}) {
		t.Errorf("no file.injected audit event with the diff")
	}

	// The change is the three commands of v2's batch, no more.
	var cmds []string
	kafkatest.EachCommitted(t, in.brokers, in.cfg.Topics.Input, func(r *kgo.Record) {
		if header(r, record.HeaderBatch) == b.ID {
			var d struct{ Action string }
			_ = jsonUnmarshal(string(r.Value), &d)
			cmds = append(cmds, d.Action+" "+string(r.Key))
		}
	})
	slices.Sort(cmds)
	want = []string{"DELETE acme/" + push, "INSERT acme/" + added, "INSERT acme/backup"}
	slices.Sort(want)
	if !slices.Equal(cmds, want) {
		t.Errorf("v2's commands %v, want %v", cmds, want)
	}

	// The moved task keeps its history; the changed one waits for 02:30.
	var after storetype.Task
	if err := in.getJSON("/api/tasks/acme/"+pull, &after); err != nil {
		t.Fatal(err)
	}
	if after.FireCount < before.FireCount || after.Executions < before.Executions {
		t.Errorf("the moved task lost its history: %d fires, %d executions before; %d, %d after",
			before.FireCount, before.Executions, after.FireCount, after.Executions)
	}
	var backup storetype.Task
	if err := in.getJSON("/api/tasks/acme/backup", &backup); err != nil {
		t.Fatal(err)
	}
	if backup.NextFire == nil || backup.NextFire.UTC().Hour() != 2 || backup.NextFire.UTC().Minute() != 30 {
		t.Errorf("backup's next fire is %v, want 02:30", backup.NextFire)
	}
	// The removed task fires no more: an hour later pull fires, push not.
	next := hour.Add(time.Hour)
	in.advanceTo(next)
	kafkatest.Eventually(t, 30*time.Second, "pull to fire at "+next.Format(time.Kitchen), func() bool {
		return firedAt(jobs)[pull][next.UnixMilli()]
	})
	if firedAt(jobs)[push][next.UnixMilli()] {
		t.Errorf("the removed task %s fired after v2", push)
	}
	// The changed one fires at its new time, 02:30, and not at 02:00.
	at0230 := next.Truncate(24 * time.Hour).Add(2*time.Hour + 30*time.Minute)
	if !at0230.After(next) {
		at0230 = at0230.Add(24 * time.Hour)
	}
	in.advanceTo(at0230)
	kafkatest.Eventually(t, 30*time.Second, "backup to fire at "+at0230.Format(time.RFC3339), func() bool {
		return firedAt(jobs)["backup"][at0230.UnixMilli()]
	})
	if firedAt(jobs)["backup"][at0230.Add(-30*time.Minute).UnixMilli()] {
		t.Errorf("backup fired at its old time, 02:00")
	}

	// Against what runs now, v2 changes nothing; a crontab with a bad line
	// cannot be compared.
	if code, out, errOut := runDiff(t, v2path, "--node", in.console); code != 0 || !strings.Contains(out, "0 added, 0 changed, 0 removed, 6 unchanged") {
		t.Errorf("jobdrop diff after v2: exit %d, %q %q, want 0 and no change", code, out, errOut)
	}
	bad := filepath.Join(t.TempDir(), "crontab")
	if err := os.WriteFile(bad, []byte("0 25 * * * /opt/bad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runDiff(t, bad, "--node", in.console); code != 2 || !strings.Contains(errOut, "row 1: column schedule") {
		t.Errorf("jobdrop diff of a bad crontab: exit %d, %q, want 2 naming the row", code, errOut)
	}

	// v2 again: a duplicate, nothing injected.
	in.drop("crontab", v2)
	kafkatest.Eventually(t, 30*time.Second, "v2 dropped again recorded as a duplicate", func() bool {
		var got storetype.Batch
		return in.getJSON("/api/files/"+b.ID, &got) == nil && got.Duplicates == 1
	})
	n := 0
	kafkatest.EachCommitted(t, in.brokers, in.cfg.Topics.Input, func(r *kgo.Record) {
		if header(r, record.HeaderBatch) == b.ID {
			n++
		}
	})
	if n != 3 {
		t.Errorf("%d commands of v2's batch after dropping it again, want the same 3", n)
	}
}

// TestAmbiguousCronIsInjectedWithAWarningOnTheFilesPage drops a job list
// whose cron expression Quartz and Spring read apart: it is injected, read
// as the folder says (auto: Quartz, for its ?), and the file's page names
// the row, the column and both readings.
func TestAmbiguousCronIsInjectedWithAWarningOnTheFilesPage(t *testing.T) {
	in := startInstance(t)
	in.drop("noon.csv", "host,name,topic,cron\nacme,noon,jobs,0 0 12 ? * 2-6\nacme,plain,jobs,0 12 * * 1-5\n")
	in.waitFile("archive", "noon.csv")
	b := in.batchOf("noon.csv", storetype.BatchInjected)
	want := `noon.csv: row 2: column cron: day-of-week "2-6" read as quartz (MON-FRI); in spring it would be TUE-SAT`
	if len(b.Warnings) != 1 || !strings.HasPrefix(b.Warnings[0], want) {
		t.Errorf("warnings %q, want one starting %q", b.Warnings, want)
	}
	if page := in.page("/files/" + b.ID); !strings.Contains(page, "read as quartz (MON-FRI); in spring it would be TUE-SAT") {
		t.Errorf("the file's page does not show the warning")
	}
	var noon storetype.Task
	kafkatest.Eventually(t, 30*time.Second, "acme/noon recorded", func() bool { return in.getJSON("/api/tasks/acme/noon", &noon) == nil })
	if !strings.Contains(noon.Definition, `"cronDialect":"quartz"`) {
		t.Errorf("acme/noon is %s, want it read as quartz", noon.Definition)
	}
}
