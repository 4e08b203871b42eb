package web

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// A chained task's state, as its page, a graph's node and its data-state
// attribute say it: its current run's, or where its chain stands.
const (
	nodeNotRun  = "not-run" // no execution yet
	nodeFired   = "fired"
	nodeRunning = "running"
	nodeSuccess = "success"
	nodeFailed  = "failed"
	nodeOverdue = "overdue"
	// nodeHeld: a predecessor's run failed and the task waits for
	// success: it waits for an operator.
	nodeHeld = "held"
	// nodeWaiting: a release on its way, an occurrence waiting, or some
	// predecessors' runs counted and others not yet.
	nodeWaiting = "waiting"
	nodeDeleted = "deleted"
	// nodeUnknown: a task the view holds nothing of (not defined yet, or
	// long gone).
	nodeUnknown = "unknown"
)

// nodeLabels say each state in words.
var nodeLabels = map[string]string{
	nodeNotRun: "not run yet", nodeFired: "fired", nodeRunning: "running", nodeSuccess: "success", nodeFailed: "failed",
	nodeOverdue: "overdue", nodeHeld: "held", nodeWaiting: "waiting", nodeDeleted: "deleted", nodeUnknown: "not known here",
}

// nodeState is the state of a task in a chain at now: held or waiting
// when its chain says so, else its latest execution's (the latest attempt
// of its current run).
func nodeState(n storetype.ChainNode, now time.Time) string {
	switch {
	case n.Status == "":
		return nodeUnknown
	case n.Status == storetype.TaskDeleted:
		return nodeDeleted
	case n.Chain != nil && n.Chain.Held != "":
		return nodeHeld
	case n.Chain.Waits():
		return nodeWaiting
	case n.Latest == nil:
		return nodeNotRun
	}
	return strings.ToLower(n.Latest.StatusAsOf(now))
}

// nodeLabel says a task's state in a chain in words, and whether it is
// paused or late.
func nodeLabel(n storetype.ChainNode, now time.Time, late bool) string {
	s := nodeLabels[nodeState(n, now)]
	if late {
		s += ", late"
	}
	if n.Status == storetype.TaskPaused {
		s += ", paused"
	}
	return s
}

// overdueRun is the latest execution of a task when it is overdue at now:
// a task that follows it is late.
func overdueRun(n storetype.ChainNode, now time.Time) *storetype.Execution {
	if n.Latest != nil && n.Latest.Overdue(now) {
		return n.Latest
	}
	return nil
}

// waitsFor says what a chained task waits for of its predecessors:
// "success", "failure" or "either outcome".
func waitsFor(on string) string {
	if on == string(task.OnDone) {
		return "either outcome"
	}
	if on == "" {
		return string(task.OnSuccess)
	}
	return on
}

// definitionOf reads a stored definition; the zero definition when there
// is none.
func definitionOf(stored string) task.Definition {
	var d task.Definition
	if stored != "" {
		_ = json.Unmarshal([]byte(stored), &d)
	}
	return d
}

// taskChainModel is a task's place in its chains, for its page.
type taskChainModel struct {
	Now   time.Time
	Task  storetype.Task
	Def   task.Definition
	Links storetype.TaskChain
	// Late holds the predecessors whose latest run is overdue.
	Late []storetype.ChainNode
	// Rerun holds the predecessors whose failed run holds the chain and
	// that may be fired again: live tasks.
	Rerun []storetype.ChainNode
	// Overdue is set while the task's own latest run is overdue: the
	// tasks that follow it are late.
	Overdue    bool
	CanOperate bool
	Back       string
}

// newTaskChain makes the chain section of t's page from its links and
// its latest execution (nil before its first).
func newTaskChain(now time.Time, t storetype.Task, latest *storetype.Execution, links storetype.TaskChain, canOperate bool, back string) taskChainModel {
	m := taskChainModel{Now: now, Task: t, Def: definitionOf(t.Definition), Links: links, CanOperate: canOperate, Back: back,
		Overdue: latest != nil && latest.Overdue(now)}
	failed := map[string]bool{}
	for _, p := range t.Chain.Failed() {
		failed[p.Key] = true
	}
	for _, p := range links.Predecessors {
		if overdueRun(p, now) != nil {
			m.Late = append(m.Late, p)
		}
		if failed[p.Key] && (p.Status == storetype.TaskActive || p.Status == storetype.TaskPaused) {
			m.Rerun = append(m.Rerun, p)
		}
	}
	return m
}

// Held reports whether the chain waits for an operator.
func (m taskChainModel) Held() bool { return m.Task.Chain != nil && m.Task.Chain.Held != "" }

// Shown reports whether the task is in a chain at all.
func (m taskChainModel) Shown() bool {
	return len(m.Links.Predecessors) > 0 || m.Links.Followers > 0 || m.Task.Chain != nil
}

// counted is the predecessor's run the task's chain counted, if any.
func (m taskChainModel) counted(key string) *storetype.PredRun {
	if m.Task.Chain == nil {
		return nil
	}
	for i, p := range m.Task.Chain.Preds {
		if p.Key == key {
			return &m.Task.Chain.Preds[i]
		}
	}
	return nil
}

// waitsWords says when the task fires of its predecessors' runs: "It
// fires once every one of them ended in success, 10m later."
func (m taskChainModel) waitsWords() string {
	s := "It fires once every one of them ended in " + waitsFor(string(m.Def.Waits()))
	if m.Def.Delay > 0 {
		s += ", " + task.FormatDelay(m.Def.Delay) + " later"
	}
	return s + "."
}

// lateWords says why a chain is late: whose run is overdue, past which
// timeout.
func lateWords(n storetype.ChainNode) string {
	e := n.Latest
	return n.Key + "'s run is overdue: " + e.Status + ", no final status past its " + e.Timeout.String() + " timeout"
}

// hostURL is the page of a host.
func hostURL(host string) string { return "/hosts/" + url.PathEscape(host) }

// nodeClass styles a graph's node by its state.
func nodeClass(n graphNode) string {
	c := "chain-node state-" + n.State
	if n.Outside {
		c += " outside"
	}
	if n.Late {
		c += " late"
	}
	return c
}

// attemptsWords says how far a run got: "attempt 2 of 3 allowed; the
// run succeeded". While the engine waits to fire its next attempt
// (nextAttemptShown), it ends with "attempt N fires at", and the page
// adds when.
func attemptsWords(r storetype.ExecutionRun) string {
	n := len(r.Attempts)
	s := strconv.Itoa(n) + " of " + strconv.Itoa(max(r.Planned, n)) + " attempts allowed a run"
	if n == 0 {
		return s
	}
	last := r.Attempts[n-1]
	switch {
	case nextAttemptShown(r):
		s += "; attempt " + strconv.Itoa(max(last.Attempt, 1)) + " failed, and attempt " + strconv.Itoa(r.NextAttempt.Attempt) + " fires at"
	case last.Status == storetype.ExecutionSuccess:
		s += "; the run succeeded on attempt " + strconv.Itoa(max(last.Attempt, 1))
	case last.Status == storetype.ExecutionFailed && n >= r.Planned:
		s += "; the run failed, its attempts spent"
	case last.Status == storetype.ExecutionFailed:
		s += "; the last failed, and the next is due after the retry's wait"
	default:
		s += "; attempt " + strconv.Itoa(max(last.Attempt, 1)) + " has not ended yet"
	}
	return s
}

// nextAttemptShown reports whether the engine waits to fire r's next
// attempt: attemptsWords then says which, and the page when.
func nextAttemptShown(r storetype.ExecutionRun) bool {
	return r.NextAttempt != nil && len(r.Attempts) > 0
}
