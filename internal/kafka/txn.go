package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrLeaveOpen, returned by the beforeCommit of Transact, leaves the
// transaction neither committed nor aborted, as a process that died there
// would. Only tests use it.
var ErrLeaveOpen = errors.New("transaction left open")

// Transact runs fill in one transaction of the transactional client cl and
// commits it. fill produces through the function it is given; an error from
// fill or from any produce aborts the transaction, and so does a failed
// commit when the client can still abort. The error of a refused record is
// a *RecordError naming it (RecordErrors finds them). beforeCommit, if not nil, runs
// once everything is written and before the commit.
//
// The commit is never cancelled by ctx: an interrupted EndTransaction
// would leave its outcome unknown.
func Transact(ctx context.Context, cl *kgo.Client, fill func(produce func(*kgo.Record)) error, beforeCommit func() error) error {
	watch, _ := cl.OptValue(kgo.WithLogger).(*endWatch)
	before := watch.count()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	var refused refusals
	promise := refused.add // once: a method value made per record costs an allocation each
	produce := func(r *kgo.Record) { cl.Produce(ctx, r, promise) }
	err := fill(produce)
	if err == nil {
		// A failed fill is not flushed: what it produced is dropped unsent
		// with the rest of the buffer, and the transaction aborted at once.
		if err = cl.Flush(ctx); err == nil {
			err = refused.err()
		}
	}
	if err == nil && beforeCommit != nil {
		if err = beforeCommit(); errors.Is(err, ErrLeaveOpen) {
			return err
		}
	}
	end := context.WithoutCancel(ctx)
	if err != nil {
		if aerr := cl.AbortBufferedRecords(end); aerr != nil {
			err = errors.Join(err, aerr)
		}
		if aerr := cl.EndTransaction(end, kgo.TryAbort); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return err
	}
	if err := cl.EndTransaction(end, kgo.TryCommit); err != nil {
		if errors.Is(err, kerr.OperationNotAttempted) || errors.Is(err, kerr.TransactionAbortable) {
			_ = cl.EndTransaction(end, kgo.TryAbort)
		}
		return fmt.Errorf("commit: %w", err)
	}
	if watch.count() != before {
		return ErrEndedWithAbort
	}
	return nil
}

// ErrEndedWithAbort is the error of a transaction the client was asked to
// commit and aborted: nothing of it was written. The client is not to be
// used again: Renew it, then try the transaction again.
//
// kgo (v1.22) ends a transaction with an abort, and returns no error, when
// it holds none of the transaction's partitions as added to it. It did so
// now and then for a transaction whose records were all acknowledged,
// when they were the client's first to a topic and the CPU was loaded: the
// commands of a REST call were acknowledged and never applied. The client
// says so only in its log, which TxnOpts watches. Tried again on the same
// client, the transaction was refused with OUT_OF_ORDER_SEQUENCE_NUMBER.
var ErrEndedWithAbort = errors.New("the Kafka client ended the transaction with an abort where a commit was asked; nothing of it was written")

// TransactRenewing runs Transact on the client *cl. When the client ends a
// commit with an abort (ErrEndedWithAbort) it renews *cl and, up to
// attempts times in all, runs the transaction again: fill must be one that
// can run again, writing the same records anew. It returns
// ErrEndedWithAbort once the attempts are spent, with *cl renewed for the
// next caller.
func TransactRenewing(ctx context.Context, cl **kgo.Client, attempts int, fill func(produce func(*kgo.Record)) error) error {
	for attempt := 1; ; attempt++ {
		err := Transact(ctx, *cl, fill, nil)
		if !errors.Is(err, ErrEndedWithAbort) {
			return err
		}
		renewed, rerr := Renew(*cl)
		if rerr != nil {
			*cl = nil
			return errors.Join(err, rerr)
		}
		*cl = renewed
		if attempt >= attempts || ctx.Err() != nil {
			return err
		}
	}
}

// Renew closes cl and returns a client of the same options. Its producer
// id is initialised anew, which aborts whatever cl left open.
func Renew(cl *kgo.Client) (*kgo.Client, error) {
	opts := cl.Opts()
	cl.Close()
	return kgo.NewClient(opts...)
}

// TxnOpts are the options of a transactional client with id: its
// transactional id, and the watch on its log by which Transact knows a
// commit the client turned into an abort. They go after any other
// logger.
func TxnOpts(id string) []kgo.Opt {
	return []kgo.Opt{kgo.TransactionalID(id), kgo.WithLogger(new(endWatch))}
}

// abortNotice starts the message kgo logs, at info level, as it turns a
// commit into an abort (EndTransaction in kgo's txn.go).
const abortNotice = "no produce succeeded in this transaction"

// endWatch is the logger of one transactional client: it keeps nothing
// but a count of the commits the client turned into aborts.
type endWatch struct{ aborts atomic.Int64 }

// count is how many commits the client turned into aborts; 0 for a client
// not watched.
func (w *endWatch) count() int64 {
	if w == nil {
		return 0
	}
	return w.aborts.Load()
}

func (*endWatch) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (w *endWatch) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if strings.HasPrefix(msg, abortNotice) {
		w.aborts.Add(1)
	}
}

// RecordError is a record the client or the brokers refused to write.
type RecordError struct {
	Record *kgo.Record
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("write to topic %s (key %q): %v", e.Record.Topic, e.Record.Key, e.Err)
}

// Unwrap returns Err.
func (e *RecordError) Unwrap() error { return e.Err }

// maxRefusals bounds the refused records one transaction's error names: when
// the brokers are down every record fails alike, and the first say why.
const maxRefusals = 100

// refusals collects the refused records of one transaction.
type refusals struct {
	mu    sync.Mutex
	errs  []error
	count int
}

func (f *refusals) add(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count++
	if len(f.errs) < maxRefusals {
		f.errs = append(f.errs, &RecordError{Record: r, Err: err})
	}
}

func (f *refusals) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.count > len(f.errs) {
		return errors.Join(append(f.errs, fmt.Errorf("… and %d more records refused", f.count-len(f.errs)))...)
	}
	return errors.Join(f.errs...)
}

// RecordErrors lists the records err says were refused.
func RecordErrors(err error) []*RecordError {
	var out []*RecordError
	var walk func(error)
	walk = func(err error) {
		if re, ok := err.(*RecordError); ok {
			out = append(out, re)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// RecordFault reports whether err, the refusal of one record, is the
// record's own fault: the brokers would refuse that record however often it
// is sent (too large, invalid, against a policy, or naming a topic that
// does not exist or may not be written), while other records go through.
// Faults of the cluster (brokers down, leaders moving, not enough
// replicas, timeouts, a fenced or aborted transaction) are not: they pass,
// and the same record is taken once they do.
func RecordFault(err error) bool {
	for _, e := range []error{
		kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord,
		kerr.InvalidTimestamp, kerr.PolicyViolation, kerr.TopicAuthorizationFailed,
		kerr.InvalidTopicException, kerr.UnknownTopicOrPartition,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// TopicFault reports whether err, a record's own fault, is about its topic
// rather than its content: the topic does not exist, or this client may
// not write it. For a record of jobdrop's own topics that is the
// cluster's fault (a topic deleted, an ACL missing), not the record's.
func TopicFault(err error) bool {
	return errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.InvalidTopicException)
}

// ManualFor writes the records of the topics in manual to the partition
// each names, and those of every other topic by key, as Kafka's Java
// clients do.
func ManualFor(manual map[string]bool) kgo.Partitioner {
	return manualFor{manual: manual, other: kgo.StickyKeyPartitioner(nil)}
}

type manualFor struct {
	manual map[string]bool
	other  kgo.Partitioner
}

func (p manualFor) ForTopic(topic string) kgo.TopicPartitioner {
	if p.manual[topic] {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	return p.other.ForTopic(topic)
}
