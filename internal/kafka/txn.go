package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
// commit when the client can still abort. beforeCommit, if not nil, runs
// once everything is written and before the commit.
//
// The commit is never cancelled by ctx: an interrupted EndTransaction
// would leave its outcome unknown.
func Transact(ctx context.Context, cl *kgo.Client, fill func(produce func(*kgo.Record)) error, beforeCommit func() error) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	var (
		mu      sync.Mutex
		prodErr error
	)
	produce := func(r *kgo.Record) {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				prodErr = errors.Join(prodErr, err)
				mu.Unlock()
			}
		})
	}
	err := fill(produce)
	if ferr := cl.Flush(ctx); err == nil {
		err = ferr
	}
	mu.Lock()
	if err == nil {
		err = prodErr
	}
	mu.Unlock()
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
	return nil
}
