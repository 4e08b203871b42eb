package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
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
	restoredLine    = regexp.MustCompile(`msg="partition restored"[^\n]* took_ms=(\d+)`)
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

// kill kills the current run without warning during phase, starts
// jobdrop again and returns the killed run's log.
func (tt *tortured) kill(phase string) string {
	tt.c.signal(syscall.SIGKILL)
	<-tt.c.done
	tt.kills[phase]++
	b, err := os.ReadFile(tt.c.log)
	if err != nil {
		tt.t.Fatal(err)
	}
	killed := string(b[tt.mark:])
	tt.mark = len(b)
	if tt.cluster != nil && !strings.Contains(killed, `msg="partitions assigned"`) {
		// The cluster stands in for Kafka, but where Kafka gives every
		// member that joins its group a session that expires, kfake
		// starts it only once the member's JoinGroup is answered: a
		// member killed before that stays in the group, holding the
		// partitions it is assigned, until the group rebalances again.
		// Kafka would expire it; here the next start waits until the
		// group lets it go (its SyncGroup deadline).
		tt.expired++
		kafkatest.Eventually(tt.t, time.Minute, "the killed member to leave the group", func() bool {
			g := tt.cluster.GroupInfo("jobdrop-scheduler")
			return g == nil || len(g.Members) == 0
		})
	}
	tt.started, tt.restarted = time.Now(), true
	tt.c.start()
	return killed
}

// pause waits for a kill point drawn in [0, span).
func (tt *tortured) pause(span time.Duration) time.Duration {
	d := time.Duration(tt.rng.Int64N(int64(max(span, time.Millisecond))))
	time.Sleep(d) // the kill point itself is what is tested
	return d
}

// killDuringRestore kills a run, then kills the next one at a random
// point of its start: half the time from the start itself (loading the
// broker's data, joining the group, restoring), half the time from the
// group's assignment of the partitions, within how long the killed run's
// restore of the state topic took.
func (tt *tortured) killDuringRestore() {
	tt.pause(time.Second)
	prev := tt.kill(phaseAny)
	tt.landed["anywhere, before a restore kill"]++
	from := "a start"
	var d time.Duration
	if tt.rng.IntN(2) == 0 {
		d = tt.pause(tt.restoreSpan)
	} else {
		took := 50 * time.Millisecond
		for _, m := range restoredLine.FindAllStringSubmatch(prev, -1) {
			ms, _ := strconv.Atoi(m[1])
			took = max(took, time.Duration(ms)*time.Millisecond)
		}
		tt.logShows(`msg="partitions assigned"`)
		from = "the partitions' assignment"
		d = tt.pause(took * 5 / 4)
	}
	log := tt.kill(phaseRestore)
	what := "restore: "
	owned := 0
	for _, m := range assignedLine.FindAllStringSubmatch(log, -1) {
		owned += len(strings.Fields(m[1]))
	}
	restored := strings.Count(log, `msg="partition restored"`)
	switch {
	case tt.embedded && !strings.Contains(log, "embedded broker started"):
		what += "the embedded broker loading its data"
	case !strings.Contains(log, "console listening"):
		what += "starting, before the console listened"
	case owned == 0:
		what += "waiting for the group to assign partitions"
	case restored < owned:
		what += "restoring the state partitions"
	default:
		what += "after every partition was restored"
	}
	tt.landed[what]++
	tt.t.Logf("kill -9 %s after %s: %s (%d of %d partitions restored)", d.Round(time.Millisecond), from, what, restored, owned)
	tt.ready()
	tt.agree()
}

// logShows returns once the current run has logged s.
func (tt *tortured) logShows(s string) {
	tt.t.Helper()
	kafkatest.Eventually(tt.t, time.Minute, "the log to show "+s, func() bool {
		b, err := os.ReadFile(tt.c.log)
		return err == nil && len(b) > tt.mark && strings.Contains(string(b[tt.mark:]), s)
	})
}

// killDuringCommit drops a large file and kills the run while it is
// injected or, once it is archived, while the engine applies its commands
// and commits its tasks' state, half the time each.
func (tt *tortured) killDuringCommit() {
	name := tt.dropBig()
	tt.claimed(name)
	from, span := "claim", tt.injectSpan
	if tt.rng.IntN(2) == 0 {
		tt.archived(name)
		from, span = "archiving", tt.applySpan
	}
	d := tt.pause(span)
	tt.kill(phaseCommit)
	what := "commit: the file being injected"
	if tt.where(name) == "archive" {
		what = "commit: the file injected, the engine applying it and committing its tasks' state"
		if from == "archiving" && d > tt.applySpan*3/4 {
			what = "commit: the file injected, the engine about done committing its tasks' state"
		}
	}
	tt.landed[what]++
	tt.t.Logf("kill -9 %s after the %s of %s: %s", d.Round(time.Millisecond), from, name, what)
	tt.ready()
	tt.archived(name)
	tt.agree()
}

// bigCommitted returns once the state topic holds the last large file's
// data for every task it leaves.
func (tt *tortured) bigCommitted() {
	tt.t.Helper()
	last := strconv.Itoa(tt.files - 1)
	kafkatest.Eventually(tt.t, 3*time.Minute, "the engine to commit the state of the tasks of the last file", func() bool {
		state := tt.view.catchUp()
		for i, live := range tt.big {
			if v, ok := state[hostBig+"/"+bigName(i)]; live != ok || ok && v.data != last {
				return false
			}
		}
		return true
	})
}

// bulkCommitted returns once the state topic holds the last bulk action's
// outcome for every task of hostBulk.
func (tt *tortured) bulkCommitted() {
	tt.t.Helper()
	kafkatest.Eventually(tt.t, 3*time.Minute, "the engine to commit the last bulk action", func() bool {
		state := tt.view.catchUp()
		for i := range *tortureBulk {
			if v := state[hostBulk+"/"+bulkName(i)]; v.paused != tt.bulkPaused {
				return false
			}
		}
		return true
	})
}

// killDuringBulk pauses or resumes every task of hostBulk from the
// console and kills the run while the request is under way or, once it
// is answered, while the engine applies the commands, half the time each.
// Once the run is back, the action is asked again, as an operator whose
// request failed would; tasks already paused or resumed are skipped by
// the console.
func (tt *tortured) killDuringBulk() {
	verb := "pause"
	if tt.bulkPaused {
		verb = "resume"
	}
	answered := make(chan error, 1)
	go func() { answered <- tt.postBulk(verb) }()
	from, span := "request", tt.askSpan
	if tt.rng.IntN(2) == 0 {
		if err := <-answered; err != nil {
			tt.t.Fatal(err)
		}
		answered <- nil
		from, span = "answer", tt.bulkSpan
	}
	d := tt.pause(span)
	tt.kill(phaseBulk)
	what := "bulk " + verb + ": the request under way"
	if err := <-answered; err == nil {
		what = "bulk " + verb + ": answered, the engine applying the commands"
	}
	tt.landed[what]++
	tt.t.Logf("kill -9 %s after the %s of a bulk %s: %s", d.Round(time.Millisecond), from, verb, what)
	tt.ready()
	tt.bulkCut = true
	tt.agree() // what went in before the kill, all readers alike
	tt.bulkAction(verb)
	tt.bulkCut = false
	tt.agree()
}

// killAnywhere kills the run at a random moment while tasks fire.
func (tt *tortured) killAnywhere() {
	d := tt.pause(3 * time.Second)
	tt.kill(phaseAny)
	tt.landed["anywhere"]++
	tt.t.Logf("kill -9 %s into a quiet moment", d.Round(time.Millisecond))
	tt.ready()
	tt.agree()
	// A restart's kill points are drawn from its start until the three
	// readers agree again.
	tt.restoreSpan = time.Since(tt.started)
}

// postBulk asks the console to apply verb to every task of hostBulk.
func (tt *tortured) postBulk(verb string) error {
	resp, err := http.Post(tt.console+"/api/tasks/"+verb+"?host="+hostBulk, "application/json", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST /api/tasks/%s: %s %s", verb, resp.Status, b)
	}
	return nil
}

// bulkAction applies verb to every task of hostBulk, asking again while
// the console cannot.
func (tt *tortured) bulkAction(verb string) {
	tt.t.Helper()
	var last error
	kafkatest.Eventually(tt.t, 2*time.Minute, "the console to take a bulk "+verb, func() bool {
		last = tt.postBulk(verb)
		return last == nil
	})
	tt.bulkPaused = verb == "pause"
}

// taskView is what the readers are compared on.
type taskView struct {
	paused   bool
	data     string // the data's "v"
	nextFire int64
}

func (v taskView) String() string {
	return fmt.Sprintf("paused=%t v=%q nextFire=%d", v.paused, v.data, v.nextFire)
}

// agree returns once the state topic, the engine and the console agree
// task by task with each other and with what was done, and fails the test
// when they still do not after three minutes.
func (tt *tortured) agree() {
	tt.t.Helper()
	var diffs []string
	var bad int
	defer func() {
		if tt.t.Failed() {
			tt.t.Logf("%d tasks disagree; the first: \n%s", bad, strings.Join(diffs, "\n"))
			if tt.cluster != nil {
				if g := tt.cluster.GroupInfo("jobdrop-scheduler"); g != nil {
					for _, m := range g.Members {
						tt.t.Logf("group member %s (%s): %v", m.MemberID, m.ClientHost, m.Assignment)
					}
				}
			}
		}
	}()
	kafkatest.Eventually(tt.t, 3*time.Minute, "the state topic, the engine and the console to agree", func() bool {
		begin := time.Now()
		diffs, bad = tt.compare()
		tt.compareTook = append(tt.compareTook, time.Since(begin))
		return bad == 0
	})
	if tt.restarted {
		tt.agreeAfter = append(tt.agreeAfter, time.Since(tt.started))
		tt.restarted = false
	}
	tt.checks++
}

// compare reads the three and says where they disagree.
func (tt *tortured) compare() (diffs []string, bad int) {
	state := tt.view.catchUp()
	engine, ok := tt.engineTasks()
	if !ok {
		return []string{"the engine's task count cannot be read"}, 1
	}
	var sum storetype.Summary
	if err := getJSON(tt.console+"/api/summary", &sum); err != nil {
		return []string{err.Error()}, 1
	}
	console, err := tt.consoleTasks()
	if err != nil {
		return []string{err.Error()}, 1
	}
	add := func(key, format string, args ...any) {
		bad++
		if len(diffs) < 20 {
			diffs = append(diffs, key+": "+fmt.Sprintf(format, args...))
		}
	}
	if engine != len(state) {
		add("engine", "holds %d tasks, the state topic %d", engine, len(state))
	}
	if sum.TasksActive+sum.TasksPaused != len(state) {
		add("console", "/api/summary counts %d active and %d paused tasks, the state topic %d", sum.TasksActive, sum.TasksPaused, len(state))
	}
	// What was done.
	want := map[string]func(taskView) bool{}
	for i := range ticks {
		want[fmt.Sprintf("%s/t%02d", hostTick, i)] = func(v taskView) bool { return !v.paused }
	}
	for i := range *tortureBulk {
		want[hostBulk+"/"+bulkName(i)] = func(v taskView) bool { return tt.bulkCut || v.paused == tt.bulkPaused }
	}
	last := strconv.Itoa(tt.files - 1)
	for i, live := range tt.big {
		if live && tt.files > 0 {
			want[hostBig+"/"+bigName(i)] = func(v taskView) bool { return !v.paused && v.data == last }
		}
	}
	keys := map[string]bool{}
	for k := range state {
		keys[k] = true
	}
	for k := range console {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	for k := range keys {
		s, inState := state[k]
		c, inConsole := console[k]
		w, wanted := want[k]
		host, _, _ := strings.Cut(k, "/")
		switch {
		case !inState && !inConsole:
			add(k, "lost: in neither the state topic nor the console")
		case !inState:
			add(k, "on the console (%s), not in the state topic", c)
		case !inConsole:
			add(k, "in the state topic (%s), not on the console", s)
		case s.paused != c.paused || s.data != c.data || host != hostTick && s.nextFire != c.nextFire:
			add(k, "state topic %s, console %s", s, c)
		case wanted && !w(s):
			what := "active"
			switch host {
			case hostBulk:
				what = fmt.Sprintf("paused=%t, as the last bulk action left it", tt.bulkPaused)
			case hostBig:
				what = fmt.Sprintf("active with the data of the last file, v=%q", last)
			}
			add(k, "state topic and console %s, want %s", s, what)
		case !wanted && host != hostOnce:
			add(k, "a task no one created or one deleted: %s", s)
		}
	}
	tt.checked += len(keys)
	return diffs, bad
}

// engineTasks is how many tasks the engine says it holds.
func (tt *tortured) engineTasks() (int, bool) {
	resp, err := http.Get(tt.console + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false
	}
	m := activeTasksLine.FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(m[1]), 64)
	return int(f), err == nil
}

// bigName and bulkName name task i of hostBig and hostBulk.
func bigName(i int) string  { return fmt.Sprintf("b%06d", i) }
func bulkName(i int) string { return fmt.Sprintf("u%06d", i) }

// nextLink is the URL of a Link header's rel="next".
var nextLink = regexp.MustCompile(`<([^>]+)>; rel="next"`)

// consoleTasks lists the console's live tasks (active or paused), a
// thousand a page, following each page's link to the next.
func (tt *tortured) consoleTasks() (map[string]taskView, error) {
	out := map[string]taskView{}
	total := -1
	first := url.Values{"status": {storetype.TaskLive}, "sort": {storetype.TaskSortKey}, "limit": {"1000"}}
	for page := "/api/tasks?" + first.Encode(); page != ""; {
		resp, err := http.Get(tt.console + page)
		if err != nil {
			return nil, err
		}
		var tasks []storetype.Task
		err = json.NewDecoder(resp.Body).Decode(&tasks)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			return nil, fmt.Errorf("GET %s: %s %v", page, resp.Status, err)
		}
		if n, err := strconv.Atoi(resp.Header.Get("X-Total-Count")); err == nil && total < 0 {
			total = n
		}
		for _, t := range tasks {
			v := taskView{paused: t.Paused}
			if t.NextFire != nil {
				v.nextFire = t.NextFire.UnixMilli()
			}
			var d struct {
				Data map[string]string `json:"data"`
			}
			if t.Definition != "" && json.Unmarshal([]byte(t.Definition), &d) == nil {
				v.data = d.Data["v"]
			}
			out[t.Key] = v
		}
		page = ""
		if m := nextLink.FindStringSubmatch(resp.Header.Get("Link")); m != nil {
			page = m[1]
		}
	}
	if total != len(out) {
		return nil, fmt.Errorf("/api/tasks: X-Total-Count %d, %d tasks listed page by page", total, len(out))
	}
	return out, nil
}

// wholeTopicAgrees reads the state topic again from its start and checks
// it holds what the reader following it holds: the brokers lost or
// changed nothing committed, across the kills and the restarts.
func (tt *tortured) wholeTopicAgrees() {
	tt.t.Helper()
	follow := tt.view.catchUp()
	fresh := newStateView(tt.t, tt.brokers).catchUp()
	bad := 0
	for k, v := range follow {
		if w, ok := fresh[k]; !ok || w != v {
			bad++
			if bad <= 10 {
				tt.t.Errorf("%s: followed %s; read again from the start: %s (present %t)", k, v, w, ok)
			}
		}
	}
	for k, w := range fresh {
		if _, ok := follow[k]; !ok {
			bad++
			if bad <= 10 {
				tt.t.Errorf("%s: read again from the start %s, not in what was followed", k, w)
			}
		}
	}
	if bad > 0 {
		tt.t.Fatalf("the state topic read from its start differs from what a reader following it saw, for %d tasks", bad)
	}
}

// occurrences reads the target topics, read_committed, once every
// occurrence due by now should have fired: each exactly once.
func (tt *tortured) occurrences() (lost, dups, due int) {
	tt.t.Helper()
	end := time.Now().Add(-time.Second)
	perTick := int(end.Sub(tt.tickStart)/time.Second) + 1
	count := func() bool {
		fired := map[string]int{}
		at := map[string]bool{}
		for _, topic := range []string{"torture-ticks", "torture-once"} {
			kafkatest.EachCommitted(tt.t, tt.brokers, topic, func(r *kgo.Record) {
				var f record.Fired
				if err := json.Unmarshal(r.Value, &f); err != nil {
					tt.t.Errorf("%s: %v", kafkatest.Describe(r), err)
					return
				}
				fired[f.FireID]++
				at[f.Host+"/"+f.Name+"@"+strconv.FormatInt(f.ScheduledAt, 10)] = true
			})
		}
		lost, dups, due = 0, 0, 0
		for i := range ticks {
			for k := range perTick {
				due++
				if !at[fmt.Sprintf("%s/t%02d@%d", hostTick, i, tt.tickStart.Add(time.Duration(k)*time.Second).UnixMilli())] {
					lost++
				}
			}
		}
		for key, ms := range tt.once {
			if ms <= end.UnixMilli() {
				due++
				if !at[key+"@"+strconv.FormatInt(ms, 10)] {
					lost++
				}
			}
		}
		for _, n := range fired {
			dups += n - 1
		}
		return lost == 0
	}
	var last int
	defer func() {
		if tt.t.Failed() {
			tt.t.Logf("%d occurrences not fired", last)
		}
	}()
	kafkatest.Eventually(tt.t, 2*time.Minute, "every occurrence due to have fired", func() bool {
		ok := count()
		last = lost
		return ok
	})
	return lost, dups, due
}

// stateView follows the state topic as a read_committed reader does: the
// last value of every key, tombstones removing it.
type stateView struct {
	t       *testing.T
	brokers []string
	topic   string
	next    map[int32]int64
	live    map[string]taskView
}

func newStateView(t *testing.T, brokers []string) *stateView {
	return &stateView{t: t, brokers: brokers, topic: record.Topics{}.WithDefaults().State,
		next: map[int32]int64{}, live: map[string]taskView{}}
}

// catchUp reads every partition up to its last stable offset at the call
// and returns the tasks live then, keyed host/name; the map is the view's
// own, to read until the next call.
func (v *stateView) catchUp() map[string]taskView {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm := kadm.NewClient(kafkatest.Client(v.t, v.brokers))
	ends, err := adm.ListCommittedOffsets(ctx, v.topic)
	if err != nil {
		v.t.Fatalf("read %s: %v", v.topic, err)
	}
	pending := map[int32]int64{}
	from := map[string]map[int32]kgo.Offset{v.topic: {}}
	ends.Each(func(o kadm.ListedOffset) {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			return
		}
		if o.Err != nil {
			v.t.Fatalf("read %s/%d: %v", v.topic, o.Partition, o.Err)
		}
		if o.Offset > v.next[o.Partition] {
			pending[o.Partition] = o.Offset
			from[v.topic][o.Partition] = kgo.NewOffset().At(v.next[o.Partition])
		}
	})
	if len(pending) > 0 {
		// Transaction markers come through, so that a partition's
		// position reaches its last stable offset.
		cons := kafkatest.Client(v.t, v.brokers, kgo.ConsumePartitions(from), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		defer cons.Close()
		for len(pending) > 0 {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				v.t.Fatalf("read %s: partitions %v not read to their end", v.topic, pending)
			}
			fs.EachError(func(_ string, p int32, err error) { v.t.Fatalf("read %s/%d: %v", v.topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				end, ok := pending[r.Partition]
				if !ok || r.Offset >= end {
					return
				}
				v.next[r.Partition] = r.Offset + 1
				if r.Offset+1 >= end {
					delete(pending, r.Partition)
				}
				if r.Attrs.IsControl() || !strings.Contains(string(r.Key), "/") {
					return // a marker, or the engine's own records
				}
				if r.Value == nil {
					delete(v.live, string(r.Key))
					return
				}
				var st record.State
				if err := json.Unmarshal(r.Value, &st); err != nil {
					v.t.Errorf("%s: %v", kafkatest.Describe(r), err)
					return
				}
				v.live[string(r.Key)] = taskView{paused: st.Definition.Paused(), data: st.Definition.Data["v"], nextFire: st.NextFire}
			})
		}
	}
	return v.live
}
