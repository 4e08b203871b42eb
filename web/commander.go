package web

import (
	"context"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/web/api"
)

// Commander is how the console and the API change anything: every write
// goes through Kafka's input, status and audit topics, never to the
// store. internal/command's Writer implements it.
type Commander interface {
	// The API's writes: commands, status reports, log lines.
	api.Commander
	// Audit commits one audit event, such as a refused request.
	Audit(ctx context.Context, a record.Audit) error
}
