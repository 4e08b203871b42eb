package injector

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/diff"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// Sync makes a file the whole truth of its source: the tasks earlier
// versions of it created. Its rows insert new tasks and update changed
// ones, rows identical to what runs are left alone, and the tasks of the
// source it no longer holds are deleted, all in the file's one
// transaction.
type Sync struct {
	// ByHost takes as the source every task of the hosts the file names
	// that came from a file of the same folder, rather than from earlier
	// versions of the same file name: for exports named by date.
	ByHost bool
	// MaxRemove is the largest share, 0 to 1, of its source's live tasks a
	// version may delete; one that would delete more, or every task of
	// its source, is held for an operator (Held), never applied on its
	// own. 0 holds every version that deletes anything; 1 only one that
	// would empty its source.
	MaxRemove float64
	// Reviewed applies the version whatever it deletes: an operator's
	// Apply of a held file.
	Reviewed bool
}

// Source names the tasks a file of a sync folder replaces.
type Source struct {
	// Folder is the watched folder, as configured.
	Folder string
	// File is the file name; empty for a source by host.
	File string
	// Hosts are the hosts of a source by host.
	Hosts []string
}

// Sources answers a sync, and the chains of a file, with the tasks that
// run now.
type Sources interface {
	// WaitApplied returns once the engine has applied each input
	// partition up to the offset given for it, and what the other
	// methods answer reflects it.
	WaitApplied(ctx context.Context, offsets map[int32]int64) error
	// SourceTasks calls fn with every task of the source, running or
	// ended (InScope set).
	SourceTasks(ctx context.Context, s Source, fn func(diff.Current) error) error
	// Tasks calls fn with each task of keys that runs or ended.
	Tasks(ctx context.Context, keys []string, fn func(diff.Current) error) error
	// Followers calls fn once with each task that runs (Live) and
	// follows any of the tasks of keys.
	Followers(ctx context.Context, keys []string, fn func(diff.Current) error) error
}

// syncWait bounds the wait for the engine to apply the commands before a
// sync: past it the file is tried again later (ErrUnavailable).
const syncWait = 30 * time.Second

// syncRows collects what a sync needs of a file's rows while they are
// checked: one Entry per valid row, the keys of invalid rows (kept: a row
// with a typo must not delete its task) and the hosts named.
type syncRows struct {
	entries []diff.Entry
	kept    []string
	hosts   map[string]bool
}

func newSyncRows() *syncRows { return &syncRows{hosts: map[string]bool{}} }

func (s *syncRows) add(r converters.Row, valid bool) {
	d := &r.Def
	if d.Host == "" || d.Name == "" {
		return
	}
	s.hosts[d.Host] = true
	if !valid {
		s.kept = append(s.kept, d.Key())
		return
	}
	e := diff.EntryOf(d)
	e.Row = r.Line
	s.entries = append(s.entries, e)
}

// leaveOut makes the rows of lines, valid but left out by the chain
// checks, kept: they delete nothing, and change nothing.
func (s *syncRows) leaveOut(lines map[int]struct{}) {
	if len(lines) == 0 {
		return
	}
	s.entries = slices.DeleteFunc(s.entries, func(e diff.Entry) bool {
		if _, out := lines[e.Row]; out {
			s.kept = append(s.kept, e.Key)
			return true
		}
		return false
	})
}

// syncPlan is a sync's decision about one file.
type syncPlan struct {
	plan     *diff.Plan
	removals []string
	lines    []string // every change, one per line
	diff     record.Diff
	// orphans are the tasks it would delete that tasks it keeps still
	// follow: they refuse the file, whatever it is held for.
	orphans []diff.Orphan
}

// orphaned is the rejection of f, whose new version would delete tasks
// that others still follow, from the rows rej counted.
func (p *syncPlan) orphaned(f File, rej *RejectedError) *RejectedError {
	more := ""
	if n := len(p.orphans); n > 1 {
		more = fmt.Sprintf(" (and %d more tasks that others follow)", n-1)
	}
	out := &RejectedError{File: f.Name, Rows: rej.Rows, Warnings: rej.Warnings,
		Err: fmt.Errorf("the new version %s%s; nothing was injected: change the followers' after first, or keep the task", p.orphans[0], more)}
	if len(p.orphans) > 1 {
		for _, o := range p.orphans {
			out.fail(f.Name+": "+o.String(), len(p.orphans))
		}
	}
	return out
}

// maxReportLines bounds the lines of a held file's report.
const maxReportLines = 100_000

// scopeRead is the reading of a sync source's tasks, begun before the
// file's rows are converted and done beside it: the two take about as
// long for a large source, and each a core.
type scopeRead struct {
	done chan struct{}
	plan *diff.Plan
	err  error
}

// readScope waits until every command committed before is applied (a
// barrier), then reads the tasks of f's source into a new plan: at once in
// a goroutine for a source by file name; for a source by host (whose
// hosts the rows say) in wait, once they are known. For a file that does
// not sync there is no source, only the barrier.
func (in *Injector) readScope(ctx context.Context, f File) *scopeRead {
	s := &scopeRead{done: make(chan struct{}), plan: diff.NewPlan()}
	go func() {
		defer close(s.done)
		if s.err = in.applied(ctx, "sync "+f.Name); s.err != nil || f.Sync == nil || f.Sync.ByHost {
			return
		}
		s.err = in.cfg.Sources.SourceTasks(ctx, Source{Folder: f.Folder, File: f.Name}, s.add(f))
	}()
	return s
}

// add is the function that adds each task read to the plan.
func (s *scopeRead) add(f File) func(diff.Current) error {
	return func(c diff.Current) error {
		s.plan.Add(c)
		if f.Progress != nil {
			f.Progress()
		}
		return nil
	}
}

// ready returns once the barrier of the scope's reading is passed: the
// store answers for every command committed before the file.
func (s *scopeRead) ready(ctx context.Context) error {
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait returns the plan of the scope once read: for a source by host,
// reading the tasks of the hosts the rows name.
func (s *scopeRead) wait(ctx context.Context, in *Injector, f File, rows *syncRows) (*diff.Plan, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		<-s.done
		return nil, ctx.Err()
	}
	if s.err != nil {
		return nil, s.err
	}
	if f.Sync != nil && f.Sync.ByHost {
		src := Source{Folder: f.Folder}
		for h := range rows.hosts {
			src.Hosts = append(src.Hosts, h)
		}
		slices.Sort(src.Hosts)
		if err := in.cfg.Sources.SourceTasks(ctx, src, s.add(f)); err != nil {
			return nil, fmt.Errorf("sync %s: %w: %w", f.Name, ErrUnavailable, err)
		}
	}
	return s.plan, nil
}

// applied writes a barrier and waits until the engine has applied every
// command committed before it, and the store answers for them, before
// what it says ("sync jobs.csv").
func (in *Injector) applied(ctx context.Context, what string) error {
	if in.cfg.Sources == nil {
		return fmt.Errorf("%s: this injector has no task store to compare with: drop the file into its folder of a running node", what)
	}
	offsets, err := in.barrier(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
	}
	wctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	if err := in.cfg.Sources.WaitApplied(wctx, offsets); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s: waiting for the engine to apply the commands before it: %w: %w", what, ErrUnavailable, err)
	}
	return nil
}

// planSync decides what f does to the tasks of its source, read by
// scope, and to those its rows name. For a file that does not sync
// (f.Sync nil) it compares the rows with the tasks they name, and
// deletes nothing.
func (in *Injector) planSync(ctx context.Context, f File, rows *syncRows, scope *scopeRead) (*syncPlan, error) {
	plan, err := scope.wait(ctx, in, f, rows)
	if err != nil {
		return nil, err
	}
	scoped := f.Sync != nil
	p := &syncPlan{plan: plan}
	add := scope.add(f)
	var others []string
	for _, e := range rows.entries {
		if !p.plan.Knows(e.Key) {
			others = append(others, e.Key)
		}
	}
	if err := in.cfg.Sources.Tasks(ctx, others, add); err != nil {
		return nil, fmt.Errorf("sync %s: %w: %w", f.Name, ErrUnavailable, err)
	}
	for _, key := range rows.kept {
		p.plan.Count(diff.Entry{Key: key, Action: task.Trigger}) // seen, never removed
	}
	for _, e := range rows.entries {
		if _, line := p.plan.Count(e); line != "" && len(p.lines) < maxReportLines {
			p.lines = append(p.lines, fmt.Sprintf("row %d: %s", e.Row, line))
		}
	}
	removals, lines := p.plan.Removals()
	p.removals = removals
	for _, l := range lines {
		if len(p.lines) < maxReportLines {
			p.lines = append(p.lines, l)
		}
	}
	if scoped {
		if p.orphans, err = in.orphans(ctx, f, p.plan); err != nil {
			return nil, err
		}
	}
	c := p.plan.Counts
	p.diff = record.Diff{Added: c.Added, Changed: c.Changed, Removed: c.Removed, Unchanged: c.Unchanged, Scope: c.Scope,
		Lines: p.lines[:min(len(p.lines), record.MaxDiffLines)]}
	if !scoped {
		return p, nil
	}
	maxRemove := f.Sync.MaxRemove
	switch {
	case f.Sync.Reviewed || c.Scope == 0 || c.Removed == 0:
	case c.Removed >= c.Scope:
		p.diff.Held = fmt.Sprintf("it would delete all %d tasks of its source", c.Scope)
	case float64(c.Removed) > maxRemove*float64(c.Scope):
		p.diff.Held = fmt.Sprintf("it would delete %d of the %d tasks of its source (%.0f%%), more than the %.0f%% allowed (sync_max_remove)",
			c.Removed, c.Scope, 100*float64(c.Removed)/float64(c.Scope), 100*maxRemove)
	}
	return p, nil
}

// orphans are the tasks plan deletes that tasks it keeps still follow,
// the running tasks outside it included.
func (in *Injector) orphans(ctx context.Context, f File, plan *diff.Plan) ([]diff.Orphan, error) {
	deleted := plan.Deleted()
	if len(deleted) == 0 {
		return nil, nil
	}
	var others []diff.Current
	err := in.cfg.Sources.Followers(ctx, deleted, func(c diff.Current) error {
		others = append(others, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sync %s: %w: %w", f.Name, ErrUnavailable, err)
	}
	return plan.Orphans(others), nil
}

// barrier writes a barrier record to every input partition, in a
// transaction of its own, and returns their offsets: once the engine's
// checkpoints are past them, it has applied every command committed before.
func (in *Injector) barrier(ctx context.Context) (map[int32]int64, error) {
	topics, err := kadm.NewClient(in.admin).ListTopics(ctx, in.cfg.Topics.Input)
	if err != nil {
		return nil, fmt.Errorf("list topic %s: %w", in.cfg.Topics.Input, err)
	}
	t, ok := topics[in.cfg.Topics.Input]
	if !ok || t.Err != nil || len(t.Partitions) == 0 {
		return nil, fmt.Errorf("topic %s: not found (%v)", in.cfg.Topics.Input, t.Err)
	}
	keys := barrierKeys(in.cfg.Topics.Input, len(t.Partitions))
	offsets := make(map[int32]int64, len(keys))
	var acked []*kgo.Record
	err = in.transact(ctx, func(produce func(*kgo.Record)) error {
		acked = acked[:0] // written again after a commit turned into an abort
		for _, key := range keys {
			r := &kgo.Record{Topic: in.cfg.Topics.Input, Key: []byte(key),
				Headers: []kgo.RecordHeader{{Key: record.HeaderBarrier, Value: []byte(in.cfg.Actor)}}}
			acked = append(acked, r)
			produce(r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("write barrier: %w", err)
	}
	for _, r := range acked {
		offsets[r.Partition] = r.Offset
	}
	return offsets, nil
}

// barrierKeys finds one key per partition of topic, as the producers'
// partitioner places them.
func barrierKeys(topic string, partitions int) []string {
	part := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	byPartition := make(map[int]string, partitions)
	for i := 0; len(byPartition) < partitions && i < 1<<20; i++ {
		key := fmt.Sprintf("#barrier-%d", i)
		p := part.Partition(&kgo.Record{Key: []byte(key)}, partitions)
		if _, ok := byPartition[p]; !ok {
			byPartition[p] = key
		}
	}
	keys := make([]string, 0, partitions)
	for p := range partitions {
		keys = append(keys, byPartition[p])
	}
	return keys
}

// HeldError is what Inject returns for a file of a sync folder that would delete
// too much of its source: nothing was injected, and the file waits for an
// operator. Its message is the report: why, then every change.
type HeldError struct {
	File string
	Diff record.Diff
	// Lines are every change the file would make.
	Lines []string
}

func (e *HeldError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: held for review: %s; nothing was injected. Apply or reject it in the console.\n", e.File, e.Diff.Held)
	fmt.Fprintf(&b, "%d added, %d changed, %d removed, %d unchanged, of %d tasks the source held\n",
		e.Diff.Added, e.Diff.Changed, e.Diff.Removed, e.Diff.Unchanged, e.Diff.Scope)
	for _, l := range e.Lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// RejectHeld records an operator's rejection of the held file f of batch
// b: its batch is rejected with the reason, under f.Actor.
func (in *Injector) RejectHeld(ctx context.Context, f File, b record.Batch, reason string) error {
	detail := "rejected after review"
	if reason != "" {
		detail += ": " + reason
	}
	b.Errors = []string{f.Name + ": " + detail + "; nothing was injected"}
	b.Rejected, b.Diff = 0, nil
	return in.audit(ctx, f, record.ActionFileRejected, record.OutcomeRejected, &b, detail)
}

// Diff says what f would change of the tasks that run now, without
// injecting anything: for a file of a sync folder (f.Sync), what it adds,
// changes and deletes of its source, and whether it would be held; for
// another file, what its rows add and change. The lines list every
// change. A file with invalid rows (its chains' problems included), or
// whose new version would delete tasks that others still follow, is a
// *RejectedError.
func (in *Injector) Diff(ctx context.Context, f File, conv converters.Converter, opts converters.Options) (record.Diff, []string, error) {
	if f.Name == "" {
		f.Name = filepath.Base(f.Path)
	}
	rows := newSyncRows()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	scope := in.readScope(cctx, f)
	chains := NewChainCheck(f.Name)
	_, rej, skip, _ := in.check(ctx, f, conv, opts, rows, chains, nil)
	if ctx.Err() != nil {
		return record.Diff{}, nil, ctx.Err()
	}
	if rej.Err == nil {
		if err := in.checkChains(ctx, f, chains, rej, skip, rows, scope.ready); err != nil {
			cancel()
			<-scope.done
			return record.Diff{}, nil, err
		}
	}
	if rej.Err != nil || rej.Bad > 0 {
		cancel()
		<-scope.done
		return record.Diff{}, nil, rej
	}
	p, err := in.planSync(ctx, f, rows, scope)
	if err != nil {
		return record.Diff{}, nil, err
	}
	if len(p.orphans) > 0 {
		return p.diff, p.lines, p.orphaned(f, rej)
	}
	return p.diff, p.lines, nil
}
