package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

func TestRecorderRebuildsDeletedDatabase(t *testing.T) {
	c, path, st, r := recordedFixture(t, nil)
	before := dump(t, st)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}

	st2 := openStore(t, path)
	if got := dump(t, st2); strings.Contains(got, "jobs.csv") {
		t.Fatalf("the database was not deleted:\n%s", got)
	}
	r2 := startRecorder(t, st2, c, nil)
	waitCaughtUp(t, r2.Recorder, st2, c)
	if after := dump(t, st2); after != before {
		t.Errorf("rebuilt database differs\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// opened is the file the store has open now.
func opened(st *Store) os.FileInfo {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.file
}

// TestRecorderRebuildsDatabaseDeletedWhileRunning deletes the database
// files under a running recorder, as a careless clean-up would: the
// recorder must notice, say so, fill a new file at the same path with
// everything the topics hold, and go on recording. (The new file may well
// reuse the deleted one's inode: the log is what tells a rebuild.)
func TestRecorderRebuildsDatabaseDeletedWhileRunning(t *testing.T) {
	logs := &logBuffer{}
	c, path, st, r := recordedFixture(t, logs)
	before := dump(t, st)

	// Queries go on while it is gone: none may create a file in its place.
	stopQueries := make(chan struct{})
	queried := make(chan struct{})
	go func() {
		defer close(queried)
		for {
			select {
			case <-stopQueries:
				return
			default:
				_, _ = st.AuditRecorded(context.Background(), "a-injected")
			}
		}
	}()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	defer func() { close(stopQueries); <-queried }()
	waitFor(t, r.Recorder, "a new database file holding everything", func() bool {
		return len(logs.lines("database rebuilt from the topics")) > 0 && r.Err() == nil && dump(t, st) == before
	})
	if len(logs.lines("was deleted")) != 1 {
		t.Errorf("the log does not say the file was deleted:\n%s", strings.Join(logs.lines("rebuil"), "\n"))
	}
	if len(logs.lines("rebuilding it from the topics")) != 1 || len(logs.lines("database rebuilt from the topics")) != 1 {
		t.Errorf("the log does not say once that the database is rebuilt:\n%s", strings.Join(logs.lines("rebuil"), "\n"))
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("no database file at %s after the rebuild: %v", path, err)
	}

	produceTxn(t, producer(t, c, "later"), true, auditRec(t, 2, record.Audit{
		ID: "a-later", At: t0 + 5000, Actor: "watcher", Action: record.ActionFileReceived, Object: "later.csv", Outcome: record.OutcomeOK,
	}))
	waitFor(t, r.Recorder, "an event committed after the rebuild", func() bool {
		ok, err := st.AuditRecorded(context.Background(), "a-later")
		return err == nil && ok
	})
}

// TestRecorderFollowsADatabaseRestoredFromABackup puts an older copy of
// the database in place of the file a running recorder has open: the
// recorder must take the copy and bring it up to date from the offsets it
// holds.
func TestRecorderFollowsADatabaseRestoredFromABackup(t *testing.T) {
	c, path, st, r := recordedFixture(t, nil)
	backup := filepath.Join(t.TempDir(), "backup.db")
	db, done := st.writer()
	_, err := db.Exec(`VACUUM INTO ?`, backup)
	done()
	if err != nil {
		t.Fatal(err)
	}
	copyInfo, err := os.Stat(backup)
	if err != nil {
		t.Fatal(err)
	}

	produceTxn(t, producer(t, c, "later"), true, auditRec(t, 2, record.Audit{
		ID: "a-later", At: t0 + 5000, Actor: "watcher", Action: record.ActionFileReceived, Object: "later.csv", Outcome: record.OutcomeOK,
	}))
	waitFor(t, r.Recorder, "an event committed after the backup", func() bool {
		ok, err := st.AuditRecorded(context.Background(), "a-later")
		return err == nil && ok
	})
	after := dump(t, st)

	if err := os.Rename(backup, path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r.Recorder, "the restored copy, brought up to date", func() bool {
		now := opened(st)
		return now != nil && os.SameFile(now, copyInfo) && r.Err() == nil && dump(t, st) == after
	})
}

// TestRebuildEndsWhenAPartitionHoldsNoRecordAnyMore empties a partition,
// as retention does to an idle one, then deletes the database under the
// recorder: the rebuild must end, though nothing of that partition can be
// read back.
func TestRebuildEndsWhenAPartitionHoldsNoRecordAnyMore(t *testing.T) {
	logs := &logBuffer{}
	c, path, st, r := recordedFixture(t, logs)
	adm := kadm.NewClient(kafkatest.Client(t, c.ListenAddrs()))
	ends, err := adm.ListEndOffsets(ctxT(t), testTopics.Executions)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := ends.Lookup(testTopics.Executions, 0)
	if o.Offset == 0 {
		t.Fatal("the fixture wrote nothing to executions partition 0")
	}
	del, err := adm.DeleteRecords(ctxT(t), kadm.Offsets{testTopics.Executions: {0: {At: o.Offset}}})
	if err != nil || del.Error() != nil {
		t.Fatalf("delete records: %v %v", err, del.Error())
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	waitFor(t, r.Recorder, "the rebuild to end", func() bool {
		return len(logs.lines("database rebuilt from the topics")) > 0 && r.Err() == nil
	})
	if err := r.WaitRebuilt(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.AuditRecorded(ctxT(t), "a-injected"); err != nil || !ok {
		t.Errorf("the rebuilt database lacks a-injected: %v %v", ok, err)
	}
}
