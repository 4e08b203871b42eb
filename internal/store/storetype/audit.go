package storetype

import (
	"time"
)

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
