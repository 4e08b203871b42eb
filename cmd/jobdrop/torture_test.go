package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

// The short torture is part of `make test`; `make chaos` runs it for half
// an hour, with files of tens of thousands of rows.
var (
	tortureCycles   = flag.Int("torture-cycles", 4, "kill -9 cycles of the torture test in all, half on the embedded broker, half on a cluster")
	tortureDuration = flag.Duration("torture-duration", 0, "go on killing for at least this long in all, half on each broker kind")
	tortureRows     = flag.Int("torture-rows", 1_000, "rows of each large file whose injection and state commits are cut")
	tortureBulk     = flag.Int("torture-bulk", 500, "tasks each bulk pause or resume of the console changes")
	tortureSeed     = flag.Uint64("torture-seed", 0, "seed of the kill points (0: from the clock; the test logs it)")
)

// Where the torture kills.
const (
	phaseRestore = "restore"  // right after a start, while the engine restores the state topic
	phaseCommit  = "commit"   // a large file just dropped: its injection, then the engine's state commits
	phaseBulk    = "bulk"     // a bulk pause or resume of the console over thousands of tasks
	phaseAny     = "anywhere" // any moment while tasks fire; on the embedded broker, its writes too
)

// TestTortureKillNineAtRandomPoints kills `jobdrop run` with SIGKILL at
// random points, many times, on the embedded broker (which dies with it,
// cutting its own writes of its data dir) and on a cluster that outlives
// it. After every restart the state topic as a read_committed reader sees
// it (the last value per key, tombstones removing), the engine (how many
// tasks it holds) and the console (/api/summary and /api/tasks, task by
// task) must agree with each other and with what was done: every file's
// tasks with the last file's data, every bulk action applied, none lost.
// At the end every occurrence due must have fired exactly once.
func TestTortureKillNineAtRandomPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("kills are not short")
	}
	seed := *tortureSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("kill points from -torture-seed=%d", seed)
	cycles, dur := max(*tortureCycles/2, 1), *tortureDuration/2
	t.Run("embedded", func(t *testing.T) {
		listen := kafkatest.ClosedAddr(t)
		// The broker compacts every two seconds, not ten minutes: kills
		// land in its compactions too.
		torture(t, seed, cycles, dur, nil, []string{listen}, "JOBDROP_KAFKA_EMBEDDED_LISTEN="+listen,
			"JOBDROP_KAFKA_EMBEDDED_COMPACTION_INTERVAL=2s")
	})
	t.Run("cluster", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(t.TempDir()), kfake.GroupMinSessionTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		brokers := c.ListenAddrs()
		torture(t, seed+1, cycles, dur, c, brokers, "JOBDROP_KAFKA_BROKERS="+strings.Join(brokers, ","))
	})
}

// tortured is one jobdrop process under torture, and what was done to it.
type tortured struct {
	t        *testing.T
	rng      *rand.Rand
	c        *child
	brokers  []string
	console  string
	embedded bool
	cluster  *kfake.Cluster // the cluster outliving jobdrop; nil for the embedded broker
	mark     int            // where the log of the current run begins
	started  time.Time      // when the current run started

	view *stateView // the state topic as a read_committed reader follows it

	// What was done, and so what every reader must find.
	files      int    // large files dropped
	big        []bool // which tasks of the large files the last one left
	bulkPaused bool
	bulkCut    bool             // a bulk action was cut: some tasks may be paused, some not
	once       map[string]int64 // one-shot task → when it is due
	tickStart  time.Time

	// How long things take undisturbed: kill points are drawn in these.
	restoreSpan           time.Duration // from a start until the readers agree again
	injectSpan, applySpan time.Duration // a large file's claim to its archiving; then until the engine committed it
	askSpan, bulkSpan     time.Duration // a bulk action's request to its answer; then until the engine committed it

	// Figures.
	kills   map[string]int // by phase
	landed  map[string]int // what the process was doing
	checked int            // tasks compared across the three readers
	checks  int
	expired int // restarts that waited for a member killed as it joined to leave the group
	// From a restart: until /readyz answers 200, and until the readers
	// first agree; how long one comparison takes.
	readyAfter, agreeAfter, compareTook []time.Duration
	restarted                           bool // not yet agreed since the last restart
}

// Populations of tasks, by host.
const (
	hostTick = "tick" // fire every second, FIRE_ALL
	hostBig  = "big"  // the large files' tasks: never due, data from the last file
	hostBulk = "bulk" // paused and resumed in bulk from the console
	hostOnce = "once" // one-shots of each large file, due seconds after it
	ticks    = 20
)

// torture runs the cycles on brokers: those of cluster, or, with cluster
// nil, the embedded broker, which env says where to listen.
func torture(t *testing.T, seed uint64, cycles int, dur time.Duration, cluster *kfake.Cluster, brokers []string, env ...string) {
	console := kafkatest.ClosedAddr(t)
	tt := &tortured{
		t: t, rng: rand.New(rand.NewPCG(seed, seed)), brokers: brokers, console: "http://" + console,
		embedded: cluster == nil, cluster: cluster,
		view: newStateView(t, brokers), once: map[string]int64{}, big: make([]bool, *tortureRows),
		kills: map[string]int{}, landed: map[string]int{},
	}
	tt.started = time.Now()
	tt.c = startChildEnv(t, "torture", append(env, "JOBDROP_CONSOLE_LISTEN="+console,
		"JOBDROP_WATCHER_STABLE_CHECKS=1", "JOBDROP_WATCHER_CHECK_INTERVAL=100ms",
		"JOBDROP_SCHEDULER_SESSION_TIMEOUT=2s")...)
	tt.ready()

	// Tasks firing every second all along, tasks to pause and resume in
	// bulk, and the first large file: undisturbed, they say how long a
	// file and a bulk action take.
	tt.tickStart = time.Now().Add(2 * time.Second).Truncate(time.Second)
	var jl strings.Builder
	for i := range ticks {
		fmt.Fprintf(&jl, `{"host":%q,"name":"t%02d","topic":"torture-ticks","start":%d,"frequency":{"timeUnit":"SECONDS","time":1},"misfire":"FIRE_ALL"}`+"\n",
			hostTick, i, tt.tickStart.UnixMilli())
	}
	tt.drop("ticks.jsonl", jl.String())
	var bulk strings.Builder
	bulk.WriteString("host,name,topic,start\n")
	for i := range *tortureBulk {
		fmt.Fprintf(&bulk, "%s,%s,torture-bulk,%s\n", hostBulk, bulkName(i), tortureFar)
	}
	tt.drop("bulk.csv", bulk.String())
	tt.archived("ticks.jsonl")
	tt.archived("bulk.csv")
	tt.agree()

	name := tt.dropBig()
	tt.claimed(name)
	begin := time.Now()
	tt.archived(name)
	tt.injectSpan = time.Since(begin)
	tt.bigCommitted()
	tt.applySpan = time.Since(begin) - tt.injectSpan
	tt.agree()
	begin = time.Now()
	tt.bulkAction("pause")
	tt.askSpan = time.Since(begin)
	tt.bulkCommitted()
	tt.bulkSpan = time.Since(begin) - tt.askSpan
	tt.agree()
	tt.restoreSpan = 5 * time.Second // until a restart is measured
	t.Logf("undisturbed: a %d-row file is archived %s after its claim, and the engine has committed its tasks' state %s later; "+
		"a bulk pause of %d tasks is answered in %s, and committed by the engine %s later",
		*tortureRows, tt.injectSpan.Round(time.Millisecond), tt.applySpan.Round(time.Millisecond),
		*tortureBulk, tt.askSpan.Round(time.Millisecond), tt.bulkSpan.Round(time.Millisecond))

	// The kills: each round of four cycles takes every phase once, in a
	// random order.
	phases := []string{phaseRestore, phaseCommit, phaseBulk, phaseAny}
	begin = time.Now()
	n := 0
	for ; n < cycles || time.Since(begin) < dur; n++ {
		if n%len(phases) == 0 {
			tt.rng.Shuffle(len(phases), func(i, j int) { phases[i], phases[j] = phases[j], phases[i] })
		}
		switch phase := phases[n%len(phases)]; phase {
		case phaseRestore:
			tt.killDuringRestore()
		case phaseCommit:
			tt.killDuringCommit()
		case phaseBulk:
			tt.killDuringBulk()
		case phaseAny:
			tt.killAnywhere()
		}
		if n%10 == 9 {
			tt.wholeTopicAgrees()
		}
	}
	tt.wholeTopicAgrees()
	lost, dups, occurrences := tt.occurrences()

	b, _ := os.ReadFile(tt.c.log)
	logs := string(b)
	cut := 0
	for _, m := range cutOffLine.FindAllStringSubmatch(logs, -1) {
		k, _ := strconv.Atoi(m[1])
		cut += k
	}
	torn := strings.Count(logs, "corrupt bytes")
	compactions := strings.Count(logs, `msg="topics compacted"`)
	undone := strings.Count(logs, `msg="compaction cut off by an unclean stop undone`)
	kills := 0
	for _, k := range tt.kills {
		kills += k
	}
	t.Logf("%d cycles in %s, %d kills (restore %d, commit %d, bulk %d, anywhere %d)", n, time.Since(begin).Round(time.Second),
		kills, tt.kills[phaseRestore], tt.kills[phaseCommit], tt.kills[phaseBulk], tt.kills[phaseAny])
	var where []string
	for k, v := range tt.landed {
		where = append(where, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(where)
	t.Logf("kills landed: %s", strings.Join(where, "; "))
	if tt.embedded {
		t.Logf("the broker's own writes cut: %d transactions found with records on disk and no end marker at a restart, %d segments with a torn last batch, "+
			"%d compactions cut off and undone (%d done)", cut, torn, undone, compactions)
	}
	t.Logf("after a restart, /readyz answered 200 within %s, the readers agreed within %s (medians); a comparison took %s",
		median(tt.readyAfter), median(tt.agreeAfter), median(tt.compareTook))
	if tt.cluster != nil {
		t.Logf("%d restarts waited for a member killed as it joined to leave the group", tt.expired)
	}
	t.Logf("%d checks after restarts, %d task comparisons (state topic, engine, console): disagreeing 0; %d occurrences due: lost %d, duplicated %d",
		tt.checks, tt.checked, occurrences, lost, dups)
	if lost != 0 || dups != 0 {
		t.Errorf("occurrences lost %d, duplicated %d", lost, dups)
	}
}

// median is the middle of ds, rounded to the millisecond.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

// tortureFar is when the large files' and the bulk tasks' first
// occurrences are due: never during the test.
var tortureFar = time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)

// Lines of the logs and of /metrics the torture reads.
var (
	assignedLine    = regexp.MustCompile(`msg="partitions assigned"[^\n]* partitions="?\[([0-9 ]*)\]`)
	restoredLine    = regexp.MustCompile(`msg="partition restored"[^\n]* duration_ms=(\d+)`)
	cutOffLine      = regexp.MustCompile(`msg="checked transactions after an unclean stop"[^\n]* cut_off=(\d+)`)
	activeTasksLine = regexp.MustCompile(`(?m)^jobdrop_active_tasks (\S+)$`)
)

// drop writes a file into the inbox whole, renamed into place.
func (tt *tortured) drop(name, content string) {
	tmp := filepath.Join(tt.t.TempDir(), name)
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		tt.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(tt.c.inbox, name)); err != nil {
		tt.t.Fatal(err)
	}
}

// dropBig drops the next large file: every task of hostBig with the
// file's number as data, a few of them deleted instead, and one-shots due
// within seconds.
func (tt *tortured) dropBig() string {
	k := tt.files
	tt.files++
	var b strings.Builder
	b.WriteString("host,name,action,topic,start,data.v\n")
	for i := range tt.big {
		action := "INSERT"
		if k > 0 && tt.rng.IntN(50) == 0 {
			action = "DELETE"
		}
		tt.big[i] = action == "INSERT"
		fmt.Fprintf(&b, "%s,%s,%s,torture-big,%s,%d\n", hostBig, bigName(i), action, tortureFar, k)
	}
	now := time.Now()
	for j := range 20 {
		due := now.Add(time.Duration(1+tt.rng.IntN(8)) * time.Second).Truncate(time.Second)
		name := fmt.Sprintf("k%04d-%02d", k, j)
		tt.once[hostOnce+"/"+name] = due.UnixMilli()
		fmt.Fprintf(&b, "%s,%s,INSERT,torture-once,%s,%d\n", hostOnce, name, due.UTC().Format(time.RFC3339), k)
	}
	name := fmt.Sprintf("big-%04d.csv", k)
	tt.drop(name, b.String())
	return name
}

// at returns once name is in sub of the inbox.
func (tt *tortured) at(sub, name string) {
	tt.t.Helper()
	path := filepath.Join(tt.c.inbox, sub, name)
	kafkatest.Eventually(tt.t, 3*time.Minute, name+" in "+sub+"/", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// claimed returns once name has left the inbox: in .processing/, or
// already further when it was taken and injected between two looks (a
// file renamed in is taken at once).
func (tt *tortured) claimed(name string) {
	tt.t.Helper()
	kafkatest.Eventually(tt.t, 3*time.Minute, name+" claimed", func() bool { return tt.where(name) != "inbox" })
}

func (tt *tortured) archived(name string) { tt.t.Helper(); tt.at("archive", name) }

// where says where a file is.
func (tt *tortured) where(name string) string {
	for _, sub := range []string{".processing", "archive", "failed"} {
		if _, err := os.Stat(filepath.Join(tt.c.inbox, sub, name)); err == nil {
			return sub
		}
	}
	return "inbox"
}

// ready returns once the current run answers /readyz with 200.
func (tt *tortured) ready() {
	tt.t.Helper()
	var last string
	defer func() {
		if tt.t.Failed() {
			tt.t.Logf("/readyz answered last: %s", last)
		}
	}()
	defer func() { tt.readyAfter = append(tt.readyAfter, time.Since(tt.started)) }()
	kafkatest.Eventually(tt.t, 3*time.Minute, "/readyz 200", func() bool {
		resp, err := http.Get(tt.console + "/readyz")
		if err != nil {
			last = err.Error()
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = resp.Status + " " + string(b)
		return resp.StatusCode == http.StatusOK
	})
}
