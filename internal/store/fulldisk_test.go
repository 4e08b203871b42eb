//go:build linux

package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/disktest"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestRecorderWaitsOutAFullDisk puts the SQLite file on a real 8 MiB
// tmpfs and fills it: the recorder cannot store what it reads, says so
// once in the log and through Err, keeps running, and stores everything,
// in order and nothing skipped, once space is freed.
func TestRecorderWaitsOutAFullDisk(t *testing.T) {
	dir := disktest.Tmpfs(t, "8m")
	st := openStore(t, filepath.Join(dir, "jobdrop.db"))
	c := newCluster(t)
	logs := &logBuffer{}
	rec := startRecorder(t, st, c, logs)
	prod := producer(t, c, "full-disk")
	ctx := context.Background()
	audit := func(i int) *kgo.Record {
		return auditRec(t, int32(i%3), record.Audit{ID: fmt.Sprintf("a%03d", i), At: int64(i), Actor: "test",
			Action: record.ActionFileInjected, Object: "jobs.csv", Outcome: record.OutcomeOK, Detail: strings.Repeat("d", 4000)})
	}
	recorded := func(id string) bool {
		ok, err := st.AuditRecorded(ctx, id)
		return err == nil && ok
	}
	produceTxn(t, prod, true, audit(0))
	waitFor(t, rec.Recorder, "a000 stored", func() bool { return recorded("a000") })

	free := disktest.Fill(t, dir)
	var batch []*kgo.Record
	for i := 1; i <= 200; i++ { // 800 KB of details: more than any slack
		batch = append(batch, audit(i))
	}
	produceTxn(t, prod, true, batch...)
	kafkatest.Eventually(t, waitLimit, "Err to say why records cannot be stored", func() bool { return rec.Err() != nil })
	if !strings.Contains(rec.Err().Error(), "database or disk is full") {
		t.Errorf("Err = %v, want it to say the disk is full", rec.Err())
	}
	select {
	case <-rec.done:
		t.Fatal("the recorder stopped on a full disk")
	default:
	}

	free()
	waitFor(t, rec.Recorder, "every record stored", func() bool { return recorded("a200") })
	for i := 1; i <= 200; i++ {
		if !recorded(fmt.Sprintf("a%03d", i)) {
			t.Errorf("a%03d skipped", i)
		}
	}
	if err := rec.Err(); err != nil {
		t.Errorf("Err = %v once the records are stored", err)
	}
	// Once at ERROR; the attempts that fail alike after it are DEBUG.
	full := 0
	for _, l := range logs.lines("cannot store records") {
		if strings.Contains(l, "level=ERROR") {
			full++
		}
	}
	if full != 1 {
		t.Errorf("%d log lines at ERROR about the full disk, want 1", full)
	}
	if len(logs.lines("storing records again")) != 1 {
		t.Error("the recovery is not logged")
	}
}
