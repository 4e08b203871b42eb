package injector

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
)

// Arrive records an event of the arrival arr, as handled by actor:
// received, converting, failed or withdrawn (action), with its outcome
// and detail, at the injector's clock. It is produced outside any
// transaction, so it is not held up by a file being injected; done, when
// not nil, is called with the outcome once the brokers have it. Events of
// one arrival keep their order, and come before the file's batch event as
// long as each was done before the file was injected.
func (in *Injector) Arrive(ctx context.Context, actor, action, outcome, detail string, arr record.Arrival, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	a := record.NewAudit(in.cfg.Now(), actor, action, arr.File, outcome)
	a.Detail, a.Arrival = detail, &arr
	in.notices.Produce(ctx, in.encodeAudit(a), func(_ *kgo.Record, err error) { done(err) })
}

// Moved records that the file of batch b, as handled by actor, was moved
// to path in its folder's archive/ or failed/: the console serves each
// drop's own file and report from there, whatever name an earlier file
// took. It is produced like Arrive, outside any transaction; done, when
// not nil, is called with the outcome once the brokers have it.
func (in *Injector) Moved(ctx context.Context, actor string, b record.Batch, path string, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	a := record.NewAudit(in.cfg.Now(), actor, record.ActionFileMoved, path, record.OutcomeOK)
	a.Detail = b.File + " moved to " + path
	// The batch, not the arrival, names the file: the arrival may be a new
	// file of the same name already.
	a.Batch = &record.Batch{ID: b.ID, File: b.File, Folder: b.Folder}
	in.notices.Produce(ctx, in.encodeAudit(a), func(_ *kgo.Record, err error) { done(err) })
}
