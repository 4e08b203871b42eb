package storetype

import "time"

// LogLine is one line a worker appended to an execution's log.
type LogLine struct {
	At      time.Time `json:"at"`
	Level   string    `json:"level"`
	Message string    `json:"message"`
	Worker  string    `json:"worker,omitempty"`
}

// ExecutionLog is what is kept of an execution's log.
type ExecutionLog struct {
	// Lines are the lines asked for, oldest first.
	Lines []LogLine `json:"lines"`
	// Dropped counts the oldest lines dropped to keep the log under its
	// cap; Lines starts after them.
	Dropped int `json:"dropped,omitempty"`
	// Kept counts the lines kept, within the range asked for or not.
	Kept int `json:"kept"`
	// Bytes is what the kept lines count against the cap.
	Bytes int64 `json:"bytes"`
}

// Unfinished is an execution with no final status, for the reaper.
type Unfinished struct {
	FireID   string
	Host     string
	Name     string
	Status   string
	FiredAt  time.Time
	Timeout  time.Duration
	StatusAt time.Time
}
