package store

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/command"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/scheduler"
	"github.com/jobdrop/jobdrop/task"
)

// TestRecorderKeepsAuditEventsAlike: the same action done twice in one
// millisecond is two entries of the audit trail, not one. Each case has
// a writer of the real path (the engine, the injector) write the two
// events to the cluster; the recorder stores them in a SQLite file, and
// both rows are there.
func TestRecorderKeepsAuditEventsAlike(t *testing.T) {
	at := time.UnixMilli(t0)
	for _, tc := range []struct {
		name           string
		action, object string
		// write makes the two events and returns once they are
		// committed and stored.
		write func(t *testing.T, env alikeEnv)
	}{
		{
			// Two API clients delete the same (missing) task in the same
			// millisecond: two commands alike to the byte, the engine's
			// two events alike but for their place in the input.
			name: "engine", action: record.ActionTaskDeleted, object: "acme/gone",
			write: func(t *testing.T, env alikeEnv) {
				cl := env.client(t)
				e, err := scheduler.New(scheduler.Config{
					ClientOpts:     kafka.ClientOpts(env.brokers, "test"),
					Topics:         testTopics,
					Targets:        kafka.NewTargetTopics(cl, 1, -1, true),
					SessionTimeout: 2 * time.Second,
					DataDir:        t.TempDir(),
					Node:           "node-1",
				}, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- e.Run(ctx) }()
				t.Cleanup(func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("engine run: %v", err)
					}
				})
				command := func(d task.Definition, ts time.Time) *kgo.Record {
					v, _ := json.Marshal(d)
					return &kgo.Record{Topic: testTopics.Input, Key: []byte(d.Key()), Value: v, Timestamp: ts,
						Headers: []kgo.RecordHeader{{Key: record.HeaderActor, Value: []byte("api")}}}
				}
				del := task.Definition{Host: "acme", Name: "gone", Action: task.Delete}
				// A later command of the same key, on the same partition:
				// once its event is stored, so are the two before it.
				after := task.Definition{Host: "acme", Name: "gone", Action: task.Insert, Topic: "jobs",
					Start: task.Ptr(at.AddDate(10, 0, 0).UnixMilli())}
				if err := cl.ProduceSync(ctxT(t), command(del, at), command(del, at),
					command(after, at.Add(time.Millisecond))).FirstErr(); err != nil {
					t.Fatal(err)
				}
				waitFor(t, env.rec, "the engine's task.created event", func() bool {
					return env.count(t, record.ActionTaskCreated, "acme/gone") > 0
				})
			},
		},
		{
			// A worker reports the same status of one execution twice in
			// the same millisecond (a retry after an answer lost on the
			// way).
			name: "command writer", action: "execution.running", object: "fire-1",
			write: func(t *testing.T, env alikeEnv) {
				inj, err := command.New(command.Config{
					ClientOpts:      []kgo.Opt{kgo.SeedBrokers(env.brokers...)},
					TransactionalID: "commands-alike",
					Topics:          testTopics,
					Clock:           clockwork.NewFakeClockAt(at),
				})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(inj.Close)
				s := record.Status{FireID: "fire-1", Status: record.StatusRunning, Worker: "w1", At: t0}
				for range 2 {
					if err := inj.ReportStatus(ctxT(t), "w1", s); err != nil {
						t.Fatal(err)
					}
				}
				waitCaughtUp(t, env.rec, env.st, env.c)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The engine's group asks for a session shorter than kfake's
			// least by default.
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, testTopics.All()...),
				kfake.GroupMinSessionTimeout(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			st := openStore(t, tempDB(t))
			r := startRecorder(t, st, c, nil)
			env := alikeEnv{c: c, brokers: c.ListenAddrs(), st: st, rec: r.Recorder}
			tc.write(t, env)
			ids := env.ids(t, tc.action, tc.object)
			if len(ids) != 2 {
				t.Errorf("%d audit rows of %s %s, want 2", len(ids), tc.action, tc.object)
			}
			// A database rebuilt from the topics has the same rows: the
			// ids travel in the records.
			again := alikeEnv{c: c, st: openStore(t, tempDB(t))}
			again.rec = startRecorder(t, again.st, c, nil).Recorder
			waitCaughtUp(t, again.rec, again.st, c)
			if got := again.ids(t, tc.action, tc.object); !slices.Equal(got, ids) {
				t.Errorf("rebuilt from the topics: ids %v, want %v", got, ids)
			}
		})
	}
}

// alikeEnv is what a case of TestRecorderKeepsAuditEventsAlike writes
// to and reads from.
type alikeEnv struct {
	c       *kfake.Cluster
	brokers []string
	st      *Store
	rec     *Recorder
}

func (e alikeEnv) client(t *testing.T) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// count counts the audit rows of action on object.
func (e alikeEnv) count(t *testing.T, action, object string) int {
	return len(e.ids(t, action, object))
}

// ids lists the ids of the audit rows of action on object, in order.
func (e alikeEnv) ids(t *testing.T, action, object string) []string {
	t.Helper()
	db, done := e.st.reader()
	defer done()
	rows, err := db.Query(`SELECT id FROM audit WHERE action = ? AND object = ? ORDER BY id`, action, object)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}
