package injector

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// RowCheck holds the checks of a file's rows that no converter can make
// alone: a task key appears once per file, no task fires into jobdrop's
// own topics, and no task is larger than the brokers take. The injector applies them before anything is
// produced, and the dry runs (`jobdrop convert`, the console's upload
// preview) apply the same, so that a dry run passes only what a drop
// would inject.
type RowCheck struct {
	file   string
	topics record.Topics
	limit  kafka.RecordLimit
	seed   maphash.Seed
	first  keySet
	// touched keeps what touch read, so that the reads are made.
	touched uint64
	// largest is the size, as check reckons it, of the largest task
	// checked: the producer's batches must take it (largeBatches).
	largest int
}

// NewRowCheck starts the checks of the rows of file, against the record
// limit of jobdrop's producers (WithLimit sets the brokers' own).
func NewRowCheck(file string, topics record.Topics) *RowCheck {
	return &RowCheck{file: file, topics: topics, limit: kafka.DefaultRecordLimit, seed: maphash.MakeSeed()}
}

// WithLimit makes Check refuse a task whose records would be over limit.
func (c *RowCheck) WithLimit(limit kafka.RecordLimit) *RowCheck {
	c.limit = limit
	return c
}

// recordExtra is what a task's largest record, its state, holds besides
// its definition, key and file name: the anchor, next fire, counts and
// source, plus the record's framing in its batch.
const recordExtra = 400

// Check returns the row's problem as a *converters.RowError, or nil. Call
// it once per valid row (r.Err nil), in file order.
func (c *RowCheck) Check(r converters.Row) error {
	key := []byte(r.Def.Key())
	return c.check(&r, key, c.hash(key), appendDefinition(nil, &r.Def))
}

// hash is the hash of a task key the check of its row takes.
func (c *RowCheck) hash(key []byte) uint64 { return maphash.Bytes(c.seed, key) }

// hashAll sets hashes[i] to the hash of keys[i], where not nil, and reads
// the first slot of each in the set of keys seen, so that checking the
// rows after it rarely waits for memory.
func (c *RowCheck) hashAll(keys [][]byte, hashes []uint64) {
	for i, k := range keys {
		if k != nil {
			hashes[i] = c.hash(k)
			c.touched ^= c.first.touch(hashes[i])
		}
	}
}

// check is Check of a row whose command has key, of hash h, and value
// (the JSON of its definition).
func (c *RowCheck) check(r *converters.Row, key []byte, h uint64, value []byte) error {
	if r.Def.Message != nil {
		return &converters.RowError{File: c.file, Row: r.Line, Column: "message", Err: task.ErrMessageFromSchedules}
	}
	if err := c.topics.CheckTarget(r.Def.Topic); err != nil {
		return &converters.RowError{File: c.file, Row: r.Line, Column: "topic", Value: r.Def.Topic, Err: err}
	}
	size := len(value) + len(key) + len(c.file) + recordExtra
	if size > c.limit.Bytes {
		column := ""
		if d, _ := json.Marshal(r.Def.Data); len(d) > len(value)/2 {
			column = "data"
		}
		return &converters.RowError{File: c.file, Row: r.Line, Column: column,
			Err: fmt.Errorf("task %s would be a record of %d bytes, over the %d bytes a record may have (%s)",
				key, size, c.limit.Bytes, c.limit.Source)}
	}
	c.largest = max(c.largest, size)
	if prev, dup := c.first.add(h, r.Line); dup {
		return &converters.RowError{File: c.file, Row: r.Line, Column: "name", Value: r.Def.Name,
			Err: fmt.Errorf("task %s appears again (first at row %d); each task may appear once per file", key, prev)}
	}
	return nil
}

// keySet is the set of the hashes of the task keys of a file, each with
// the row it was first seen at: open addressing, so that looking a key up
// costs about one cache miss in a set of millions (see touch), in 12 bytes
// a slot.
type keySet struct {
	hashes []uint64 // 0: an empty slot
	rows   []int32
	n      int
}

// add records hash h at row, or returns the row it was first recorded at.
func (s *keySet) add(h uint64, row int) (first int, dup bool) {
	if h == 0 {
		h = 1
	}
	if 4*(s.n+1) > 3*len(s.hashes) {
		s.grow()
	}
	mask := uint64(len(s.hashes) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.hashes[i] {
		case h:
			return int(s.rows[i]), true
		case 0:
			s.hashes[i], s.rows[i] = h, int32(min(row, math.MaxInt32))
			s.n++
			return 0, false
		}
	}
}

// touch reads the slot where hash h would be, so that the add of a run of
// hashes after their touches finds them in cache: the touches miss it
// together, where the adds would miss it one after another. It returns
// what it read for the caller to keep.
func (s *keySet) touch(h uint64) uint64 {
	if len(s.hashes) == 0 {
		return 0
	}
	return s.hashes[max(h, 1)&uint64(len(s.hashes)-1)]
}

// get returns the row hash h was first recorded at.
func (s *keySet) get(h uint64) (row int, ok bool) {
	if h == 0 {
		h = 1
	}
	if len(s.hashes) == 0 {
		return 0, false
	}
	mask := uint64(len(s.hashes) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.hashes[i] {
		case h:
			return int(s.rows[i]), true
		case 0:
			return 0, false
		}
	}
}

func (s *keySet) grow() {
	hashes, rows := s.hashes, s.rows
	size := max(1024, 2*len(hashes))
	s.hashes, s.rows = make([]uint64, size), make([]int32, size)
	mask := uint64(size - 1)
	for j, h := range hashes {
		if h == 0 {
			continue
		}
		i := h & mask
		for s.hashes[i] != 0 {
			i = (i + 1) & mask
		}
		s.hashes[i], s.rows[i] = h, rows[j]
	}
}
