package scheduler

import (
	"container/heap"
	"encoding/json"

	"github.com/jobdrop/jobdrop/internal/record"
)

// entry is one task held by a runner.
type entry struct {
	key   string
	st    record.State    // st.Definition.Data is always nil: see data
	data  json.RawMessage // the definition's data, as JSON; nil for none
	index int             // position in the fire heap; -1 when not scheduled
}

// fireHeap orders tasks by next fire time.
type fireHeap []*entry

func (h fireHeap) Len() int { return len(h) }
func (h fireHeap) Less(i, j int) bool {
	if h[i].st.NextFire != h[j].st.NextFire {
		return h[i].st.NextFire < h[j].st.NextFire
	}
	return h[i].key < h[j].key
}
func (h fireHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *fireHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *fireHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}

// schedule puts e in the heap at its NextFire, or moves it there.
func (h *fireHeap) schedule(e *entry) {
	if e.index >= 0 {
		heap.Fix(h, e.index)
		return
	}
	heap.Push(h, e)
}

// unschedule takes e out of the heap.
func (h *fireHeap) unschedule(e *entry) {
	if e.index >= 0 {
		heap.Remove(h, e.index)
	}
}
