package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// cutTxn is a transaction that a stop of the broker cut off: its records
// are in a partition, and no marker ends it.
type cutTxn struct {
	topic      string
	partition  int32
	producerID int64
	epoch      int16
	first      int64 // offset of its first record
}

// repairCutTransactions ends with an abort marker every transaction that an
// unclean stop of the embedded broker left without one.
//
// When the broker comes back it treats such a transaction as aborted, and
// tells consumers so, but writes no abort marker. A read_committed consumer
// (kgo, librdkafka, the Java client alike) skips a producer's records from
// the aborted transaction's first offset until it reads that producer's
// abort marker: with none, it also skips the records the same producer
// commits after the restart, whenever they come in the same fetch. Every
// transactional producer of jobdrop keeps its producer id across restarts,
// so the next file or fire after such a stop would be invisible to part of
// its readers, the engine's restore included. Writing the missing markers
// at the end of each partition, before any client writes, ends the aborted
// transactions where a consumer expects it.
//
// It reads every partition's batch headers once, so it runs only after a
// stop that was not clean.
func repairCutTransactions(ctx context.Context, cl *kgo.Client) ([]cutTxn, error) {
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	var cut []cutTxn
	for _, t := range meta.Topics {
		if t.Topic == nil {
			continue
		}
		for _, p := range t.Partitions {
			c, err := cutInPartition(ctx, cl, *t.Topic, p.Partition)
			if err != nil {
				return cut, fmt.Errorf("read %s/%d: %w", *t.Topic, p.Partition, err)
			}
			cut = append(cut, c...)
		}
	}
	for _, c := range cut {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = c.producerID, c.epoch, false
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = c.topic, []int32{c.partition}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			for _, rm := range resp.Markers {
				for _, rt := range rm.Topics {
					for _, rp := range rt.Partitions {
						if rp.ErrorCode != 0 {
							err = fmt.Errorf("error code %d", rp.ErrorCode)
						}
					}
				}
			}
		}
		if err != nil {
			return cut, fmt.Errorf("end transaction of producer %d in %s/%d: %w", c.producerID, c.topic, c.partition, err)
		}
	}
	return cut, nil
}

// cutInPartition reads a partition's batches, read_committed, and returns
// the aborted transactions the broker reports that no abort marker ends.
func cutInPartition(ctx context.Context, cl *kgo.Client, topic string, partition int32) ([]cutTxn, error) {
	open := map[int64][]int64{} // producer → first offsets of aborted transactions not ended yet
	epochs := map[int64]int16{}
	var offset int64
	for {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.IsolationLevel = -1, 0, 16<<20, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset = partition, offset, 16<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return nil, fmt.Errorf("fetch answered %d topics", len(resp.Topics))
		}
		p := resp.Topics[0].Partitions[0]
		switch {
		case p.ErrorCode == 1 && offset < p.LogStartOffset: // offset out of range: below the log start
			offset = p.LogStartOffset
			continue
		case p.ErrorCode != 0:
			return nil, fmt.Errorf("fetch error code %d", p.ErrorCode)
		}
		for _, a := range p.AbortedTransactions {
			if !slices.Contains(open[a.ProducerID], a.FirstOffset) {
				open[a.ProducerID] = append(open[a.ProducerID], a.FirstOffset)
				slices.Sort(open[a.ProducerID])
			}
		}
		before := offset
		for raw := p.RecordBatches; len(raw) >= 12; {
			size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
			if size > len(raw) {
				break // cut by the fetch size: read again from here
			}
			var b kmsg.RecordBatch
			if err := b.ReadFrom(raw[:size]); err != nil {
				return nil, fmt.Errorf("batch at %d: %w", offset, err)
			}
			raw = raw[size:]
			offset = b.FirstOffset + int64(b.LastOffsetDelta) + 1
			if b.ProducerID >= 0 {
				epochs[b.ProducerID] = b.ProducerEpoch
			}
			if b.Attributes&0x20 != 0 && isAbortMarker(b.Records) {
				// An abort marker ends the producer's oldest aborted
				// transaction that began before it.
				if fs := open[b.ProducerID]; len(fs) > 0 && fs[0] < b.FirstOffset {
					open[b.ProducerID] = fs[1:]
				}
			}
		}
		if offset == before || offset >= p.HighWatermark {
			break
		}
	}
	var cut []cutTxn
	for pid, firsts := range open {
		for _, f := range firsts {
			cut = append(cut, cutTxn{topic: topic, partition: partition, producerID: pid, epoch: epochs[pid], first: f})
		}
	}
	return cut, nil
}

// isAbortMarker reads a control batch's record: its key is a version and a
// type, 0 for abort.
func isAbortMarker(records []byte) bool {
	var r kmsg.Record
	if err := r.ReadFrom(records); err != nil || len(r.Key) < 4 {
		return false
	}
	return binary.BigEndian.Uint16(r.Key[2:4]) == 0
}

// repairVersions pins requests to versions that name topics, which the
// repair's raw fetches do.
var repairVersions = kgo.MaxVersions(kversion.V2_8_0())
