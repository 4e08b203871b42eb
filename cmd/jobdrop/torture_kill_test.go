package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
)

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
