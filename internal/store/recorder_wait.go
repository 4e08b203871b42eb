package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// notify wakes everyone waiting for a commit.
func (r *Recorder) notify() {
	r.mu.Lock()
	close(r.applied)
	r.applied = make(chan struct{})
	r.mu.Unlock()
}

// Applied returns a channel closed after the next commit of recorded
// records: a reader that wants to hear of every change takes a new channel
// each time the previous one closes.
func (r *Recorder) Applied() <-chan struct{} { return r.appliedChan() }

func (r *Recorder) appliedChan() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

// WaitAudit returns once the audit event with this id is stored and so is
// every audit record committed, on any partition, before WaitAudit was
// called: a node that writes a "node started" event and waits for it has
// then seen every file event committed before it started. It returns ctx's
// error when ctx is done first, and ErrRecorderStopped when Run returns
// first.
func (r *Recorder) WaitAudit(ctx context.Context, id string) error {
	all, err := r.endOffsets(ctx, r.cfg.Topics.Audit)
	if err != nil {
		return fmt.Errorf("wait for audit %s: %w", id, err)
	}
	ends := all[r.cfg.Topics.Audit]
	for {
		// Take the channel before looking, so a commit between the look
		// and the wait is not missed.
		applied := r.appliedChan()
		ok, err := r.auditCaughtUp(ctx, id, ends)
		if err != nil {
			return fmt.Errorf("wait for audit %s: %w", id, err)
		}
		if ok {
			return nil
		}
		select {
		case <-applied:
		case <-r.done:
			if ok, err := r.auditCaughtUp(ctx, id, ends); err == nil && ok {
				return nil
			}
			return fmt.Errorf("wait for audit %s: %w", id, ErrRecorderStopped)
		case <-ctx.Done():
			return fmt.Errorf("wait for audit %s: %w", id, ctx.Err())
		}
	}
}

// endOffsets asks the brokers for the last stable offset of every
// partition of topics: everything committed so far lies below it. Topics
// that do not exist, and partitions that hold no record, are left out.
func (r *Recorder) endOffsets(ctx context.Context, topics ...string) (map[string]map[int32]int64, error) {
	cl, err := kgo.NewClient(r.cfg.ClientOpts...)
	if err != nil {
		return nil, fmt.Errorf("new kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	listed, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %v: %w", topics, err)
	}
	// A partition whose records are all gone (retention deleted them, or
	// compaction) has nothing to read: its end is never reached by
	// reading, so it is left out.
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list start offsets of %v: %w", topics, err)
	}
	ends := make(map[string]map[int32]int64)
	var errs []error
	listed.Each(func(o kadm.ListedOffset) {
		switch {
		case o.Err == nil:
			if s, ok := starts.Lookup(o.Topic, o.Partition); ok && s.Err == nil && s.Offset >= o.Offset {
				return
			}
			if ends[o.Topic] == nil {
				ends[o.Topic] = make(map[int32]int64)
			}
			ends[o.Topic][o.Partition] = o.Offset
		case errors.Is(o.Err, kerr.UnknownTopicOrPartition):
		default:
			errs = append(errs, fmt.Errorf("%s partition %d: %w", o.Topic, o.Partition, o.Err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	return ends, nil
}

// auditCaughtUp reports whether the event is stored and every audit
// partition has been applied up to ends.
func (r *Recorder) auditCaughtUp(ctx context.Context, id string, ends map[int32]int64) (bool, error) {
	ok, err := r.st.AuditRecorded(ctx, id)
	if err != nil || !ok {
		return false, err
	}
	offsets, err := r.st.Offsets(ctx)
	if err != nil {
		return false, err
	}
	for p, end := range ends {
		if end > 0 && offsets[r.cfg.Topics.Audit][p] < end {
			return false, nil
		}
	}
	return true, nil
}
