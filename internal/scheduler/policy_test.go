package scheduler

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

func TestRestartAfter30sDownAppliesEachMisfirePolicy(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	a := h.start()
	var defs []task.Definition
	for _, p := range []task.Misfire{task.FireOnce, task.FireAll, task.Skip} {
		d := every(string(p), t0.Add(time.Second), task.Seconds, 1)
		d.Misfire = p
		defs = append(defs, d)
	}
	h.send(defs...)
	kafkatest.Eventually(t, 30*time.Second, "3 tasks active", func() bool { return a.ActiveTasks() == 3 })
	h.advanceTo(t0.Add(time.Second))
	h.waitFired(jobs, 3)
	a.stop()

	// 30 s without any engine, then a fresh one.
	h.clock.Advance(30 * time.Second)
	b := h.start()
	// FIRE_ALL replays t0+2s … t0+31s (30), FIRE_ONCE fires t0+31s, SKIP nothing.
	h.waitFired(jobs, 3+30+1)
	h.advanceTo(t0.Add(32 * time.Second))
	h.waitFired(jobs, 3+30+1+3)
	b.stop()

	fired := kafkatest.Drain(t, h.brokers, "jobs")
	got := occurrences(t, fired)
	sec := func(s ...int) []int64 {
		var out []int64
		for _, n := range s {
			out = append(out, t0.Add(time.Duration(n)*time.Second).UnixMilli())
		}
		return out
	}
	var all []int
	for n := 1; n <= 32; n++ {
		all = append(all, n)
	}
	want := map[string][]int64{
		"FIRE_ONCE": sec(1, 31, 32),
		"FIRE_ALL":  sec(all...),
		"SKIP":      sec(1, 32),
	}
	for name, w := range want {
		if fmt.Sprint(got[name]) != fmt.Sprint(w) {
			t.Errorf("%s fired at %v, want %v", name, got[name], w)
		}
	}

	// FIRE_ONCE's catch-up says it stands for the 30 occurrences missed
	// (t0+2s … t0+31s), on its event and its execution; no other fire
	// says anything of the kind.
	collapsed := map[string]string{}
	for _, r := range fired {
		for _, hd := range r.Headers {
			if hd.Key == record.HeaderFireCollapsed {
				collapsed[string(r.Key)+" at "+headerValue(r, record.HeaderFireScheduled)] = string(hd.Value)
			}
		}
	}
	catchUp := "acme/FIRE_ONCE at " + strconv.FormatInt(t0.Add(31*time.Second).UnixMilli(), 10)
	if fmt.Sprint(collapsed) != fmt.Sprint(map[string]string{catchUp: "30"}) {
		t.Errorf("fired events with a %s header: %v, want only %s with 30", record.HeaderFireCollapsed, collapsed, catchUp)
	}
	executions := map[string]int{}
	for _, x := range kafkatest.Decode[record.Execution](t, kafkatest.Drain(t, h.brokers, h.topics.Executions)) {
		if x.Collapsed != 0 {
			executions[x.Host+"/"+x.Name+" at "+strconv.FormatInt(x.ScheduledAt, 10)] = x.Collapsed
		}
	}
	if fmt.Sprint(executions) != fmt.Sprint(map[string]int{catchUp: 30}) {
		t.Errorf("executions that say they collapsed fires: %v, want only %s with 30", executions, catchUp)
	}
}

// headerValue is the value of a record's header key, "" when it has none.
func headerValue(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func TestPauseResumeAndTrigger(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now()
	jobs := h.watch("jobs")
	audit := h.watch(h.topics.Audit)
	e := h.start()
	d := every("minutely", t0.Add(time.Minute), task.Minutes, 1)
	h.send(d)
	h.waitFired(audit, 1)

	paused := d
	paused.Action, paused.Active = task.Update, task.Ptr(false)
	h.send(paused)
	h.waitFired(audit, 2)
	h.advanceTo(t0.Add(3 * time.Minute)) // minutes 1, 2 and 3 pass while paused
	trigger := task.Definition{Host: d.Host, Name: d.Name, Action: task.Trigger}
	h.send(trigger) // fires now, paused or not
	h.waitFired(jobs, 1)

	h.advanceTo(t0.Add(3*time.Minute + 30*time.Second))
	resumed := d
	resumed.Action, resumed.Active = task.Update, task.Ptr(true)
	h.send(resumed)
	h.waitFired(audit, 4)
	h.advanceTo(t0.Add(4 * time.Minute))
	h.waitFired(jobs, 2)
	e.stop()

	got := occurrences(t, kafkatest.Drain(t, h.brokers, "jobs"))["minutely"]
	want := []int64{t0.Add(3 * time.Minute).UnixMilli(), t0.Add(4 * time.Minute).UnixMilli()}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("fired at %v, want the trigger at t0+3m and the next minute after resuming, %v", got, want)
	}
	var actions []string
	for _, a := range kafkatest.Decode[struct{ Action string }](t, audit.Records()) {
		actions = append(actions, a.Action)
	}
	if fmt.Sprint(actions) != "[task.created task.paused task.triggered task.resumed]" {
		t.Errorf("audit %v", actions)
	}
}

// TestTaskWithoutStartKeepsItsCadenceWhenChanged: a task given no start
// fires on the beat set when it was created, through a pause and resume
// and a new definition with the same frequency.
func TestTaskWithoutStartKeepsItsCadenceWhenChanged(t *testing.T) {
	h := newHarness(t)
	t0 := h.clock.Now() // on a whole minute
	jobs := h.watch("jobs")
	audit := h.watch(h.topics.Audit)
	e := h.start()
	d := every("warmup", t0, task.Minutes, 15)
	d.Start = nil
	h.send(d)
	h.waitFired(jobs, 1) // at t0

	h.advanceTo(t0.Add(2 * time.Minute))
	paused := d
	paused.Action, paused.Active = task.Update, task.Ptr(false)
	h.send(paused)
	h.waitFired(audit, 2)
	h.advanceTo(t0.Add(2*time.Minute + 30*time.Second))
	resumed := d
	resumed.Action, resumed.Active = task.Update, task.Ptr(true)
	h.send(resumed)
	h.waitFired(audit, 3)
	h.advanceTo(t0.Add(15 * time.Minute))
	h.waitFired(jobs, 2)

	h.advanceTo(t0.Add(16*time.Minute + 10*time.Second))
	changed := d
	changed.Data = map[string]string{"cmd": "warm --all"}
	h.send(changed) // dropped again, changed but for its frequency
	h.waitFired(audit, 4)
	h.advanceTo(t0.Add(30 * time.Minute))
	h.waitFired(jobs, 3)
	e.stop()

	got := occurrences(t, kafkatest.Drain(t, h.brokers, "jobs"))["warmup"]
	want := []int64{t0.UnixMilli(), t0.Add(15 * time.Minute).UnixMilli(), t0.Add(30 * time.Minute).UnixMilli()}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("fired at %v, want every 15 minutes from t0: %v", got, want)
	}
}
