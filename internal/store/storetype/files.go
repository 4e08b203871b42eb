package storetype

import (
	"encoding/json"
	"time"
)

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
