package scheduler

import (
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

// arena holds the records a runner writes in one transaction, and their
// bytes, in blocks taken back once the transaction is over and handed out
// again for the next. A burst of fires writes three records of some
// hundred bytes each per fire: made one by one, they would leave the
// collector gigabytes a minute, and every collection also empties the
// client's pool of request buffers, which then grow again from a kilobyte
// for each produce request.
//
// Nothing handed out may be kept past the transaction: the client is done
// with a transaction's records when Transact returns, and reset comes
// before the next transaction is built. An arena is used by its runner's
// goroutine alone.
type arena struct {
	bytes   slab[byte]
	records slab[kgo.Record]
	headers slab[kgo.RecordHeader]
	// now is the timestamp of the records handed out, and of every other
	// record of the transaction (runner.stamp): when reset began it, or
	// the due time of a transaction written ahead. The client would read
	// the clock for each record left without one, three times per fire.
	now time.Time
}

func (a *arena) reset() {
	a.bytes.reset()
	a.records.reset()
	a.headers.reset()
	a.now = time.Now()
}

// copy returns s in the arena.
func (a *arena) copy(s string) []byte {
	return append(a.bytes.take(len(s)), s...)
}

// record returns an empty record, stamped with the arena's time.
func (a *arena) record() *kgo.Record {
	return &append(a.records.take(1), kgo.Record{Timestamp: a.now})[0]
}

// slab hands out room for values of T from blocks it keeps.
type slab[T any] struct {
	blocks [][]T // blocks[at] is being filled; those after it wait
	at     int
}

// slabBlock is the size of a block, in bytes: the values of one
// transaction fill a few blocks.
const slabBlock = 256 << 10

// take returns an empty slice with room for n values. Appending more
// than n leaves the slab for the heap, as any append does; so does a
// take of more than a quarter block.
func (s *slab[T]) take(n int) []T {
	var v T
	per := slabBlock / int(unsafe.Sizeof(v))
	if n > per/4 {
		return make([]T, 0, n)
	}
	for {
		if s.at == len(s.blocks) {
			s.blocks = append(s.blocks, make([]T, 0, per))
		}
		b := s.blocks[s.at]
		if l := len(b); cap(b)-l >= n {
			s.blocks[s.at] = b[:l+n]
			return b[l : l : l+n]
		}
		s.at++
	}
}

// slabKeep is how many blocks a slab keeps once reset: those of a
// transaction of a thousand fires. The many more a burst written ahead
// takes (see ahead.go) go back to the heap after it.
const slabKeep = 8

// reset takes back everything handed out.
func (s *slab[T]) reset() {
	_, plain := any(s.blocks).([][]byte)
	for i := range s.blocks[:min(s.at+1, len(s.blocks))] {
		if !plain {
			clear(s.blocks[i]) // what the values point to may go
		}
		s.blocks[i] = s.blocks[i][:0]
	}
	if len(s.blocks) > slabKeep {
		clear(s.blocks[slabKeep:])
		s.blocks = s.blocks[:slabKeep]
	}
	s.at = 0
}
