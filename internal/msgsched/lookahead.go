package msgsched

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
)

// A schedule topic read from behind (the first start on a topic another
// scheduler used, a restart after a downtime, a burst) may hold, further
// on, a later version of a schedule or its tombstone: the one the other
// scheduler wrote when it fired it. Taken one poll at a time, the first
// version would become a task and fire before the later record is read.
// So while a partition is behind and a record fetched is due already, the
// bridge looks ahead once to the partition's end and skips every record a
// later one of the same key replaces, as compaction would have: the latest
// version wins, at once. Among the records of one poll it always does.

// lookahead is what one look ahead found of one partition: the offset of
// the last record of each key, up to (not including) upTo.
type lookahead struct {
	upTo   int64
	latest map[string]int64
}

// superseded reports whether rec is replaced by a later record of its key
// that the look ahead saw. The tombstones jobdrop writes itself, once it
// fired or dropped a version, replace nothing: a version written after
// the one fired is a schedule of its own.
func (la *lookahead) superseded(rec *kgo.Record) bool {
	if la == nil || rec.Offset >= la.upTo {
		return false
	}
	last, ok := la.latest[string(rec.Key)]
	return ok && last > rec.Offset
}

type topicPartition struct {
	topic     string
	partition int32
}

// lookAhead notes, for each partition of fetches, the last offset of each
// key among the records fetched and, when the fetch did not reach the
// partition's end, among those after them up to it (one look serves the
// polls it covers).
func (b *Bridge) lookAhead(ctx context.Context, fetches kgo.Fetches) {
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		tp := topicPartition{p.Topic, p.Partition}
		last := p.Records[len(p.Records)-1].Offset
		end := p.LastStableOffset
		if end <= 0 {
			end = p.HighWatermark
		}
		la := b.ahead[tp]
		if la != nil && la.upTo <= last {
			la = nil // an earlier look, which these records outrun
		}
		switch {
		case last+1 >= end:
			la = &lookahead{upTo: last + 1, latest: map[string]int64{}} // caught up
		case la == nil && b.anyDue(p.Records):
			var err error
			if la, err = b.scan(ctx, tp, last+1, end); err != nil {
				// Without it, records are taken as they come, as if the
				// topic held no later versions.
				b.cfg.Log.Warn("schedule topics: cannot look ahead", "topic", tp.topic, "partition", tp.partition, "err", err)
				la = &lookahead{upTo: last + 1, latest: map[string]int64{}}
			}
		}
		if la == nil {
			la = &lookahead{upTo: last + 1, latest: map[string]int64{}}
		}
		for _, r := range p.Records {
			if !ownTombstone(r) && r.Offset > la.latest[string(r.Key)] && r.Offset < la.upTo {
				la.latest[string(r.Key)] = r.Offset
			}
		}
		b.ahead[tp] = la
	})
}

// anyDue reports whether a record of recs is a schedule due already: one
// that would fire at once, before the records after it are read. Those of
// later schedules are read in time to replace them.
func (b *Bridge) anyDue(recs []*kgo.Record) bool {
	now := b.cfg.Clock.Now().Unix()
	for _, r := range recs {
		if v := header(r, record.HeaderScheduleEpoch); v != nil {
			if secs, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64); err == nil && secs <= now {
				return true
			}
		}
	}
	return false
}

// scanIdle ends a look ahead that waits this long for more records: the
// offsets left before its end are transaction markers, and the look
// covers what it read. scanFirst bounds the wait for its first records.
const (
	scanIdle  = time.Second
	scanFirst = 30 * time.Second
)

// scan reads partition tp from offset from up to end, committed records
// only, and notes the last offset of each key.
func (b *Bridge) scan(ctx context.Context, tp topicPartition, from, end int64) (*lookahead, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tp.topic: {tp.partition: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers too: they take offsets up to the end.
		kgo.KeepControlRecords(),
	}, b.cfg.ClientOpts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	la := &lookahead{upTo: from, latest: map[string]int64{}}
	for {
		wait := scanIdle
		if la.upTo == from {
			wait = scanFirst // connecting, and the first fetch
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		fetches := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				return nil, fe.Err
			}
			if la.upTo == from {
				return nil, errors.New("no record read ahead in " + wait.String())
			}
			// Nothing more for a while: what was read is all the look
			// covers.
			return la, nil
		}
		reached := false
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end {
				reached = true
				return
			}
			la.upTo = r.Offset + 1
			if !r.Attrs.IsControl() && !ownTombstone(r) {
				la.latest[string(r.Key)] = r.Offset
			}
		})
		if reached || la.upTo >= end {
			la.upTo = end
			return la, nil
		}
	}
}
