package storetype

import (
	"encoding/json"
	"time"
)

// Execution is one fire of one task and what its worker reported.
type Execution struct {
	FireID string `json:"fireId"`
	// Host, Name and Topic are empty while only a worker's status is
	// known.
	Host            string     `json:"host"`
	Name            string     `json:"name"`
	Topic           string     `json:"topic"`
	TargetPartition int32      `json:"targetPartition"`
	TargetOffset    int64      `json:"targetOffset"`
	ScheduledAt     *time.Time `json:"scheduledAt,omitempty"`
	FiredAt         *time.Time `json:"firedAt,omitempty"`
	Batch           string     `json:"batch,omitempty"`
	// Status is FIRED, RUNNING, SUCCESS or FAILED.
	Status string `json:"status"`
	// Recorded is the status recorded, when Status says OVERDUE.
	Recorded      string     `json:"recordedStatus,omitempty"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	Worker        string     `json:"worker,omitempty"`
	StatusAt      *time.Time `json:"statusAt,omitempty"`
	// StartedAt is when a worker first reported it RUNNING; nil until
	// one did.
	StartedAt *time.Time `json:"startedAt,omitempty"`
	// Timeout is how long after its fire the execution may run without a
	// final status; zero: no limit. Its JSON is in milliseconds, as the
	// task's definition says it (see MarshalJSON).
	Timeout time.Duration `json:"timeout,omitempty"`
	// Timezone is the zone of its task's definition, when the task is
	// known and names one.
	Timezone string `json:"timezone,omitempty"`
	// Collapsed is, for a catch-up fire standing for more than one missed
	// occurrence (FIRE_ONCE after jobdrop was down), how many, itself
	// included; zero otherwise.
	Collapsed int `json:"collapsed,omitempty"`
	// Attempt is the attempt of its run: 1 for the first, 2 for the
	// first retry.
	Attempt int `json:"attempt,omitempty"`
	// Run is, on a retry, the fire id of its run's first attempt; empty
	// on a first attempt, whose run is its own fire id.
	Run string `json:"run,omitempty"`
	// After holds the runs of the predecessors (their first attempts'
	// fire ids) that released a chained task's fire.
	After []string `json:"after,omitempty"`
	// Released holds the fire ids of the fires its run released, of the
	// tasks that follow its task.
	Released []string `json:"released,omitempty"`
}

// RunID is the fire id of its run's first attempt: Run, or its own.
func (e Execution) RunID() string {
	if e.Run != "" {
		return e.Run
	}
	return e.FireID
}

// executionJSON is an Execution as JSON: its timeout in milliseconds.
type executionJSON struct {
	plainExecution
	Timeout int64 `json:"timeout,omitempty"`
}

// plainExecution is Execution without its JSON methods.
type plainExecution Execution

// MarshalJSON writes Timeout in milliseconds, as the task's definition
// says it, not in a Go duration's nanoseconds.
func (e Execution) MarshalJSON() ([]byte, error) {
	return json.Marshal(executionJSON{plainExecution(e), e.Timeout.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Execution) UnmarshalJSON(b []byte) error {
	var v executionJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Execution(v.plainExecution)
	e.Timeout = time.Duration(v.Timeout) * time.Millisecond
	return nil
}

// Execution states: what the engine and workers recorded, and OVERDUE.
const (
	ExecutionFired   = "FIRED"
	ExecutionRunning = "RUNNING"
	ExecutionSuccess = "SUCCESS"
	ExecutionFailed  = "FAILED"
	// ExecutionOverdue is never recorded: a FIRED or RUNNING execution
	// past its fire time plus its timeout is overdue from then on.
	ExecutionOverdue = "OVERDUE"
)

// ExecutionStates lists every state an execution shows, in the order of
// its life.
var ExecutionStates = []string{ExecutionFired, ExecutionRunning, ExecutionOverdue, ExecutionSuccess, ExecutionFailed}

// Overdue reports whether the execution has no final status at now,
// past its fire time plus its timeout.
func (e Execution) Overdue(now time.Time) bool {
	if e.Timeout <= 0 || e.FiredAt == nil || (e.Status != ExecutionFired && e.Status != ExecutionRunning) {
		return false
	}
	return now.After(e.FiredAt.Add(e.Timeout))
}

// StatusAsOf says the status to show at now: the recorded one, or OVERDUE.
func (e Execution) StatusAsOf(now time.Time) string {
	if e.Overdue(now) {
		return ExecutionOverdue
	}
	return e.Status
}

// AsOf is the execution as shown at now: Status is OVERDUE when it is
// overdue, and Recorded then keeps the status recorded.
func (e Execution) AsOf(now time.Time) Execution {
	if e.Overdue(now) {
		e.Recorded, e.Status = e.Status, ExecutionOverdue
	}
	return e
}

// ExecutionFilter selects executions; its zero value selects the first
// page of all, newest first.
type ExecutionFilter struct {
	// Status keeps only executions in this state: FIRED, RUNNING,
	// SUCCESS, FAILED or OVERDUE (FIRED and RUNNING leave out the
	// overdue ones), as of Now.
	Status string
	// Recorded keeps only executions recorded in one of these states
	// (FIRED, RUNNING, SUCCESS, FAILED), overdue or not.
	Recorded []string
	// Now is the moment the overdue are told from. Defaults to the time
	// of the query.
	Now time.Time
	// Host keeps only the executions of this tenant's tasks.
	Host string
	// Name keeps only the executions of tasks whose name contains it,
	// ignoring case.
	Name string
	// Task keeps only the executions of the task with this key.
	Task string
	// Topic keeps only the executions fired to this topic.
	Topic string
	// Batch keeps only the executions of tasks the file with this batch
	// id defined.
	Batch string
	// From and To bound the time an execution is shown at (fired, or
	// reported while only a worker's report is known), From inclusive,
	// To exclusive; zero: unbounded.
	From, To time.Time
	// Sort is SortNewest (the default) or SortOldest.
	Sort string
	// Cursor, from a Page, asks for the page it leads to.
	Cursor string
	// Limit bounds a page. Defaults to 100; at most 1000.
	Limit int
}

// TaskKey is the key of the task the execution belongs to, empty when
// unknown.
func (e Execution) TaskKey() string {
	if e.Host == "" && e.Name == "" {
		return ""
	}
	return e.Host + "/" + e.Name
}
