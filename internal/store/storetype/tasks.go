package storetype

import (
	"time"
)

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
	// Chain is where a task that follows others (its definition's
	// after) stands with them; nil for any other task, and once it
	// ended.
	Chain *Chain `json:"chain,omitempty"`
	// NextAttempt is the retry the engine waits to fire after a failed
	// attempt of one of the task's runs, the soonest when several wait;
	// nil when none waits.
	NextAttempt *NextAttempt `json:"nextAttempt,omitempty"`
}

// NextAttempt is a retry the engine waits to fire: the attempt it will be
// of its run, and when.
type NextAttempt struct {
	Run     string    `json:"run"`
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
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
