package arrival

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
)

// Config configures Notices.
type Config struct {
	// ClientOpts reach the brokers.
	ClientOpts []kgo.Opt
	// Topics names jobdrop's topics.
	Topics record.Topics
	// Clock is the clock of the events. Defaults to the real clock.
	Clock clockwork.Clock
}

// Notices produces the audit events of files arriving and moved. It is
// safe for concurrent use.
type Notices struct {
	cfg Config
	cl  *kgo.Client
}

// New connects a plain producer.
func New(cfg Config) (*Notices, error) {
	cfg.Topics = cfg.Topics.WithDefaults()
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.ProducerLinger(0)}, cfg.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("arrival notices: %w", err)
	}
	return &Notices{cfg: cfg, cl: cl}, nil
}

// Close releases the producer; events produced after fail.
func (n *Notices) Close() { n.cl.Close() }

// Arrive records an event of the arrival arr, as handled by actor:
// received, converting, failed or withdrawn (action), with its outcome
// and detail, at the configured clock. It is produced outside any
// transaction, so it is not held up by a file being injected; done, when
// not nil, is called with the outcome once the brokers have it. Events of
// one arrival keep their order, and come before the file's batch event as
// long as each was done before the file was injected.
func (n *Notices) Arrive(ctx context.Context, actor, action, outcome, detail string, arr record.Arrival, done func(error)) {
	a := record.NewAudit(n.cfg.Clock.Now(), actor, action, arr.File, outcome)
	a.Detail, a.Arrival = detail, &arr
	n.produce(ctx, a, done)
}

// Moved records that the file of batch b, as handled by actor, was moved
// to path in its folder's archive/ or failed/: the console serves each
// drop's own file and report from there, whatever name an earlier file
// took. It is produced like Arrive, outside any transaction; done, when
// not nil, is called with the outcome once the brokers have it.
func (n *Notices) Moved(ctx context.Context, actor string, b record.Batch, path string, done func(error)) {
	a := record.NewAudit(n.cfg.Clock.Now(), actor, record.ActionFileMoved, path, record.OutcomeOK)
	a.Detail = b.File + " moved to " + path
	// The batch, not the arrival, names the file: the arrival may be a new
	// file of the same name already.
	a.Batch = &record.Batch{ID: b.ID, File: b.File, Folder: b.Folder}
	n.produce(ctx, a, done)
}

// produce sends event a and tells done, if not nil, the brokers' answer.
func (n *Notices) produce(ctx context.Context, a record.Audit, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	v, _ := json.Marshal(a)
	rec := &kgo.Record{Topic: n.cfg.Topics.Audit, Key: []byte(a.Key()), Value: v}
	n.cl.Produce(ctx, rec, func(_ *kgo.Record, err error) { done(err) })
}
