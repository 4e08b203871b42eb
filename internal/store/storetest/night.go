package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/task"
)

// Night is a schedule after a night of work, as the console would find
// it: Tasks tasks of Hosts hosts ("host-00", …; a tenth of the tasks
// paused; each host's tasks from one file, "host-00.csv"), due over the
// next hour, and Executions executions over the Span before Now, spread
// evenly over the tasks (a tenth FAILED, the last 50 OVERDUE, the 50
// before them FIRED with no report), with an audit event for each file
// injected and each task created.
type Night struct {
	Tasks, Executions int
	// Hosts defaults to 50.
	Hosts int
	// Span defaults to ten hours.
	Span time.Duration
	Now  time.Time
	// Topics are the topic names to apply records of. Defaults to the
	// default names.
	Topics record.Topics
	// Lean leaves out the reports of the executions that succeeded (they
	// stay FIRED) and the audit events of the tasks created: a third of
	// the records, for a test that needs neither.
	Lean bool
}

// Host names host h of a Night, and Task task i.
func Host(h int) string { return fmt.Sprintf("host-%02d", h) }

// Task is the name of task i of a Night; its host is Host(i % Hosts).
func Task(i int) string { return fmt.Sprintf("job-%06d", i) }

// Batch is the batch id of the file host h's tasks came from.
func Batch(h int) string { return fmt.Sprintf("%064x", h+1) }

// FailedEvery: execution i failed when i % FailedEvery == 3.
const FailedEvery = 10

// Fill applies n's records to st, many at a time.
func (n Night) Fill(ctx context.Context, st *store.Store) error {
	if n.Hosts <= 0 {
		n.Hosts = 50
	}
	if n.Span <= 0 {
		n.Span = 10 * time.Hour
	}
	topics := n.Topics.WithDefaults()
	next := map[string]int64{}
	var recs []*kgo.Record
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		if _, err := st.Apply(ctx, topics, recs); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
		recs = recs[:0]
		return nil
	}
	add := func(topic, key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: b, Offset: next[topic], Timestamp: n.Now})
		next[topic]++
		if len(recs) >= 50_000 {
			return flush()
		}
		return nil
	}
	// Keyed audit events, as every id of a night is made of its numbers:
	// one night fills alike at every run.
	createdAt := n.Now.Add(-n.Span - 2*time.Hour)
	created := createdAt.UnixMilli()
	for h := range n.Hosts {
		file := Host(h) + ".csv"
		ev := record.NewAudit(createdAt, "watcher", record.ActionFileInjected, file, record.OutcomeOK).Keyed(file)
		ev.Batch = &record.Batch{ID: Batch(h), File: file, Folder: "inbox", Rows: n.Tasks / n.Hosts}
		if err := add(topics.Audit, "watcher", ev); err != nil {
			return err
		}
	}
	for i := range n.Tasks {
		h := i % n.Hosts
		d := task.Definition{Host: Host(h), Name: Task(i), Action: task.Insert,
			Topic: fmt.Sprintf("topic-%d", i%7), Frequency: &task.Frequency{TimeUnit: task.Hours, Time: int32(1 + i%6)}}
		if i%10 == 9 {
			d.Active = task.Ptr(false)
		}
		if err := add(topics.State, d.Key(), record.State{Definition: d, Anchor: created, NextFire: n.Now.Add(time.Duration(i%3600) * time.Second).UnixMilli(),
			FireCount: 4, Source: record.Source{Batch: Batch(h), File: Host(h) + ".csv", Row: i/n.Hosts + 1}, UpdatedAt: created}); err != nil {
			return err
		}
		if n.Lean {
			continue
		}
		ev := record.NewAudit(createdAt, "watcher", record.ActionTaskCreated, d.Key(), record.OutcomeOK).Keyed(d.Key())
		if err := add(topics.Audit, "watcher", ev); err != nil {
			return err
		}
	}
	for i := range n.Executions {
		t := i % max(n.Tasks, 1)
		at := n.Now.Add(-n.Span + time.Duration(i)*n.Span/time.Duration(n.Executions))
		id := fmt.Sprintf("x%08d", i)
		ex := record.Execution{FireID: id, Host: Host(t % n.Hosts), Name: Task(t), Topic: fmt.Sprintf("topic-%d", t%7),
			ScheduledAt: at.UnixMilli(), FiredAt: at.UnixMilli() + 3, Batch: Batch(t % n.Hosts)}
		if i >= n.Executions-50 {
			ex.Timeout = 1000 // overdue
		}
		if err := add(topics.Executions, id, ex); err != nil {
			return err
		}
		var err error
		switch {
		case i >= n.Executions-100:
			// no report yet
		case n.Lean && i%FailedEvery != 3:
		case i%FailedEvery == 3:
			err = add(topics.Status, id, record.Status{FireID: id, Status: record.StatusFailed, Message: "exit status 1", At: at.UnixMilli() + 900})
		default:
			err = add(topics.Status, id, record.Status{FireID: id, Status: record.StatusSuccess, At: at.UnixMilli() + 900})
		}
		if err != nil {
			return err
		}
	}
	return flush()
}
