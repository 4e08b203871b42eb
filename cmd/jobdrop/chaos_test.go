package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// The short chaos run is part of `make test`; `make chaos` runs it longer
// and bigger.
var (
	chaosDuration = flag.Duration("chaos-duration", 20*time.Second, "how long instances are killed and frozen")
	chaosTasks    = flag.Int("chaos-tasks", 200, "tasks firing every second")
	chaosKill     = flag.Duration("chaos-kill-every", 4*time.Second, "how often an instance is killed")
	chaosLogs     = flag.String("chaos-logs", "", "keep the instances' logs in this folder")
)

// childEnv marks a process started by a test as a jobdrop instance.
const childEnv = "JOBDROP_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "run" {
		// This process is one instance of a multi-process test: the
		// configuration comes from JOBDROP_ variables.
		os.Unsetenv(childEnv)
		ctx, stop := signalContext()
		err := mainErr(ctx, []string{"run"}, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "jobdrop:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is one jobdrop process.
type child struct {
	t     *testing.T
	name  string
	env   []string
	log   string
	inbox string
	cmd   *exec.Cmd
	done  chan struct{} // closed when the process has been reaped
}

// startChild starts a jobdrop process on brokers.
func startChild(t *testing.T, name string, brokers []string) *child {
	return startChildEnv(t, name, "JOBDROP_KAFKA_BROKERS="+strings.Join(brokers, ","))
}

// startChildEnv starts a jobdrop process on its own data dir and inbox,
// which it keeps across kills; env adds to and overrides its JOBDROP_
// variables. With no JOBDROP_KAFKA_BROKERS it runs the embedded broker.
func startChildEnv(t *testing.T, name string, env ...string) *child {
	dir := t.TempDir()
	logDir := dir
	if *chaosLogs != "" {
		logDir = *chaosLogs
	}
	c := &child{t: t, name: name, log: filepath.Join(logDir, name+".log"), inbox: filepath.Join(dir, "inbox"),
		env: append(append(os.Environ(),
			childEnv+"=run",
			"JOBDROP_NODE="+name,
			"JOBDROP_DATA_DIR="+filepath.Join(dir, "data"),
			"JOBDROP_CONSOLE_LISTEN=127.0.0.1:0",
			"JOBDROP_KAFKA_EMBEDDED_LISTEN=127.0.0.1:0",
			"JOBDROP_WATCH_0_DIR="+filepath.Join(dir, "inbox"),
			"JOBDROP_SCHEDULER_SESSION_TIMEOUT=3s",
			"JOBDROP_LOG_LEVEL=info",
			"JOBDROP_LOG_FORMAT=text",
		), env...)}
	if err := os.MkdirAll(c.inbox, 0o755); err != nil {
		t.Fatal(err)
	}
	c.start()
	t.Cleanup(func() {
		c.signal(syscall.SIGCONT)
		c.signal(syscall.SIGKILL)
		<-c.done
		if t.Failed() {
			b, _ := os.ReadFile(c.log)
			t.Logf("log of %s (last 3 KiB):\n%s", c.name, b[max(0, len(b)-3072):])
		}
	})
	return c
}

func (c *child) start() {
	out, err := os.OpenFile(c.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env, c.cmd.Stdout, c.cmd.Stderr = c.env, out, out
	if err := c.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	done := make(chan struct{})
	c.done = done
	go func() { _ = c.cmd.Wait(); out.Close(); close(done) }()
}

func (c *child) signal(s syscall.Signal) { _ = c.cmd.Process.Signal(s) }

// kill ends the process without warning and starts it again.
func (c *child) kill() {
	c.signal(syscall.SIGKILL)
	<-c.done
	c.start()
}

// TestChaosEveryOccurrenceFiresOnceAcrossKillsAndAZombie runs three
// instances on one broker while killing one without warning every few
// seconds, and freezes one past its session timeout so that it wakes as a
// zombie holding partitions the others have taken over. Every occurrence
// due in that time must reach the target topic exactly once.
func TestChaosEveryOccurrenceFiresOnceAcrossKillsAndAZombie(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos is not short")
	}
	brokers := kafkatest.Cluster(t)
	topics := record.Topics{}.WithDefaults()
	admin := kafkatest.Client(t, brokers)
	ctx := context.Background()
	if err := kafka.EnsureTopics(ctx, admin, topics, 8, -1); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"chaos", chainTopic} {
		if err := kafka.NewTargetTopics(admin, 8, -1, true).Ensure(ctx, topic); err != nil {
			t.Fatal(err)
		}
	}
	nodes := []*child{startChild(t, "n1", brokers), startChild(t, "n2", brokers), startChild(t, "n3", brokers)}

	start := time.Now().Add(3 * time.Second).Truncate(time.Second)
	prod := kafkatest.Client(t, brokers)
	for i := range *chaosTasks {
		d := task.Definition{Host: "chaos", Name: fmt.Sprintf("t%04d", i), Action: task.Insert, Topic: "chaos",
			Start: task.Ptr(start.UnixMilli()), Frequency: &task.Frequency{TimeUnit: task.Seconds, Time: 1},
			Misfire: task.FireAll, Data: map[string]string{"i": fmt.Sprint(i)}}
		v, _ := json.Marshal(d)
		prod.Produce(ctx, &kgo.Record{Topic: topics.Input, Key: []byte(d.Key()), Value: v}, nil)
	}
	for _, r := range chainCommands(topics, start) {
		prod.Produce(ctx, r, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fired := kafkatest.Collect(t, brokers, "chaos")
	chains := kafkatest.Collect(t, brokers, chainTopic)
	worker := startChaosWorker(t, brokers, topics)

	// Chaos: a kill every few seconds, round robin; one freeze in the middle.
	end := start.Add(*chaosDuration)
	freezeAt := start.Add(*chaosDuration / 2)
	frozen := false
	kills := 0
	for next := start.Add(*chaosKill); time.Now().Before(end); {
		now := time.Now()
		switch {
		case !frozen && now.After(freezeAt):
			z := nodes[1]
			t.Logf("%s: SIGSTOP %s for 6s (session timeout 3s)", now.Format("15:04:05.000"), z.name)
			z.signal(syscall.SIGSTOP)
			time.Sleep(6 * time.Second) // the freeze itself is what is tested
			z.signal(syscall.SIGCONT)
			frozen = true
			next = time.Now().Add(*chaosKill)
		case now.After(next):
			v := nodes[kills%3]
			if v == nodes[1] {
				v = nodes[(kills+1)%3]
			}
			t.Logf("%s: kill -9 %s and restart it", now.Format("15:04:05.000"), v.name)
			v.kill()
			kills++
			next = next.Add(*chaosKill)
		default:
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Every occurrence up to end, of every task, exactly once.
	perTask := int(end.Sub(start)/time.Second) + 1
	want := *chaosTasks * perTask
	due := func() int { // distinct occurrences scheduled by the end, seen so far
		ids := map[string]bool{}
		for _, f := range kafkatest.Decode[record.Fired](t, fired.Records()) {
			if f.ScheduledAt <= end.UnixMilli() {
				ids[f.FireID] = true
			}
		}
		return len(ids)
	}
	kafkatest.Eventually(t, 2*time.Minute, fmt.Sprintf("%d fires due by the end", want), func() bool {
		return due() >= want
	})
	// The second steps: waited for at most two minutes, then counted
	// (lost, duplicated) below. Each look decodes every chain event, so
	// it looks once a second rather than taking a core from the instances.
	wantChains := *chaosChains * perTask
	for by := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		done := chainsDone(t, chains, end)
		if done >= wantChains || time.Now().After(by) {
			t.Logf("%d of %d chains ran to their second step", done, wantChains)
			break
		}
	}
	worker.stop()
	worker.mu.Lock()
	t.Logf("the worker read %d first steps' events and reported each; %d reports refused", len(worker.seen), len(worker.failed))
	for id, err := range worker.failed {
		t.Logf("report on %s refused: %v", id, err)
		break
	}
	worker.mu.Unlock()
	for _, n := range nodes {
		n.signal(syscall.SIGTERM)
		<-n.done
	}
	// What the instances went through, from their logs.
	for _, n := range nodes {
		b, _ := os.ReadFile(n.log)
		t.Logf("%s: %d partition restores, %d times fenced by a new owner, %d revokes or losses", n.name,
			strings.Count(string(b), "partition restored"), strings.Count(string(b), "taken over by another instance"),
			strings.Count(string(b), "partitions revoked"))
	}
	events := kafkatest.Decode[record.Fired](t, kafkatest.Drain(t, brokers, "chaos"))
	seen := map[string]int{}
	got := map[string][]int64{}
	var lateness []time.Duration
	for _, f := range events {
		seen[f.FireID]++
		got[f.Name] = append(got[f.Name], f.ScheduledAt)
		if f.ScheduledAt <= end.UnixMilli() {
			lateness = append(lateness, time.Duration(f.FiredAt-f.ScheduledAt)*time.Millisecond)
		}
	}
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	lost := 0
	for i := range *chaosTasks {
		name := fmt.Sprintf("t%04d", i)
		at := got[name]
		slices.Sort(at)
		for k := range perTask {
			if _, ok := slices.BinarySearch(at, start.Add(time.Duration(k)*time.Second).UnixMilli()); !ok {
				lost++
			}
		}
	}
	sort.Slice(lateness, func(i, j int) bool { return lateness[i] < lateness[j] })
	p := func(q float64) time.Duration { return lateness[int(q*float64(len(lateness)-1))] }
	t.Logf("%d tasks × %d s, %d kills, 1 zombie: %d fires due, %d events, lost %d, duplicated %d; lateness p50 %s p99 %s max %s",
		*chaosTasks, perTask, kills, want, len(events), lost, dups, p(0.5), p(0.99), p(1))
	runs, chainsLost, chainsDup := checkChains(t, brokers, start, end, worker)
	t.Logf("%d two-step chains × %d s: %d runs of the first step, second steps lost %d, duplicated %d",
		*chaosChains, perTask, runs, chainsLost, chainsDup)
	if lost != 0 || dups != 0 || chainsLost != 0 || chainsDup != 0 {
		t.Fatalf("lost %d, duplicated %d occurrences; lost %d, duplicated %d second steps of chains", lost, dups, chainsLost, chainsDup)
	}
}
