package storetype

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
