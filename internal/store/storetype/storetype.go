package storetype

import "errors"

// ErrNotFound is returned by the queries that look up one row by its id
// when there is no such row.
var ErrNotFound = errors.New("not found")

// ErrBadCursor is returned by a list for a cursor that is not one of its
// own pages', in the order asked for.
var ErrBadCursor = errors.New("cursor: not from this list and order; start again from the first page")

// ErrBadFilter is returned by a list for a filter value no row can have,
// such as an unknown status or order.
var ErrBadFilter = errors.New("not a value of this list")

// Orders of the executions, files and audit lists.
const (
	SortNewest = "newest"
	SortOldest = "oldest"
)

// Page is one page of a list: its rows, how many rows the filter selects
// in all, where the page starts among them, and the cursors of the pages
// around it.
type Page[T any] struct {
	Rows []T
	// Total counts every row the filter selects, on every page.
	Total int
	// Offset is the place of the page's first row among them, from 0,
	// as of when its cursor was made.
	Offset int
	// Next and Prev are the cursors of the next and previous pages; empty
	// at the end and at the start.
	Next, Prev string
}
