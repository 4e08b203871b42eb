package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// instance is jobdrop running in-process on temporary folders and free ports.
type instance struct {
	t       testing.TB
	cfg     Config
	inbox   string
	clock   *clockwork.FakeClock
	brokers []string
	console string
	// routes are the patterns the console serves.
	routes []string
	// messageAdmin is the base URL of kafka-message-scheduler's admin
	// REST, when configured, and messageRoutes the patterns it serves.
	messageAdmin  string
	messageRoutes []string
	stop          func()
	// logs holds the warnings and errors the run logged, as text.
	logs *logBuffer
}

// logBuffer is a log destination tests read while the run writes.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startInstance runs jobdrop on its embedded broker, or on brokers when
// given (so that they outlive the run).
func startInstance(t testing.TB, brokers ...string) *instance {
	t.Helper()
	return startInstanceEnv(t, nil, brokers...)
}

// startInstanceEnv is startInstance with more JOBDROP_ variables, which
// override the test's own (JOBDROP_WATCH_0_DIR to share a folder, say).
func startInstanceEnv(t testing.TB, env []string, brokers ...string) *instance {
	t.Helper()
	dir := t.TempDir()
	cfg, err := loadConfig("", append([]string{
		"JOBDROP_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"JOBDROP_DATA_DIR=" + filepath.Join(dir, "data"),
		"JOBDROP_NODE=test",
		"JOBDROP_KAFKA_EMBEDDED_LISTEN=127.0.0.1:0",
		"JOBDROP_CONSOLE_LISTEN=127.0.0.1:0",
		"JOBDROP_WATCH_0_DIR=" + filepath.Join(dir, "inbox"),
		"JOBDROP_WATCHER_STABLE_CHECKS=1",
		"JOBDROP_WATCHER_CHECK_INTERVAL=20ms",
	}, env...))
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{t: t, cfg: cfg, inbox: cfg.Watch[0].Dir, clock: clockwork.NewFakeClockAt(time.Now().Truncate(time.Minute)),
		logs: &logBuffer{}}
	up := make(chan started, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out io.Writer = in.logs
	if testing.Verbose() {
		out = io.MultiWriter(in.logs, os.Stderr)
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	go func() { done <- run(ctx, cfg, log, hooks{clock: in.clock, started: func(s started) { up <- s }}) }()
	select {
	case s := <-up:
		in.brokers, in.console, in.routes = s.brokers, s.console, s.routes
		in.messageAdmin, in.messageRoutes = s.messageAdmin, s.messageRoutes
	case err := <-done:
		t.Fatalf("run ended before listening: %v", err)
	}
	var once sync.Once
	in.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	t.Cleanup(in.stop)
	return in
}

// drop writes a file into the inbox the way a careful sender does: under a
// temporary name, renamed into place.
func (in *instance) drop(name, content string) {
	in.t.Helper()
	tmp := filepath.Join(in.inbox, "."+name+".part")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		in.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(in.inbox, name)); err != nil {
		in.t.Fatal(err)
	}
}

func (in *instance) waitFile(sub, name string) {
	in.t.Helper()
	kafkatest.Eventually(in.t, 60*time.Second, name+" in "+sub+"/", func() bool {
		_, err := os.Stat(filepath.Join(in.inbox, sub, name))
		return err == nil
	})
}

// advanceTo moves the fake clock once every scheduler runner waits on it.
func (in *instance) advanceTo(at time.Time) {
	in.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := in.clock.BlockUntilContext(ctx, int(in.cfg.Kafka.Partitions)); err != nil {
		in.t.Fatalf("scheduler runners never all waited on the clock: %v", err)
	}
	in.clock.Advance(at.Sub(in.clock.Now()))
}

func (in *instance) getJSON(path string, v any) error { return getJSON(in.console+path, v) }

func (in *instance) page(path string) string {
	in.t.Helper()
	resp, err := http.Get(in.console + path)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		in.t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
	}
	return string(b)
}

func TestDroppedCSVFiresOnTime(t *testing.T) {
	in := startInstance(t, kafkatest.Cluster(t)...)
	t0 := in.clock.Now()
	at := func(d time.Duration) string { return t0.Add(d).UTC().Format(time.RFC3339) }
	jobs := kafkatest.Collect(t, in.brokers, "batch-jobs")

	in.drop("jobs.csv", "\uFEFFHost, Name ,action,topic,start,timeUnit,time,data.command\r\n"+
		"acme,once,INSERT,batch-jobs,"+at(time.Second)+",,,/opt/once.sh\r\n"+
		"acme,every-10s,INSERT,batch-jobs,"+at(time.Second)+",SECONDS,10,/opt/every.sh\r\n")
	in.waitFile("archive", "jobs.csv")

	var tasks []struct {
		Name     string `json:"name"`
		NextFire *time.Time
	}
	kafkatest.Eventually(t, 60*time.Second, "the console to list 2 tasks", func() bool {
		return in.getJSON("/api/tasks", &tasks) == nil && len(tasks) == 2
	})

	in.advanceTo(t0.Add(time.Second))
	kafkatest.Eventually(t, 60*time.Second, "2 fires at t0+1s", func() bool { return jobs.Count() >= 2 })
	in.advanceTo(t0.Add(11 * time.Second))
	kafkatest.Eventually(t, 60*time.Second, "the 2nd fire of every-10s", func() bool { return jobs.Count() >= 3 })
	in.advanceTo(t0.Add(21 * time.Second))
	kafkatest.Eventually(t, 60*time.Second, "the 3rd fire of every-10s", func() bool { return jobs.Count() >= 4 })

	// The console traces the file to its tasks and their executions.
	kafkatest.Eventually(t, 60*time.Second, "4 executions in the console", func() bool {
		var execs []json.RawMessage
		return in.getJSON("/api/executions", &execs) == nil && len(execs) == 4
	})
	home := in.page("/")
	for _, want := range []string{"jobs.csv", "once", "every-10s"} {
		if !strings.Contains(home, want) {
			t.Errorf("dashboard does not show %q", want)
		}
	}

	brokers := in.brokers
	in.stop()
	fired := kafkatest.Decode[record.Fired](t, kafkatest.Drain(t, brokers, "batch-jobs"))
	got := map[string][]string{}
	for _, f := range fired {
		got[f.Name] = append(got[f.Name], time.UnixMilli(f.ScheduledAt).UTC().Format(time.RFC3339))
		if f.Data["command"] == "" {
			t.Errorf("fired event of %s lacks its data: %+v", f.Name, f)
		}
	}
	want := map[string][]string{
		"once":      {at(time.Second)},
		"every-10s": {at(time.Second), at(11 * time.Second), at(21 * time.Second)},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fired %v\nwant  %v", got, want)
	}
}

func TestBadRowsRejectFileWholeAndNextFileGoesOn(t *testing.T) {
	in := startInstance(t, kafkatest.Cluster(t)...)
	in.drop("bad.csv", "host,name,topic,start,timeUnit,time\n"+
		"acme,good-row,batch-jobs,,MINUTES,5\n"+
		"acme,bad-unit,batch-jobs,,FORTNIGHTS,1\n"+
		"acme,bad-start,batch-jobs,next tuesday,,\n")
	in.waitFile("failed", "bad.csv")
	in.drop("good.csv", "host,name,topic,timeUnit,time\nacme,fine,batch-jobs,MINUTES,5\n")
	in.waitFile("archive", "good.csv")

	report, err := os.ReadFile(filepath.Join(in.inbox, "failed", "bad.csv.errors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"row 3", "timeUnit", `"FORTNIGHTS"`, "row 4", "start", `"next tuesday"`} {
		if !strings.Contains(string(report), want) {
			t.Errorf("error report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(string(report), "good-row") {
		t.Errorf("error report blames a good row:\n%s", report)
	}

	brokers := in.brokers
	in.stop()
	var names []string
	for _, r := range kafkatest.Drain(t, brokers, in.cfg.Topics.Input) {
		for _, h := range r.Headers {
			if h.Key == record.HeaderFile && string(h.Value) != "good.csv" {
				t.Errorf("command %s from %s reached the input topic", r.Key, h.Value)
			}
		}
		names = append(names, string(r.Key))
	}
	if !slices.Equal(names, []string{"acme/fine"}) {
		t.Errorf("input topic holds %v, want only acme/fine", names)
	}
}

// TestKcatSeesRealKafka uses kcat, a librdkafka client, as an outside
// witness: it lists jobdrop's topics and reads fired events read_committed.
func TestKcatSeesRealKafka(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed; .ci/run installs it")
		}
		t.Skip("kcat is not installed")
	}
	in := startInstance(t)
	in.drop("now.csv", "host,name,topic,start\nacme,right-away,batch-jobs,"+in.clock.Now().UTC().Format(time.RFC3339)+"\n")
	in.waitFile("archive", "now.csv")
	jobs := kafkatest.Collect(t, in.brokers, "batch-jobs")
	kafkatest.Eventually(t, 60*time.Second, "the one-shot to fire", func() bool { return jobs.Count() == 1 })

	meta, err := exec.Command(kcat, "-b", in.brokers[0], "-L").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -L: %v\n%s", err, meta)
	}
	for _, topic := range append(in.cfg.Topics.All(), "batch-jobs") {
		if !strings.Contains(string(meta), `topic "`+topic+`"`) {
			t.Errorf("kcat -L does not list %s:\n%s", topic, meta)
		}
	}
	out, err := exec.Command(kcat, "-b", in.brokers[0], "-C", "-t", "batch-jobs", "-o", "beginning", "-e", "-q",
		"-X", "isolation.level=read_committed", "-f", "%k %h\n").CombinedOutput()
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("kcat -C: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "acme/right-away ") || !strings.Contains(lines[0], record.HeaderFireID+"=") {
		t.Errorf("kcat read %q, want one event of acme/right-away with a fire id header", out)
	}
}
