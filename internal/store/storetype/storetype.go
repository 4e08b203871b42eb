// Package storetype holds the rows the store answers with: files (batches),
// tasks, executions, audit events and the dashboard summary, plus the
// filter and error values its queries take and return.
//
// It exists so that readers of the store, the web console above all, can
// name these types without importing the store itself and with it SQLite
// and the Kafka client: it depends on the standard library only and does
// no I/O.
package storetype

import (
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned by the queries that look up one row by its id
// when there is no such row.
var ErrNotFound = errors.New("not found")

// ErrBadCursor is returned by a list for a cursor that is not one of its
// own pages', in the order asked for.
var ErrBadCursor = errors.New("cursor: not from this list and order; start again from the first page")

// ErrBadFilter is returned by a list for a filter value no row can have,
// such as an unknown status or order.
var ErrBadFilter = errors.New("not a value of this list")

// Batch statuses: what became of a file.
const (
	// BatchInjected: every command of the file was committed to Kafka.
	BatchInjected = "injected"
	// BatchRejected: the file had invalid rows and nothing was injected.
	BatchRejected = "rejected"
	// BatchDuplicate: the same content had already been injected; only
	// seen as a status when the original injection is unknown here.
	BatchDuplicate = "duplicate"
	// BatchHeld: a file of a sync folder that would remove too much of
	// its source, waiting in held/ for an operator to apply or reject it.
	BatchHeld = "held"
)

// Arrival statuses: where a file is before its batch is recorded.
const (
	// ArrivalReceived: a watcher has seen the file in its folder and waits
	// for it to stop changing.
	ArrivalReceived = "received"
	// ArrivalConverting: a watcher took the file and is converting and
	// injecting it.
	ArrivalConverting = "converting"
	// ArrivalFailed: the file could not be handled (no converter for its
	// name, unreadable, too large, Kafka refused it) and was moved to
	// failed/; Detail says why.
	ArrivalFailed = "failed"
	// ArrivalDuplicate: the file's content had been injected before, so
	// nothing of it was injected; Batch names the batch it repeats. The
	// row stays until a file of the same name arrives again.
	ArrivalDuplicate = BatchDuplicate
)

// Arrival is a file on its way in: seen, being converted, or failed before
// anything of its content was recorded. Once its batch is recorded the
// file is a Batch and the arrival is gone, but for a duplicate: a file
// whose batch was recorded before keeps its arrival, saying so.
type Arrival struct {
	ID        string    `json:"id"`
	File      string    `json:"file"`
	Folder    string    `json:"folder,omitempty"`
	Status    string    `json:"status"`
	Node      string    `json:"node,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	FirstSeen time.Time `json:"firstSeen"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Batch is, for a duplicate, the id of the batch whose content it
	// repeats, and Original that batch's file name ("" when the batch is
	// not known here).
	Batch    string `json:"batch,omitempty"`
	Original string `json:"original,omitempty"`
}

// Batch is one dropped file, identified by the SHA-256 of its content.
type Batch struct {
	ID     string `json:"id"`
	File   string `json:"file"`
	Folder string `json:"folder,omitempty"`
	Size   int64  `json:"size"`
	// Rows counts the data rows read from the file, valid or not.
	Rows int `json:"rows"`
	// Rejected counts the invalid rows.
	Rejected int `json:"rejected"`
	// Accepted counts the rows injected: Rows less Rejected for an
	// injected file, and none for a file rejected whole, held for review
	// or known only as a duplicate.
	Accepted int    `json:"accepted"`
	Status   string `json:"status"`
	// Errors holds the first row errors of a rejected file.
	Errors []string `json:"errors,omitempty"`
	// Warnings holds the first of what is valid but doubtful in its rows,
	// such as a cron expression two dialects read apart.
	Warnings []string `json:"warnings,omitempty"`
	// Duplicates counts the times the same content was dropped again
	// after this batch was recorded.
	Duplicates int `json:"duplicates"`
	// LastDuplicateAt is when the same content was last dropped again.
	LastDuplicateAt *time.Time `json:"lastDuplicateAt,omitempty"`
	// Tasks counts the tasks whose latest command came from this file.
	Tasks int `json:"tasks"`
	// Kept lists the paths the watchers gave the files of this batch in
	// their folders' archive/ or failed/, newest first: the file dropped
	// as File, and any copy of it dropped again. A name taken by an earlier
	// file gets a suffix (jobs.20261122T101500Z.csv), so this, not File,
	// says where the file is. Only BatchByID fills it; it is empty for
	// files recorded before jobdrop recorded moves.
	Kept      []string  `json:"kept,omitempty"`
	FirstSeen time.Time `json:"firstSeen"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Diff is what a file of a sync folder changed (or, held, would
	// change) of the tasks earlier versions of its source created; nil
	// for other files.
	Diff *Diff `json:"diff,omitempty"`
}

// Diff counts what a file of a sync folder changes of its source's tasks,
// with its first changes, one per line.
type Diff struct {
	Added     int      `json:"added"`
	Changed   int      `json:"changed"`
	Removed   int      `json:"removed"`
	Unchanged int      `json:"unchanged"`
	Lines     []string `json:"lines,omitempty"`
}

// Task states.
const (
	// TaskActive: the engine holds the task and will fire it.
	TaskActive = "active"
	// TaskPaused: the engine holds the task but its definition says
	// active: false (paused by hand, or by the fault policy), so it does
	// not fire until resumed.
	TaskPaused = "paused"
	// TaskCompleted: the last occurrence fired.
	TaskCompleted = "completed"
	// TaskDeleted: a DELETE command stopped it.
	TaskDeleted = "deleted"
	// TaskLive is no task's state: as a filter it selects the tasks the
	// engine holds, active or paused.
	TaskLive = "live"
)

// Task is the latest known state of one task, as the engine last wrote it.
type Task struct {
	// Key is host + "/" + name.
	Key   string `json:"key"`
	Host  string `json:"host"`
	Name  string `json:"name"`
	Topic string `json:"topic"`
	// Schedule summarises when the task fires, for people: "every 5
	// minutes", "cron 0 2 * * * (Europe/Paris)", "once".
	Schedule string `json:"schedule"`
	// Definition is the task definition as JSON; empty when only the
	// task's end is known.
	Definition string `json:"definition,omitempty"`
	// Anchor is the resolved start every fire is counted from.
	Anchor *time.Time `json:"anchor,omitempty"`
	// NextFire is nil once the task has ended.
	NextFire *time.Time `json:"nextFire,omitempty"`
	// FireCount and LastFire are the engine's own counters.
	FireCount int64      `json:"fireCount"`
	LastFire  *time.Time `json:"lastFire,omitempty"`
	// Executions counts the fires recorded for this task.
	Executions int `json:"executions"`
	// LastExecutedAt is the scheduled time of the latest recorded fire.
	LastExecutedAt *time.Time `json:"lastExecutedAt,omitempty"`
	Batch          string     `json:"batch,omitempty"`
	SourceFile     string     `json:"sourceFile,omitempty"`
	SourceRow      int        `json:"sourceRow,omitempty"`
	// Status is the task's state: active, paused, completed or deleted.
	Status string `json:"status"`
	// Paused is set while the task is paused (Status is TaskPaused).
	Paused bool `json:"paused"`
	// Fault says why the engine holds the task back when the brokers
	// refused its fires for a reason of its own: "paused by fault policy:
	// REASON" once the policy paused it, "fire refused (attempt N):
	// REASON" while the refused occurrence waits for its next attempt.
	// Empty otherwise.
	Fault     string    `json:"fault,omitempty"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Timezone is the IANA zone of the task's definition, if it names
	// one (its cron and windows are read in it).
	Timezone string `json:"timezone,omitempty"`
}

// Live reports whether the engine holds the task: active or paused.
func (t Task) Live() bool { return t.Status == TaskActive || t.Status == TaskPaused }

// TaskFilter selects tasks; its zero value selects the first page of all,
// due soonest first.
type TaskFilter struct {
	// Status keeps only tasks in this state when set (TaskLive: active
	// or paused).
	Status string
	// Batch keeps only tasks whose latest command came from this batch.
	Batch string
	// Host keeps only the tasks of this tenant.
	Host string
	// Name keeps only tasks whose name contains it, ignoring case.
	Name string
	// Topic keeps only tasks firing to this topic.
	Topic string
	// From and To bound the next fire, From inclusive, To exclusive;
	// zero: unbounded. A bound keeps only tasks with a next fire.
	From, To time.Time
	// Fault keeps only the tasks the engine holds back for their fault:
	// TaskFaultAny those with a fault, TaskFaultPaused those the fault
	// policy paused.
	Fault string
	// Sort is TaskSortNext (the default) or TaskSortKey.
	Sort string
	// Cursor, from a Page, asks for the page it leads to.
	Cursor string
	// Limit bounds a page. Defaults to 100; at most 1000.
	Limit int
}

// Values of TaskFilter.Fault.
const (
	TaskFaultAny    = "any"
	TaskFaultPaused = "paused"
)

// Task list orders.
const (
	// TaskSortNext lists the tasks due soonest first, then ended tasks,
	// most recently ended first.
	TaskSortNext = "next"
	// TaskSortKey lists the tasks by key, A to Z.
	TaskSortKey = "key"
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

// Orders of the executions, files and audit lists.
const (
	SortNewest = "newest"
	SortOldest = "oldest"
)

// TaskKey is the key of the task the execution belongs to, empty when
// unknown.
func (e Execution) TaskKey() string {
	if e.Host == "" && e.Name == "" {
		return ""
	}
	return e.Host + "/" + e.Name
}

// AuditFilter selects audit events; its zero value selects them all.
type AuditFilter struct {
	// From and To bound the event time, From inclusive, To exclusive;
	// zero: unbounded.
	From, To time.Time
	// Actor and Action keep only events with exactly this value.
	Actor  string
	Action string
	// Object keeps only events whose object contains it, ignoring case.
	Object string
	// Outcome keeps only events with exactly this outcome.
	Outcome string
	// Sort is SortNewest (the default) or SortOldest.
	Sort string
	// Cursor, from a Page, asks for the page it leads to.
	Cursor string
	// Limit bounds a page (not an export). Defaults to 100; at most 1000.
	Limit int
}

// FileFilter selects files, recorded or on their way in; its zero value
// selects the first page of all, most recently changed first.
type FileFilter struct {
	// Status keeps only files with this status: a batch's (injected,
	// rejected, duplicate, held) or an arrival's (received, converting,
	// failed).
	Status string
	// Folder keeps only the files of this watched folder, as configured.
	Folder string
	// Name keeps only files whose name contains it, ignoring case.
	Name string
	// From and To bound when a file last changed, From inclusive, To
	// exclusive; zero: unbounded.
	From, To time.Time
	// Sort is SortNewest (the default) or SortOldest.
	Sort string
	// Cursor, from a Page, asks for the page it leads to.
	Cursor string
	// Limit bounds a page. Defaults to 100; at most 1000.
	Limit int
}

// File is one line of the files list: a file whose batch is recorded, or
// one on its way in.
type File struct {
	Batch   *Batch
	Arrival *Arrival
}

// UpdatedAt is when the file last changed.
func (f File) UpdatedAt() time.Time {
	if f.Batch != nil {
		return f.Batch.UpdatedAt
	}
	return f.Arrival.UpdatedAt
}

// MarshalJSON writes a recorded file as its batch, and a file on its way
// in as its arrival marked "arriving": true.
func (f File) MarshalJSON() ([]byte, error) {
	if f.Batch != nil {
		return json.Marshal(f.Batch)
	}
	return json.Marshal(struct {
		*Arrival
		Arriving bool `json:"arriving"`
	}{f.Arrival, true})
}

// Page is one page of a list: its rows, how many rows the filter selects
// in all, where the page starts among them, and the cursors of the pages
// around it.
type Page[T any] struct {
	Rows []T
	// Total counts every row the filter selects, on every page.
	Total int
	// Offset is the place of the page's first row among them, from 0,
	// as of when its cursor was made.
	Offset int
	// Next and Prev are the cursors of the next and previous pages; empty
	// at the end and at the start.
	Next, Prev string
}

// Activity counts what happened since a moment, for the dashboard: the
// files that changed, the executions (fired, or reported while only a
// worker's report is known) and those of them that failed.
type Activity struct {
	Since time.Time `json:"since"`
	Files int       `json:"files"`
	// Rejected counts the files of Files rejected.
	Rejected int `json:"rejected"`
	Fires    int `json:"fires"`
	Failures int `json:"failures"`
}

// AuditEvent is one entry of the audit trail.
type AuditEvent struct {
	ID      string    `json:"id"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`
	Action  string    `json:"action"`
	Object  string    `json:"object"`
	Outcome string    `json:"outcome"`
	Detail  string    `json:"detail,omitempty"`
	Batch   string    `json:"batch,omitempty"`
}

// Summary counts what the dashboard shows at a glance.
type Summary struct {
	FilesInjected int `json:"filesInjected"`
	FilesRejected int `json:"filesRejected"`
	// FilesDuplicate counts the drops of content injected before.
	FilesDuplicate int `json:"filesDuplicate"`

	// TasksActive counts the tasks that fire; TasksPaused those the
	// engine holds paused, by hand or by the fault policy.
	TasksActive    int `json:"tasksActive"`
	TasksPaused    int `json:"tasksPaused"`
	TasksCompleted int `json:"tasksCompleted"`
	TasksDeleted   int `json:"tasksDeleted"`
	// TasksPausedByFaultPolicy counts the active tasks the engine paused
	// because the brokers kept refusing their fires.
	TasksPausedByFaultPolicy int `json:"tasksPausedByFaultPolicy"`

	// ExecutionsFired and ExecutionsRunning leave out the overdue, which
	// ExecutionsOverdue counts.
	ExecutionsFired   int `json:"executionsFired"`
	ExecutionsRunning int `json:"executionsRunning"`
	ExecutionsOverdue int `json:"executionsOverdue"`
	ExecutionsSuccess int `json:"executionsSuccess"`
	ExecutionsFailed  int `json:"executionsFailed"`

	// FilesHeld counts the files of sync folders held for review.
	FilesHeld int `json:"filesHeld"`
	// FilesFailed counts the files that failed before their content was
	// recorded.
	FilesFailed int `json:"filesFailed"`
}

// Executions counts every recorded execution.
func (s Summary) Executions() int {
	return s.ExecutionsFired + s.ExecutionsRunning + s.ExecutionsOverdue + s.ExecutionsSuccess + s.ExecutionsFailed
}
