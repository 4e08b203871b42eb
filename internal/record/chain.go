package record

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/jobdrop/jobdrop/task"
)

// Headers of the records of the input topic that are no commands but
// carry a chain's links and outcomes from the partition of one task to
// that of another (see docs/chains.md).
const (
	// HeaderLink marks a link: the record is keyed by a predecessor and
	// its value (a Link) names a task that follows it. The header's value
	// is LinkAdd or LinkRemove.
	HeaderLink = "jobdrop-link"
	// HeaderOutcome marks an outcome: the record is keyed by a task that
	// follows a predecessor, and its value (an Outcome) says how a run of
	// the predecessor ended.
	HeaderOutcome = "jobdrop-outcome"
)

// The values of HeaderLink.
const (
	LinkAdd    = "add"
	LinkRemove = "remove"
)

// Link is the value of a link record: Follower (a task key) follows the
// task the record is keyed by.
type Link struct {
	Follower string `json:"follower"`
}

// Outcome is the value of an outcome record: the run Run of the
// predecessor Pred ended in Status (SUCCESS or FAILED) at At, through its
// attempt Fire, whose worker said Message.
type Outcome struct {
	Pred    string `json:"pred"`
	Run     string `json:"run"`
	Fire    string `json:"fire"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	At      int64  `json:"at"`
	// Followers are the followers of Pred the record tells, all on
	// the input partition of its key (one of them); absent, it tells
	// the task of its key alone.
	Followers []string `json:"followers,omitempty"`
}

// HeaderFireAttempt on a fired event is its attempt when it is a retry
// (2 for the first retry); absent on a run's first attempt.
const HeaderFireAttempt = "scheduler-attempt"

// Chain is where a chained task stands with its predecessors, on its
// state record: what the engine needs to go on after a restart, and what
// the console shows of a held or waiting chain.
type Chain struct {
	// Preds holds, for each predecessor whose run ended since the task
	// was defined, the latest such run, in the order After names them.
	Preds []PredRun `json:"preds,omitempty"`
	// Held says why the task waits for an operator (or a new run of the
	// predecessor): a predecessor's run failed and the task waits for
	// success.
	Held string `json:"held,omitempty"`
	// Release is a release on its way: the task fires at its time.
	Release *Release `json:"release,omitempty"`
	// Waiting is the scheduled time of an occurrence of a task with a
	// schedule of its own that came while its predecessors had not
	// released it: it fires once they do.
	Waiting int64 `json:"waiting,omitempty"`
}

// PredRun is the latest run of a predecessor that ended.
type PredRun struct {
	Key    string `json:"key"`
	Run    string `json:"run"`
	Fire   string `json:"fire,omitempty"`
	Status string `json:"status"`
	At     int64  `json:"at"`
	// Fresh marks a run not spent yet on a fire (or a skip) of the task.
	Fresh bool `json:"fresh,omitempty"`
}

// Release is a chained task's fire to come: at At, with fire id FireID,
// released by the predecessors' runs Runs.
type Release struct {
	At     int64    `json:"at"`
	FireID string   `json:"fireId"`
	Runs   []string `json:"runs,omitempty"`
}

// Audit actions of chains and retries.
const (
	// A chained task's predecessor failed while it waited for success:
	// the chain is held until an operator releases or skips it, or a new
	// run of the predecessor succeeds.
	ActionChainHeld = "task.chain_held"
	// An operator released a chained task (fired it now) or skipped its
	// current run.
	ActionTaskReleased   = "task.released"
	ActionTaskRunSkipped = "task.run_skipped"
	// A failed execution will be fired again, as the next attempt of its
	// run; or its run ended failed, its attempts spent.
	ActionTaskRetryScheduled = "task.retry_scheduled"
	ActionTaskRunFailed      = "task.run_failed"
)

// RunKeyPrefix starts the state topic's key of a watched run: the prefix,
// then the run's id. The engine writes a run's record in the transaction
// that fires it, rewrites it when a failure schedules its next attempt,
// and tombstones it once the run ends.
const RunKeyPrefix = "#run "

// RunState is a watched run of a task (one with followers or a retry policy),
// as the value of its record on the state topic.
type RunState struct {
	Key string `json:"key"`
	// Run is the fire id of its first attempt; Fire that of the attempt
	// in flight (or of the last one, while a retry waits).
	Run     string `json:"run"`
	Fire    string `json:"fire"`
	Attempt int    `json:"attempt"`
	// Scheduled is the occurrence's scheduled time, which every attempt
	// keeps; FiredAt when the attempt in flight was fired.
	Scheduled int64 `json:"scheduled"`
	FiredAt   int64 `json:"firedAt"`
	// RetryAt is when the next attempt fires, while one waits.
	RetryAt int64 `json:"retryAt,omitempty"`
	// Deadline is when the attempt in flight counts as failed for want
	// of a final status (a retry policy with onOverdue).
	Deadline int64 `json:"deadline,omitempty"`
	// After and Triggered are the first attempt's, which the others
	// carry too.
	After     []string `json:"after,omitempty"`
	Triggered bool     `json:"triggered,omitempty"`
}

// AttemptFireID is the fire id of attempt n (2 or more) of the run whose
// first attempt's fire id is run.
func AttemptFireID(run string, n int) string {
	return shortHash(run + "#attempt#" + strconv.Itoa(n))
}

// ChainFireID is the fire id of a chained task's fire released by the
// predecessors' runs runs (in the order After names the predecessors):
// the same however often the outcomes that released it are read.
func ChainFireID(host, name string, runs []string) string {
	return shortHash(task.Key(host, name) + "#after#" + strings.Join(runs, ","))
}

// ReleaseFireID is the fire id of a fire an operator asked for by a
// RELEASE command, derived from the command's place in the input topic.
func ReleaseFireID(host, name string, partition int32, offset int64) string {
	return FireID(host, name+"\x00release\x00"+strconv.Itoa(int(partition)), offset)
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}
