package scheduler

import (
	"bytes"
	"container/heap"
	"hash/maphash"
	"slices"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// table holds one runner's tasks and the order they fire in. A task costs
// about a hundred bytes of memory: a slot of plain numbers, found by the
// hash of its key; what many tasks share (the shape of their definition,
// the file they came from) is kept once, counted; the task's key and data
// are written to the spill file and read back only to fire the task or to
// write its state. The slots hold no pointers, so the collector never
// scans them. A table is used by one goroutine.
type table struct {
	chunks [][]slot         // slot i is chunks[i/chunkSlots][i%chunkSlots]
	free   []int32          // empty slots, reused first
	byHash map[uint32]int32 // key hash → first slot with that hash
	hash   func(key string) uint32
	order  fireOrder // slots with a next fire, soonest first

	shapes  interner[shapeKey, *task.Definition]
	sources interner[source, source]

	spill *spill
	buf   []byte // scratch for what is read back from spill
	// recent, while one transaction is built (see remember), holds the
	// blobs read back, by offset in the spill: finding, firing and
	// writing the state of a task read the same blob up to three times.
	// Their bytes are in recentBytes, taken back at the next remember.
	recent      map[int64][]byte
	recentBytes slab[byte]
	remembering bool
	stack       []int32 // dueAt's scratch
	n           int     // tasks held
	size        int32   // slots ever used: free ones included

	// faults holds the tasks whose fire the brokers refused, by slot:
	// few, so kept beside the slots rather than in each. paused counts
	// those the fault policy paused.
	faults map[int32]record.Fault
	paused int
	// chains holds where the chained tasks stand with their
	// predecessors, by slot: few tasks are chained.
	chains map[int32]*record.Chain
}

// chunkSlots is how many slots are allocated at once: growing by chunks
// wastes at most one chunk, where doubling a slice wastes up to half.
const chunkSlots = 4096

// slot is one task, in 72 bytes. Its key and data are a blob in the spill:
// the key's keyLen bytes, then the data as JSON (none when the blob is the
// key). Keys are at most 2·task.MaxNameLen+1 bytes long.
type slot struct {
	anchor    int64 // also the definition's Start, when hasStart
	nextFire  int64 // 0: not scheduled (paused)
	lastFire  int64
	fireCount int64
	off       int64 // of the blob in the spill
	n         int32 // blob length
	row       int32
	shape     int32 // in table.shapes; -1: the slot is empty
	src       int32 // in table.sources
	heapAt    int32 // position in table.order; -1: not scheduled
	sameHash  int32 // next slot whose key has the same hash; -1: none
	keyLen    uint16
	hasStart  bool
	avro      bool // fires Avro events: record.State.Format
}

func (s *slot) blob() spillRef { return spillRef{off: s.off, n: s.n} }

// source is where tasks came from, less the row: shared by a file's tasks.
type source struct {
	batch, file, folder, actor string
}

func newTable(sp *spill) *table {
	seed := maphash.MakeSeed()
	t := &table{byHash: map[uint32]int32{}, spill: sp, faults: map[int32]record.Fault{}, chains: map[int32]*record.Chain{},
		hash: func(key string) uint32 { return uint32(maphash.String(seed, key)) }}
	t.order.t = t
	t.shapes.init()
	t.sources.init()
	return t
}

// at is slot i.
func (t *table) at(i int32) *slot { return &t.chunks[i/chunkSlots][i%chunkSlots] }

// read loads the key and data of slot i. Both are valid until the next
// read, or until forget while remembering; data is nil when the task has
// none. Neither may be written to.
func (t *table) read(i int32) (key, data []byte, err error) {
	s := t.at(i)
	blob, cached := t.recent[s.off]
	if !cached || len(blob) != int(s.n) {
		if t.remembering {
			blob, err = t.spill.get(t.recentBytes.take(int(s.n)), s.blob())
			t.recent[s.off] = blob
		} else {
			t.buf, err = t.spill.get(t.buf[:0], s.blob())
			blob = t.buf
		}
		if err != nil {
			return nil, nil, err
		}
	}
	key, data = blob[:s.keyLen], blob[s.keyLen:]
	if len(data) == 0 {
		data = nil
	}
	return key, data, nil
}

// remember keeps what read loads until forget, for the transaction being
// built: its reads are bounded by the transaction's size, where a
// restore reads without bound.
func (t *table) remember() {
	if t.recent == nil {
		t.recent = map[int64][]byte{}
	}
	t.recentBytes.reset()
	t.remembering = true
}

// keep returns data, read from the table, to hold past the next read:
// as it is while remembering, else a copy.
func (t *table) keep(data []byte) []byte {
	if t.remembering {
		return data
	}
	return bytes.Clone(data)
}

// forget ends remember; it comes before the spill may be rebuilt, which
// moves every blob.
func (t *table) forget() {
	clear(t.recent)
	t.remembering = false
}

// find returns the slot of the task with key.
func (t *table) find(key string) (int32, bool, error) {
	i, ok := t.byHash[t.hash(key)]
	for ok && i >= 0 {
		k, _, err := t.read(i)
		if err != nil {
			return -1, false, err
		}
		if string(k) == key {
			return i, true, nil
		}
		i = t.at(i).sameHash
	}
	return -1, false, nil
}

// set stores a task: its definition (whose Data is ignored), its state
// numbers, source and fault (st), and its data as JSON. A task with the
// same key is replaced in its slot, keeping its place in the fire order.
func (t *table) set(key string, d *task.Definition, st *record.State, data []byte) (int32, error) {
	i, exists, err := t.find(key)
	if err != nil {
		return -1, err
	}
	t.buf = append(append(t.buf[:0], key...), data...)
	ref, err := t.spill.put(t.buf)
	if err != nil {
		return -1, err
	}
	if exists {
		old := t.at(i)
		t.spill.free(old.blob())
		t.shapes.release(old.shape)
		t.sources.release(old.src)
	} else {
		i = t.alloc()
		h := t.hash(key)
		first, ok := t.byHash[h]
		if !ok {
			first = -1
		}
		t.at(i).sameHash, t.at(i).heapAt = first, -1
		t.byHash[h] = i
		t.n++
	}
	s := t.at(i)
	s.anchor, s.nextFire, s.lastFire, s.fireCount = st.Anchor, st.NextFire, st.LastFire, st.FireCount
	s.off, s.n, s.keyLen, s.row = ref.off, ref.n, uint16(len(key)), int32(st.Source.Row)
	// A task with a start is anchored at it (task.Definition.Anchor).
	s.hasStart = d.Start != nil && *d.Start == st.Anchor
	s.avro = st.Format == record.FormatAvro
	s.shape = t.shapes.add(keyOf(d), func() *task.Definition {
		shape := *d
		shape.Name, shape.Start, shape.Data = "", nil, nil
		return &shape
	})
	src := source{batch: st.Source.Batch, file: st.Source.File, folder: st.Source.Folder, actor: st.Source.Actor}
	s.src = t.sources.add(src, func() source { return src })
	t.setFault(i, st.Fault)
	t.setChain(i, st.Chain)
	return i, nil
}

// chain is where the chained task of slot i stands; nil for a task that
// follows none, or none has released yet.
func (t *table) chain(i int32) *record.Chain { return t.chains[i] }

// setChain records the chain of slot i; nil clears it.
func (t *table) setChain(i int32, ch *record.Chain) {
	if ch == nil {
		delete(t.chains, i)
		return
	}
	t.chains[i] = ch
}

// fault is the refused occurrence of slot i, if any.
func (t *table) fault(i int32) (record.Fault, bool) {
	f, ok := t.faults[i]
	return f, ok
}

// setFault records the refused occurrence of slot i; nil clears it.
func (t *table) setFault(i int32, f *record.Fault) {
	if old, ok := t.faults[i]; ok {
		if old.Paused {
			t.paused--
		}
		delete(t.faults, i)
	}
	if f != nil {
		t.faults[i] = *f
		if f.Paused {
			t.paused++
		}
	}
}

func (t *table) alloc() int32 {
	if n := len(t.free); n > 0 {
		i := t.free[n-1]
		t.free = t.free[:n-1]
		return i
	}
	i := t.size
	if int(i)/chunkSlots == len(t.chunks) {
		t.chunks = append(t.chunks, make([]slot, chunkSlots))
	}
	t.size++
	return i
}

// remove empties slot i, whose task has key. What was read of it before
// (its shape, source and blob) stays valid until the spill is rebuilt.
func (t *table) remove(i int32, key string) {
	t.unschedule(i)
	h := t.hash(key)
	s := t.at(i)
	if first := t.byHash[h]; first == i {
		if s.sameHash >= 0 {
			t.byHash[h] = s.sameHash
		} else {
			delete(t.byHash, h)
		}
	} else {
		for p := first; p >= 0; p = t.at(p).sameHash {
			if t.at(p).sameHash == i {
				t.at(p).sameHash = s.sameHash
				break
			}
		}
	}
	t.spill.free(s.blob())
	t.shapes.release(s.shape)
	t.sources.release(s.src)
	t.setFault(i, nil)
	t.setChain(i, nil)
	*s = slot{shape: -1, heapAt: -1, sameHash: -1}
	t.free = append(t.free, i)
	t.n--
}

// shape is the definition slot i shares with tasks like it: no name,
// start or data.
func (t *table) shape(i int32) *task.Definition { return t.shapes.get(t.at(i).shape) }

// source is where the task of slot i came from.
func (t *table) source(i int32) source { return t.sources.get(t.at(i).src) }

// definition is the whole definition of slot i, whose task has key, less
// its data.
func (t *table) definition(i int32, key string) task.Definition {
	s := t.at(i)
	d := *t.shape(i)
	d.Name = key[len(d.Host)+1:]
	if s.hasStart {
		d.Start = task.Ptr(s.anchor)
	}
	return d
}

// state is the state record of slot i, whose task has key, less its
// definition's data, as written at now.
func (t *table) state(i int32, key string, now int64) record.State {
	s := t.at(i)
	src := t.source(i)
	st := record.State{
		Definition: t.definition(i, key),
		Anchor:     s.anchor, NextFire: s.nextFire, FireCount: s.fireCount, LastFire: s.lastFire,
		Source:    record.Source{Batch: src.batch, File: src.file, Folder: src.folder, Actor: src.actor, Row: int(s.row)},
		UpdatedAt: now,
	}
	if f, ok := t.faults[i]; ok {
		st.Fault = &f
	}
	if ch, ok := t.chains[i]; ok {
		c := *ch
		c.Preds = slices.Clone(ch.Preds)
		st.Chain = &c
	}
	if s.avro {
		st.Format = record.FormatAvro
	}
	return st
}

// compact rewrites the spill when most of it is garbage.
func (t *table) compact() error {
	if !t.spill.wasteful() {
		return nil
	}
	return t.spill.rebuild(func(yield func(*spillRef) bool) {
		for i := range t.size {
			s := t.at(i)
			if s.shape < 0 {
				continue
			}
			ref := s.blob()
			ok := yield(&ref)
			s.off, s.n = ref.off, ref.n
			if !ok {
				return
			}
		}
	})
}

// schedule puts slot i in the fire order at its nextFire, or moves it there.
func (t *table) schedule(i int32) {
	if at := t.at(i).heapAt; at >= 0 {
		heap.Fix(&t.order, int(at))
		return
	}
	heap.Push(&t.order, i)
}

// unschedule takes slot i out of the fire order.
func (t *table) unschedule(i int32) {
	if at := t.at(i).heapAt; at >= 0 {
		heap.Remove(&t.order, int(at))
	}
}

// scheduleAll orders every task with a next fire at once, after a restore.
func (t *table) scheduleAll() {
	t.order.slots = t.order.slots[:0]
	for i := range t.size {
		if s := t.at(i); s.shape >= 0 && s.nextFire > 0 {
			s.heapAt = int32(len(t.order.slots))
			t.order.slots = append(t.order.slots, i)
		}
	}
	heap.Init(&t.order)
}

// next is the slot that fires first and when, if any.
func (t *table) next() (int32, int64, bool) {
	if len(t.order.slots) == 0 {
		return -1, 0, false
	}
	i := t.order.slots[0]
	return i, t.at(i).nextFire, true
}

// dueAt counts the tasks due at at, up to limit, at being the earliest
// next fire: they are the top of the fire order, whose nodes due later
// hold none due at at below them.
func (t *table) dueAt(at int64, limit int) int {
	h := t.order.slots
	n := 0
	stack := append(t.stack[:0], 0)
	for len(stack) > 0 && n < limit {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if int(k) >= len(h) || t.at(h[k]).nextFire != at {
			continue
		}
		n++
		stack = append(stack, 2*k+1, 2*k+2)
	}
	t.stack = stack[:0]
	return n
}

// fireOrder is a min-heap of slots by next fire time, then slot.
type fireOrder struct {
	t     *table
	slots []int32
}

func (h *fireOrder) Len() int { return len(h.slots) }
func (h *fireOrder) Less(a, b int) bool {
	i, j := h.slots[a], h.slots[b]
	if x, y := h.t.at(i).nextFire, h.t.at(j).nextFire; x != y {
		return x < y
	}
	return i < j
}
func (h *fireOrder) Swap(a, b int) {
	h.slots[a], h.slots[b] = h.slots[b], h.slots[a]
	h.t.at(h.slots[a]).heapAt, h.t.at(h.slots[b]).heapAt = int32(a), int32(b)
}
func (h *fireOrder) Push(x any) {
	i := x.(int32)
	h.t.at(i).heapAt = int32(len(h.slots))
	h.slots = append(h.slots, i)
}
func (h *fireOrder) Pop() any {
	n := len(h.slots) - 1
	i := h.slots[n]
	h.slots = h.slots[:n]
	h.t.at(i).heapAt = -1
	return i
}
