package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

// The short run is part of `make test`; `make chaos` kills 20 times
// during files of 100,000 rows.
var (
	killPoints = flag.Int("kill-points", 3, "kill -9 points per broker kind in TestKillNineMidInjectionLosesNothing")
	killRows   = flag.Int("kill-rows", 10_000, "rows of each file injected while jobdrop is killed")
	killSeed   = flag.Uint64("kill-seed", 0, "seed of the kill points (0: from the clock; the test logs it)")
)

// TestKillNineMidInjectionLosesNothing kills jobdrop without warning at
// random points while it injects a large file, restarts it, and proves
// from the input topic, read_committed, that every file went in whole and
// once: no task lost, none duplicated, no file injected in part. It does
// so on a broker that outlives jobdrop (a cluster) and on the embedded
// broker, which dies with jobdrop each time and must keep everything
// committed across the kills.
func TestKillNineMidInjectionLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("kills are not short")
	}
	seed := *killSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("kill points from -kill-seed=%d", seed)
	t.Run("cluster", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(t.TempDir()), kfake.GroupMinSessionTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		brokers := c.ListenAddrs()
		killMidInjection(t, seed, brokers, "JOBDROP_KAFKA_BROKERS="+strings.Join(brokers, ","))
	})
	t.Run("embedded", func(t *testing.T) {
		listen := kafkatest.ClosedAddr(t)
		killMidInjection(t, seed+1, []string{listen}, "JOBDROP_KAFKA_EMBEDDED_LISTEN="+listen)
	})
}

// killMidInjection runs the kills against one jobdrop process whose
// brokers are brokers; env says which.
func killMidInjection(t *testing.T, seed uint64, brokers []string, env ...string) {
	rng := rand.New(rand.NewPCG(seed, seed))
	console := kafkatest.ClosedAddr(t)
	c := startChildEnv(t, "k1", append(env, "JOBDROP_CONSOLE_LISTEN="+console,
		"JOBDROP_WATCHER_STABLE_CHECKS=1", "JOBDROP_WATCHER_CHECK_INTERVAL=100ms")...)
	// up returns once jobdrop, started or restarted, is ready.
	up := func() {
		t.Helper()
		var last string
		defer func() {
			if t.Failed() {
				t.Logf("/readyz answered last: %s", last)
			}
		}()
		kafkatest.Eventually(t, 3*time.Minute, "/readyz 200", func() bool {
			resp, err := http.Get("http://" + console + "/readyz")
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
	up()
	rows := *killRows
	far := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	var names, batches []string
	// drop writes file i into the inbox whole (renamed into place) and
	// returns when it appears there.
	drop := func(i int) string {
		var b strings.Builder
		b.WriteString("host,name,topic,start,data.file\n")
		for r := range rows {
			fmt.Fprintf(&b, "kill,job-%06d,kill-target,%s,%d\n", r, far, i)
		}
		name := fmt.Sprintf("jobs-%02d.csv", i)
		tmp := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(b.String()))
		names, batches = append(names, name), append(batches, hex.EncodeToString(sum[:]))
		if err := os.Rename(tmp, filepath.Join(c.inbox, name)); err != nil {
			t.Fatal(err)
		}
		return name
	}
	archived := func(name string) {
		t.Helper()
		kafkatest.Eventually(t, 3*time.Minute, name+" in archive/", func() bool {
			_, err := os.Stat(filepath.Join(c.inbox, "archive", name))
			return err == nil
		})
	}
	// where says where a file is: still in the inbox, being handled, or
	// done.
	where := func(name string) string {
		for _, sub := range []string{"", ".processing", "archive", "failed"} {
			if _, err := os.Stat(filepath.Join(c.inbox, sub, name)); err == nil {
				return cmp.Or(sub, "inbox")
			}
		}
		return "nowhere"
	}

	// claimed returns once the watcher has claimed the file, moving it
	// into .processing/ to inject it.
	claimed := func(name string) {
		t.Helper()
		path := filepath.Join(c.inbox, ".processing", name)
		kafkatest.Eventually(t, 3*time.Minute, name+" in .processing/", func() bool {
			_, err := os.Stat(path)
			return err == nil
		})
	}

	// Tasks firing every second all along: each occurrence must reach
	// their topic exactly once across the kills, whatever was due while
	// jobdrop was down (FIRE_ALL fires it on restart).
	const ticks = 50
	tickStart := time.Now().Add(2 * time.Second).Truncate(time.Second)
	var jl strings.Builder
	for i := range ticks {
		fmt.Fprintf(&jl, `{"host":"tick","name":"t%02d","topic":"kill-ticks","start":%d,"frequency":{"timeUnit":"SECONDS","time":1},"misfire":"FIRE_ALL"}`+"\n",
			i, tickStart.UnixMilli())
	}
	tmp := filepath.Join(t.TempDir(), "ticks.jsonl")
	if err := os.WriteFile(tmp, []byte(jl.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(c.inbox, "ticks.jsonl")); err != nil {
		t.Fatal(err)
	}
	archived("ticks.jsonl")
	kafkatest.Eventually(t, time.Minute, "the ticking tasks' first fires", func() bool {
		n := 0
		kafkatest.EachCommitted(t, brokers, "kill-ticks", func(*kgo.Record) { n++ })
		return n >= ticks
	})

	// engineHolds returns once the engine holds n tasks.
	scrape := (&instance{t: t, console: "http://" + console}).scrape
	engineHolds := func(n int) {
		t.Helper()
		kafkatest.Eventually(t, 3*time.Minute, fmt.Sprintf("the engine to hold %d tasks", n), func() bool {
			return int(scrape().value("jobdrop_active_tasks")) >= n
		})
	}

	// An undisturbed file first: how long a file takes from its claim to
	// its archiving, and from then to the engine holding its tasks (it
	// commits their state in transactions of its own, after the file's),
	// bound the kill points.
	name := drop(0)
	claimed(name)
	start := time.Now()
	archived(name)
	injecting := time.Since(start)
	engineHolds(ticks + rows)
	applying := time.Since(start) - injecting
	t.Logf("a %d-row file is archived %s after its claim, and its tasks are all in the engine's state %s later; kill points are drawn in those spans",
		rows, injecting.Round(time.Millisecond), applying.Round(time.Millisecond))

	// Every file upserts the same tasks with its own data: the engine
	// applies and commits each file's commands anew.
	at := map[string]int{}
	for i := 1; i <= *killPoints; i++ {
		name := drop(i)
		claimed(name)
		// Half the kills cut the injection, half the engine's commits of
		// the tasks once the file is archived.
		from, span := "claim", injecting
		if i%2 == 0 {
			archived(name)
			from, span = "archiving", max(applying, time.Millisecond)
		}
		delay := time.Duration(rng.Int64N(int64(span)))
		time.Sleep(delay) // the kill point itself is what is tested
		c.kill()
		w := where(name)
		at[w]++
		up()
		t.Logf("kill -9 %s after the %s of %s: the file was in %s", delay.Round(time.Millisecond), from, name, w)
		archived(name)
	}
	if failed, _ := os.ReadDir(filepath.Join(c.inbox, "failed")); len(failed) > 0 {
		t.Errorf("files in failed/: %v", failed)
	}

	// The input topic, as a downstream consumer reads it: each file's rows,
	// each exactly once.
	type seen struct{ rows, records int }
	per := map[string]*seen{}
	for _, b := range batches {
		per[b] = &seen{}
	}
	got := map[string][]bool{}
	kafkatest.EachCommitted(t, brokers, record.Topics{}.WithDefaults().Input, func(r *kgo.Record) {
		var batch string
		row := -1
		for _, h := range r.Headers {
			switch h.Key {
			case record.HeaderBatch:
				batch = string(h.Value)
			case record.HeaderRow:
				row, _ = strconv.Atoi(string(h.Value))
			}
		}
		if strings.HasPrefix(string(r.Key), "tick/") {
			return // the ticking tasks' file
		}
		s, ok := per[batch]
		if !ok {
			t.Errorf("a command of no file dropped: %s", kafkatest.Describe(r))
			return
		}
		s.records++
		if got[batch] == nil {
			got[batch] = make([]bool, rows+2) // rows are numbered from 2, after the header
		}
		if row < 2 || row >= len(got[batch]) {
			t.Errorf("a command of %s names row %d", batch, row)
			return
		}
		if !got[batch][row] {
			got[batch][row] = true
			s.rows++
		}
	})
	lost, dups, partial := 0, 0, 0
	for i, b := range batches {
		s := per[b]
		lost += rows - s.rows
		dups += s.records - s.rows
		if s.rows > 0 && s.rows < rows {
			partial++
		}
		// The console says the same.
		var f struct {
			Status   string `json:"status"`
			Accepted int    `json:"accepted"`
		}
		kafkatest.Eventually(t, time.Minute, names[i]+" injected on the console", func() bool {
			return getJSON("http://"+console+"/api/files/"+b, &f) == nil && f.Status == "injected" && f.Accepted == rows
		})
	}
	t.Logf("%d kills during %d-row files (file still in .processing %d, archived %d): %d files, tasks lost %d, duplicated %d, files injected in part %d",
		*killPoints, rows, at[".processing"], at["archive"], len(batches), lost, dups, partial)
	if lost != 0 || dups != 0 || partial != 0 {
		t.Errorf("tasks lost %d, duplicated %d, files injected in part %d", lost, dups, partial)
	}

	// Every task holds the last file's data in the engine's state topic,
	// as a restore or a downstream reader sees it (read_committed), and
	// the engine and the console count each task once: a kill while the
	// engine committed the tasks lost none of their commits.
	last := strconv.Itoa(len(batches) - 1)
	want := ticks + rows
	kafkatest.Eventually(t, 3*time.Minute, "every task to hold the last file's data in the state topic", func() bool {
		data := map[string]string{}
		kafkatest.EachCommitted(t, brokers, record.Topics{}.WithDefaults().State, func(r *kgo.Record) {
			k := string(r.Key)
			if !strings.HasPrefix(k, "kill/") {
				return
			}
			var st record.State
			if r.Value == nil || json.Unmarshal(r.Value, &st) != nil {
				data[k] = "none"
				return
			}
			data[k] = st.Definition.Data["file"]
		})
		stale := 0
		for _, f := range data {
			if f != last {
				stale++
			}
		}
		t.Logf("state topic: %d tasks of the files, %d of them without the last file's data", len(data), stale)
		return len(data) == rows && stale == 0
	})
	var sum struct {
		TasksActive int `json:"tasksActive"`
	}
	kafkatest.Eventually(t, time.Minute, fmt.Sprintf("the console to list %d active tasks", want), func() bool {
		return getJSON("http://"+console+"/api/summary", &sum) == nil && sum.TasksActive == want
	})
	if engine := int(scrape().value("jobdrop_active_tasks")); engine != want {
		t.Errorf("the engine holds %d tasks, want %d", engine, want)
	}

	// Every occurrence of the ticking tasks due by now, exactly once.
	tickEnd := time.Now()
	perTask := int(tickEnd.Sub(tickStart)/time.Second) + 1
	var fired map[string]int // fire id → events
	var firedLost int
	count := func() bool {
		fired = map[string]int{}
		at := map[string]bool{}
		kafkatest.EachCommitted(t, brokers, "kill-ticks", func(r *kgo.Record) {
			var f record.Fired
			if err := json.Unmarshal(r.Value, &f); err != nil {
				t.Errorf("%s: %v", kafkatest.Describe(r), err)
				return
			}
			fired[f.FireID]++
			at[f.Name+"@"+strconv.FormatInt(f.ScheduledAt, 10)] = true
		})
		firedLost = 0
		for i := range ticks {
			for k := range perTask {
				if !at[fmt.Sprintf("t%02d@%d", i, tickStart.Add(time.Duration(k)*time.Second).UnixMilli())] {
					firedLost++
				}
			}
		}
		return firedLost == 0
	}
	kafkatest.Eventually(t, 2*time.Minute, "every occurrence due to have fired", count)
	firedDups := 0
	for _, n := range fired {
		firedDups += n - 1
	}
	t.Logf("%d tasks firing every second for %d s across the kills: %d occurrences due, lost %d, duplicated %d",
		ticks, perTask, ticks*perTask, firedLost, firedDups)
	if firedDups != 0 {
		t.Errorf("%d occurrences fired more than once", firedDups)
	}
}

// getJSON decodes the JSON answer of a GET of url.
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
