package web

import (
	"context"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// Commander is how the console and the API change anything: every write
// goes through Kafka's input, status and audit topics, never to the
// store. The injector implements it.
type Commander interface {
	// Send commits commands in one transaction; the engine audits each
	// one under actor.
	Send(ctx context.Context, actor string, defs ...task.Definition) error
	// ReportStatus commits a worker's report on an execution with its
	// audit event.
	ReportStatus(ctx context.Context, actor string, s record.Status) error
	// AppendLogs commits a worker's log lines on an execution (s.Logs;
	// s.Status is empty) to the status topic.
	AppendLogs(ctx context.Context, s record.Status) error
	// Trigger commits a command that fires the task host/name now, and
	// returns the fire id the engine gives that fire.
	Trigger(ctx context.Context, actor, host, name string) (fireID string, err error)
	// Audit commits one audit event, such as a refused request.
	Audit(ctx context.Context, a record.Audit) error
}
