package injector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/diff"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// chainCSV reads the job lists of these tests, one task a line:
// host,name,after,cron[,action], after's names separated by "|". A row
// is checked as converters check theirs (Definition.Validate).
type chainCSV struct{}

func (chainCSV) Convert(ctx context.Context, path string, _ converters.Options, emit func(converters.Row) error) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, ",")
		for len(f) < 5 {
			f = append(f, "")
		}
		d := task.Definition{Host: f[0], Name: f[1], Action: task.Insert, Topic: "jobs", Cron: f[3]}
		if f[2] != "" {
			d.After = strings.Split(f[2], "|")
		}
		if f[4] != "" {
			d = task.Definition{Host: f[0], Name: f[1], Action: task.Action(f[4])}
		}
		r := converters.Row{Line: i + 1, Def: d}
		if err := d.Validate(); err != nil {
			r.Err = &converters.RowError{File: filepath.Base(path), Row: i + 1, Err: err}
		}
		if err := emit(r); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// fakeSources is a task store: the live tasks, the sync source's.
type fakeSources struct {
	live  map[string]task.Definition // by key
	scope []string                   // the keys of the sync source
	// brokers and input are where the injector writes its barriers.
	brokers []string
	input   string
}

// WaitApplied returns once the barriers are committed, as the real one
// does: no engine applies a record before its transaction commits.
func (s *fakeSources) WaitApplied(ctx context.Context, offsets map[int32]int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		ends, err := adm.ListCommittedOffsets(ctx, s.input)
		committed := err == nil
		for p, off := range offsets {
			o, ok := ends.Lookup(s.input, p)
			committed = committed && ok && o.Err == nil && o.Offset > off
		}
		if committed {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *fakeSources) SourceTasks(_ context.Context, _ Source, fn func(diff.Current) error) error {
	for _, k := range s.scope {
		if err := fn(diff.Current{Key: k, Definition: s.live[k], Live: true, InScope: true}); err != nil {
			return err
		}
	}
	return nil
}

func (s *fakeSources) Tasks(_ context.Context, keys []string, fn func(diff.Current) error) error {
	for _, k := range keys {
		if d, ok := s.live[k]; ok {
			if err := fn(diff.Current{Key: k, Definition: d, Live: true}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *fakeSources) Followers(_ context.Context, keys []string, fn func(diff.Current) error) error {
	for k, d := range s.live {
		if slices.ContainsFunc(d.Predecessors(), func(p string) bool { return slices.Contains(keys, p) }) {
			if err := fn(diff.Current{Key: k, Definition: d, Live: true}); err != nil {
				return err
			}
		}
	}
	return nil
}

// liveTask is a running task of the fake store.
func liveTask(key, cron string, after ...string) (string, task.Definition) {
	host, name, _ := task.SplitKey(key)
	return key, task.Definition{Host: host, Name: name, Action: task.Insert, Topic: "jobs", Cron: cron, After: after}
}

// chainInjector is an injector on a new cluster whose task store is
// sources (none when nil).
func chainInjector(t *testing.T, sources Sources) (*Injector, []string, record.Topics) {
	t.Helper()
	brokers := kafkatest.Cluster(t)
	topics := record.Topics{}.WithDefaults()
	if err := kafka.EnsureTopics(context.Background(), kafkatest.Client(t, brokers), topics, 3, -1); err != nil {
		t.Fatal(err)
	}
	if fake, ok := sources.(*fakeSources); ok {
		fake.brokers, fake.input = brokers, topics.Input
	}
	in, err := New(Config{ClientOpts: kafka.ClientOpts(brokers, "test"), TransactionalID: "test-injector", Topics: topics, Sources: sources},
		nil, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	return in, brokers, topics
}

// injected is what the input topic holds, read back read_committed: the
// links ("pred → follower") and the commands' keys, each sorted, barriers
// aside. It fails the test when a partition holds a link after a command.
func injected(t *testing.T, brokers []string, topics record.Topics) (links, commands []string) {
	t.Helper()
	commandAt := map[int32]string{}
	for _, rec := range kafkatest.Drain(t, brokers, topics.Input) {
		switch {
		case header(rec, record.HeaderBarrier) != "":
		case header(rec, record.HeaderLink) != "":
			var l record.Link
			if err := json.Unmarshal(rec.Value, &l); err != nil {
				t.Fatal(err)
			}
			if header(rec, record.HeaderLink) != record.LinkAdd {
				t.Errorf("link %s → %s: %s", rec.Key, l.Follower, header(rec, record.HeaderLink))
			}
			if c := commandAt[rec.Partition]; c != "" {
				t.Errorf("link %s → %s after the command of %s in partition %d", rec.Key, l.Follower, c, rec.Partition)
			}
			links = append(links, string(rec.Key)+" → "+l.Follower)
		default:
			commandAt[rec.Partition] = string(rec.Key)
			commands = append(commands, string(rec.Key))
		}
	}
	slices.Sort(links)
	slices.Sort(commands)
	return links, commands
}

func audits(t *testing.T, brokers []string, topics record.Topics) []record.Audit {
	t.Helper()
	return kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, brokers, topics.Audit))
}

// chainFile is extract → (transform, load) → report, with other rows
// before it: extra rows that follow nothing first (the stream has
// produced many before it meets a chain), then the chain's followers
// before their predecessors.
func chainFile(extra int) string {
	var b strings.Builder
	for i := range extra {
		fmt.Fprintf(&b, "acme,job-%06d,,0 1 * * *\n", i)
	}
	b.WriteString("acme,report,transform|load,\n")
	b.WriteString("acme,transform,extract,\n")
	b.WriteString("acme,load,acme/extract,\n")
	b.WriteString("acme,extract,,0 2 * * *\n")
	return b.String()
}

// TestChainFileInjectsLinksBeforeCommands: a file whose rows follow
// tasks is one transaction whose link records, one per edge, come before
// every command of each partition, and every command after; read back
// read_committed, nothing of the stream its first pass aborted is there.
func TestChainFileInjectsLinksBeforeCommands(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra int
	}{
		{"small file", 0},
		{"file converted again while producing", bufferRows + 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, brokers, topics := chainInjector(t, nil)
			res, err := in.Inject(context.Background(), File{Path: writeFile(t, "chain.csv", chainFile(tc.extra))}, chainCSV{}, converters.Options{})
			if err != nil || res.Outcome != Injected || res.Batch.Rows != tc.extra+4 || len(res.Batch.Warnings) != 0 {
				t.Fatalf("got %+v, %v; want %d rows injected, no warning", res, err, tc.extra+4)
			}
			links, commands := injected(t, brokers, topics)
			want := []string{"acme/extract → acme/load", "acme/extract → acme/transform", "acme/load → acme/report", "acme/transform → acme/report"}
			if !slices.Equal(links, want) {
				t.Errorf("links %q, want %q", links, want)
			}
			if len(commands) != tc.extra+4 || !slices.Contains(commands, "acme/extract") || !slices.Contains(commands, "acme/report") {
				t.Errorf("%d commands, want %d, the chain's among them", len(commands), tc.extra+4)
			}
			if a := audits(t, brokers, topics); len(a) != 1 || a[0].Action != record.ActionFileInjected {
				t.Errorf("audit %+v, want the file's injection alone", a)
			}
		})
	}
}

// TestChainFileWithAProblemCommitsNothing: a predecessor that is neither
// a task of the file nor a running one, or a cycle, rejects the file with
// the row and its predecessor named, and nothing of it reaches the input
// topic, whatever rows the stream produced before it met the chain.
func TestChainFileWithAProblemCommitsNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		want    []string
	}{
		{
			name:    "an unknown predecessor, misspelt",
			content: chainFile(3) + "acme,audit,extrct,\n",
			want:    []string{"1 of 8 rows rejected", `row 8: column after: value "extrct": predecessor acme/extrct is neither in the file nor running; did you mean extract?`},
		},
		{
			name:    "a predecessor of another host",
			content: chainFile(0) + "acme,audit,other/extract,\n",
			want:    []string{`row 5: column after: value "other/extract": predecessor other/extract is neither in the file nor running`},
		},
		{
			name:    "a predecessor the file deletes",
			content: chainFile(0) + "acme,gone,,,DELETE\nacme,audit,gone,\n",
			want:    []string{"row 6: column after: value \"gone\": predecessor acme/gone is deleted by row 5 of the file"},
		},
		{
			name:    "a predecessor whose row is invalid",
			content: "acme,extract,,not cron\nacme,load,extract,\n",
			want:    []string{"2 of 2 rows rejected", "row 2: column after: value \"extract\": predecessor acme/extract is row 1 of the file, which is invalid"},
		},
		{
			name:    "a cycle",
			content: "acme,first,,0 1 * * *\nacme,b,a|first,\nacme,c,b,\nacme,a,c,\n",
			want:    []string{"chains.csv: column after: the chains close a cycle, acme/a → acme/b → acme/c → acme/a (acme/a at row 4, acme/b at row 2, acme/c at row 3): a task on a cycle waits for itself and never fires"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, brokers, topics := chainInjector(t, &fakeSources{})
			res, err := in.Inject(context.Background(), File{Path: writeFile(t, "chains.csv", tc.content)}, chainCSV{}, converters.Options{})
			var rej *RejectedError
			if !errors.As(err, &rej) || res.Outcome != Rejected {
				t.Fatalf("got %+v, %v; want a rejection", res, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("report lacks %q:\n%s", w, err)
				}
			}
			if links, commands := injected(t, brokers, topics); len(links)+len(commands) != 0 {
				t.Errorf("a rejected file committed links %q and commands %q", links, commands)
			}
			a := audits(t, brokers, topics)
			if len(a) != 1 || a[0].Action != record.ActionFileRejected || a[0].Batch == nil || len(a[0].Batch.Errors) == 0 ||
				!strings.Contains(strings.Join(a[0].Batch.Errors, "\n"), tc.want[len(tc.want)-1]) {
				t.Errorf("audit %+v, want the rejection with its errors", a)
			}
		})
	}
}

// TestGoodRowsLeaveOutTheRowsThatFollowARowLeftOut: under the good-rows
// policy a row whose predecessor is missing is left out, and so is every
// row that follows it then, as if it were not in the file; the other rows
// and their links are injected. A cycle still rejects the whole file.
func TestGoodRowsLeaveOutTheRowsThatFollowARowLeftOut(t *testing.T) {
	in, brokers, topics := chainInjector(t, &fakeSources{})
	content := "acme,extract,,0 1 * * *\n" +
		"acme,transform,extract|missing,\n" + // row 2: missing is nowhere
		"acme,report,transform,\n" + // row 3: follows a row left out
		"acme,load,extract,\n" +
		"acme,bad,,not cron\n" + // row 5: invalid
		"acme,after-bad,bad,\n" // row 6: follows an invalid row
	res, err := in.Inject(context.Background(), File{Path: writeFile(t, "mixed.csv", content), Policy: PolicyGoodRows}, chainCSV{}, converters.Options{})
	if err != nil || res.Outcome != Partial || res.Batch.Rejected != 4 {
		t.Fatalf("got %+v, %v; want 4 rows left out", res, err)
	}
	for _, w := range []string{
		"4 of 6 rows rejected; the other 2 were injected",
		`row 2: column after: value "missing": predecessor acme/missing is neither in the file nor running`,
		`row 3: column after: value "transform": predecessor acme/transform is row 2 of the file, which is invalid and left out, and it is not running`,
		`row 6: column after: value "bad": predecessor acme/bad is row 5 of the file, which is invalid and left out, and it is not running`,
	} {
		if !strings.Contains(res.Report.Error(), w) {
			t.Errorf("report lacks %q:\n%s", w, res.Report)
		}
	}
	links, commands := injected(t, brokers, topics)
	if want := []string{"acme/extract → acme/load"}; !slices.Equal(links, want) {
		t.Errorf("links %q, want %q", links, want)
	}
	if want := []string{"acme/extract", "acme/load"}; !slices.Equal(commands, want) {
		t.Errorf("commands %q, want %q", commands, want)
	}

	in, brokers, topics = chainInjector(t, &fakeSources{})
	_, err = in.Inject(context.Background(), File{Path: writeFile(t, "cycle.csv", "acme,ok,,0 1 * * *\nacme,a,b,\nacme,b,a,\n"), Policy: PolicyGoodRows},
		chainCSV{}, converters.Options{})
	if !strings.Contains(fmt.Sprint(err), "acme/a → acme/b → acme/a") {
		t.Errorf("a cycle under good-rows: %v, want the file rejected naming it", err)
	}
	if links, commands := injected(t, brokers, topics); len(links)+len(commands) != 0 {
		t.Errorf("a file with a cycle committed links %q and commands %q", links, commands)
	}
}

// TestChainFileNamesRunningTasks: a predecessor may be a task that runs,
// whose after the file's cycles go through unless the file redefines it;
// without a task store, a name outside the file is left unchecked, and
// the batch's warnings say so.
func TestChainFileNamesRunningTasks(t *testing.T) {
	live := map[string]task.Definition{}
	add := func(key string, d task.Definition) { live[key] = d }
	add(liveTask("acme/extract", "0 1 * * *"))
	add(liveTask("acme/audit", "", "acme/report"))
	add(liveTask("acme/old", "", "acme/report"))
	store := &fakeSources{live: live}

	in, brokers, topics := chainInjector(t, store)
	res, err := in.Inject(context.Background(), File{Path: writeFile(t, "followers.csv", "acme,report,extract,\n")}, chainCSV{}, converters.Options{})
	if err != nil || res.Outcome != Injected {
		t.Fatalf("a file following a running task: %+v, %v", res, err)
	}
	links, commands := injected(t, brokers, topics)
	if !slices.Equal(links, []string{"acme/extract → acme/report"}) || !slices.Equal(commands, []string{"acme/report"}) {
		t.Errorf("links %q, commands %q", links, commands)
	}

	// acme/audit runs after acme/report: acme/report after acme/audit
	// closes a cycle; redefining acme/audit in the same file opens it.
	in, brokers, topics = chainInjector(t, store)
	_, err = in.Inject(context.Background(), File{Path: writeFile(t, "cycle.csv", "acme,report,audit,\n")}, chainCSV{}, converters.Options{})
	if want := "acme/audit → acme/report → acme/audit (acme/audit running, acme/report at row 1)"; !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("a cycle through a running task: %v, want %q", err, want)
	}
	if links, commands := injected(t, brokers, topics); len(links)+len(commands) != 0 {
		t.Errorf("a file with a cycle committed links %q and commands %q", links, commands)
	}
	res, err = in.Inject(context.Background(), File{Path: writeFile(t, "reversed.csv", "acme,report,audit,\nacme,audit,,0 3 * * *\n")}, chainCSV{}, converters.Options{})
	if err != nil || res.Outcome != Injected {
		t.Errorf("a file that redefines the running task: %+v, %v", res, err)
	}

	in, brokers, topics = chainInjector(t, nil)
	res, err = in.Inject(context.Background(), File{Path: writeFile(t, "blind.csv", "acme,report,extract|elsewhere/load,\n")}, chainCSV{}, converters.Options{})
	if err != nil || res.Outcome != Injected || len(res.Batch.Warnings) != 2 ||
		!strings.Contains(res.Batch.Warnings[1], "row 1: column after: predecessor elsewhere/load is not in the file and was not checked: no task store") {
		t.Fatalf("without a store: %+v, %v; want it injected with two warnings", res, err)
	}
	links, _ = injected(t, brokers, topics)
	if want := []string{"acme/extract → acme/report", "elsewhere/load → acme/report"}; !slices.Equal(links, want) {
		t.Errorf("links %q, want %q", links, want)
	}
}

// TestSyncRefusesToDeleteAPredecessor: a new version of a sync source
// that would delete a task that a task it keeps still follows (a row of
// the version, or a running task of another source) is rejected, naming
// the task and its followers, however much it deletes and whether an
// operator reviewed it; a version that deletes the followers with it is
// applied.
func TestSyncRefusesToDeleteAPredecessor(t *testing.T) {
	live := map[string]task.Definition{}
	add := func(key string, d task.Definition) { live[key] = d }
	add(liveTask("acme/extract", "0 1 * * *"))
	add(liveTask("acme/transform", "", "extract"))
	add(liveTask("acme/load", "", "extract"))
	add(liveTask("acme/keep", "0 2 * * *"))
	add(liveTask("other/report", "", "acme/extract"))
	scope := []string{"acme/extract", "acme/transform", "acme/load", "acme/keep"}
	for _, tc := range []struct {
		name    string
		content string
		sync    Sync
		want    string // "": applied
	}{
		{"rows follow it", "acme,transform,extract,\nacme,load,extract,\nacme,keep,,0 2 * * *\n", Sync{MaxRemove: 1},
			"the new version removes acme/extract, which acme/load, acme/transform and other/report still follow"},
		{"held for review otherwise", "acme,transform,extract,\nacme,load,extract,\nacme,keep,,0 2 * * *\n", Sync{MaxRemove: 0},
			"removes acme/extract, which acme/load, acme/transform and other/report still follow"},
		{"reviewed", "acme,transform,extract,\nacme,load,extract,\nacme,keep,,0 2 * * *\n", Sync{Reviewed: true},
			"removes acme/extract, which acme/load, acme/transform and other/report still follow"},
		{"a task of another source follows it", "acme,keep,,0 2 * * *\n", Sync{MaxRemove: 1},
			"removes acme/extract, which other/report still follows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, brokers, topics := chainInjector(t, &fakeSources{live: live, scope: scope})
			sync := tc.sync
			res, err := in.Inject(context.Background(), File{Path: writeFile(t, "jobs.csv", tc.content), Sync: &sync}, chainCSV{}, converters.Options{})
			var rej *RejectedError
			if !errors.As(err, &rej) || res.Outcome != Rejected || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was injected") {
				t.Fatalf("got %+v, %v; want a rejection saying %q", res, err, tc.want)
			}
			if links, commands := injected(t, brokers, topics); len(links)+len(commands) != 0 {
				t.Errorf("a refused version committed links %q and commands %q", links, commands)
			}
			a := audits(t, brokers, topics)
			if len(a) != 1 || a[0].Action != record.ActionFileRejected || !strings.Contains(strings.Join(a[0].Batch.Errors, "\n"), tc.want) {
				t.Errorf("audit %+v, want the rejection naming the followers", a)
			}
		})
	}

	// Without the task of another source that follows it, and with its
	// followers, it goes.
	delete(live, "other/report")
	in, brokers, topics := chainInjector(t, &fakeSources{live: live, scope: scope})
	res, err := in.Inject(context.Background(), File{Path: writeFile(t, "jobs.csv", "acme,keep,,0 2 * * *\n"), Sync: &Sync{MaxRemove: 1}},
		chainCSV{}, converters.Options{})
	if err != nil || res.Outcome != Injected || res.Batch.Diff == nil || res.Batch.Diff.Removed != 3 {
		t.Fatalf("a version deleting a chain whole: %+v, %v", res, err)
	}
	if _, commands := injected(t, brokers, topics); !slices.Equal(commands, []string{"acme/extract", "acme/load", "acme/transform"}) {
		t.Errorf("commands %q, want the three deletes", commands)
	}
}

// TestDiffSaysAChainsProblems: the dry run of a file finds what its drop
// would refuse: an unknown predecessor, and a sync version deleting a
// task that others follow.
func TestDiffSaysAChainsProblems(t *testing.T) {
	live := map[string]task.Definition{}
	k, d := liveTask("acme/extract", "0 1 * * *")
	live[k] = d
	k, d = liveTask("acme/load", "", "extract")
	live[k] = d
	in, _, _ := chainInjector(t, &fakeSources{live: live, scope: []string{"acme/extract", "acme/load"}})
	_, _, err := in.Diff(context.Background(), File{Path: writeFile(t, "a.csv", "acme,load,extract|loader,\n")}, chainCSV{}, converters.Options{})
	var rej *RejectedError
	if !errors.As(err, &rej) || !strings.Contains(strings.Join(rej.RowLines(), "\n"), "predecessor acme/loader is neither in the file nor running") {
		t.Errorf("Diff = %v, want the unknown predecessor", err)
	}
	_, _, err = in.Diff(context.Background(), File{Path: writeFile(t, "b.csv", "acme,load,extract,\n"), Sync: &Sync{MaxRemove: 1}}, chainCSV{}, converters.Options{})
	if !errors.As(err, &rej) || !strings.Contains(err.Error(), "removes acme/extract, which acme/load still follows") {
		t.Errorf("Diff of a sync = %v, want the orphan", err)
	}
}

// TestChainCheckHashesKeysAsItLooksThemUp: the hash a row is recorded
// under is the one Check looks its key up by.
func TestChainCheckHashesKeysAsItLooksThemUp(t *testing.T) {
	c := NewChainCheck("f")
	c.Row(&converters.Row{Line: 7, Def: task.Definition{Host: "h", Name: "a/b", Action: task.Insert}}, true)
	if row, ok := c.defined.get(maphash.String(c.seed, "h/a/b")); !ok || row != 7 {
		t.Errorf("h/a/b found at row %d, %v; want row 7", row, ok)
	}
}
