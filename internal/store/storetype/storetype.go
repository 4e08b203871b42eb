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
	"errors"
	"time"
)

// ErrNotFound is returned by the queries that look up one row by its id
// when there is no such row.
var ErrNotFound = errors.New("not found")

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
)

// Arrival is a file on its way in: seen, being converted, or failed before
// anything of its content was recorded. Once its batch is recorded the
// file is a Batch and the arrival is gone.
type Arrival struct {
	ID        string    `json:"id"`
	File      string    `json:"file"`
	Folder    string    `json:"folder,omitempty"`
	Status    string    `json:"status"`
	Node      string    `json:"node,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	FirstSeen time.Time `json:"firstSeen"`
	UpdatedAt time.Time `json:"updatedAt"`
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
	// Accepted counts the rows injected: Rows less Rejected, and none for
	// a file rejected whole.
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

// Task statuses.
const (
	// TaskActive: the engine holds the task and will fire it.
	TaskActive = "active"
	// TaskCompleted: the last occurrence fired.
	TaskCompleted = "completed"
	// TaskDeleted: a DELETE command stopped it.
	TaskDeleted = "deleted"
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
	Status         string     `json:"status"`
	// Paused is set while an active task's definition says active: false.
	Paused bool `json:"paused"`
	// Fault says why the engine holds the task back when the brokers
	// refused its fires for a reason of its own: "paused by fault policy:
	// REASON" once the policy paused it, "fire refused (attempt N):
	// REASON" while the refused occurrence waits for its next attempt.
	// Empty otherwise.
	Fault     string    `json:"fault,omitempty"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// TaskFilter selects tasks; its zero value selects the first tasks of all.
type TaskFilter struct {
	// Status keeps only tasks with this status when set.
	Status string
	// Batch keeps only tasks whose latest command came from this batch.
	Batch string
	// Host keeps only the tasks of this tenant.
	Host string
	// Name keeps only tasks whose name contains it, ignoring case.
	Name string
	// Topic keeps only tasks firing to this topic.
	Topic string
	// Paused keeps only paused tasks when true.
	Paused bool
	// Limit bounds the answer. Defaults to 100; at most 1000.
	Limit int
}

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
	Status        string     `json:"status"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	Worker        string     `json:"worker,omitempty"`
	StatusAt      *time.Time `json:"statusAt,omitempty"`
	// Timeout is how long after its fire the execution may run without a
	// final status; zero: no limit.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Overdue reports whether the execution has no final status at now,
// past its fire time plus its timeout.
func (e Execution) Overdue(now time.Time) bool {
	if e.Timeout <= 0 || e.FiredAt == nil || (e.Status != "FIRED" && e.Status != "RUNNING") {
		return false
	}
	return now.After(e.FiredAt.Add(e.Timeout))
}

// StatusAsOf says the status to show at now: the recorded one, or OVERDUE.
func (e Execution) StatusAsOf(now time.Time) string {
	if e.Overdue(now) {
		return "OVERDUE"
	}
	return e.Status
}

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
	// Limit bounds a list (not an export). Defaults to 100; at most 1000.
	Limit int
}

// Activity counts what happened since a moment, for the dashboard.
type Activity struct {
	Since    time.Time `json:"since"`
	Files    int       `json:"files"`
	Fires    int       `json:"fires"`
	Failures int       `json:"failures"`
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

	TasksActive    int `json:"tasksActive"`
	TasksCompleted int `json:"tasksCompleted"`
	TasksDeleted   int `json:"tasksDeleted"`
	// TasksPausedByFaultPolicy counts the active tasks the engine paused
	// because the brokers kept refusing their fires.
	TasksPausedByFaultPolicy int `json:"tasksPausedByFaultPolicy"`

	ExecutionsFired   int `json:"executionsFired"`
	ExecutionsRunning int `json:"executionsRunning"`
	ExecutionsSuccess int `json:"executionsSuccess"`
	ExecutionsFailed  int `json:"executionsFailed"`
}

// Executions counts every recorded execution.
func (s Summary) Executions() int {
	return s.ExecutionsFired + s.ExecutionsRunning + s.ExecutionsSuccess + s.ExecutionsFailed
}
