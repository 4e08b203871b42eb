package injector

import (
	"fmt"
	"hash/maphash"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/record"
)

// RowCheck holds the checks of a file's rows that no converter can make
// alone: a task key appears once per file, and no task fires into
// jobdrop's own topics. The injector applies them before anything is
// produced, and the dry runs (`jobdrop convert`, the console's upload
// preview) apply the same, so that a dry run passes only what a drop
// would inject.
type RowCheck struct {
	file   string
	topics record.Topics
	seed   maphash.Seed
	first  map[uint64]int
}

// NewRowCheck starts the checks of the rows of file.
func NewRowCheck(file string, topics record.Topics) *RowCheck {
	return &RowCheck{file: file, topics: topics, seed: maphash.MakeSeed(), first: map[uint64]int{}}
}

// Check returns the row's problem as a *converters.RowError, or nil. Call
// it once per valid row (r.Err nil), in file order.
func (c *RowCheck) Check(r converters.Row) error {
	if err := c.topics.CheckTarget(r.Def.Topic); err != nil {
		return &converters.RowError{File: c.file, Row: r.Line, Column: "topic", Value: r.Def.Topic, Err: err}
	}
	h := maphash.String(c.seed, r.Def.Key())
	if prev, dup := c.first[h]; dup {
		return &converters.RowError{File: c.file, Row: r.Line, Column: "name", Value: r.Def.Name,
			Err: fmt.Errorf("task %s appears again (first at row %d); each task may appear once per file", r.Def.Key(), prev)}
	}
	c.first[h] = r.Line
	return nil
}
