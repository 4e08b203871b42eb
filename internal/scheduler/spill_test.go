package scheduler

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

func TestSpillReadsBackWhatItKeeps(t *testing.T) {
	s, err := openSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	want := map[int][]byte{}
	refs := map[int]*spillRef{}
	// Enough to cross the write buffer several times.
	for i := range 20_000 {
		b := []byte(fmt.Sprintf(`{"job":"%0200d"}`, i))
		ref, err := s.put(b)
		if err != nil {
			t.Fatal(err)
		}
		want[i], refs[i] = b, &ref
	}
	check := func(when string) {
		t.Helper()
		var buf []byte
		read := func(i int) {
			if buf, err = s.get(buf[:0], *refs[i]); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf, want[i]) {
				t.Fatalf("%s: data %d = %q, want %q", when, i, buf, want[i])
			}
		}
		// In no order, then in the order written (the reads that take
		// the file ahead of them), then backwards.
		for i := range refs {
			read(i)
		}
		for i := range 20_000 {
			if refs[i] != nil {
				read(i)
			}
		}
		for i := 19_999; i >= 0; i-- {
			if refs[i] != nil {
				read(i)
			}
		}
	}
	check("before rebuild")
	if empty, _ := s.put(nil); empty.n != 0 {
		t.Fatal("empty data takes room")
	}
	// Drop three tasks in four: the file is then mostly garbage.
	for i := range 20_000 {
		if i%4 != 0 {
			s.free(*refs[i])
			delete(refs, i)
		}
	}
	before := s.size()
	if err := s.rebuild(func(yield func(*spillRef) bool) {
		for _, ref := range refs {
			if !yield(ref) {
				return
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if s.size() != s.live || s.size() >= before/3 {
		t.Fatalf("rebuilt file holds %d bytes (live %d), was %d", s.size(), s.live, before)
	}
	check("after rebuild")
}

// TestShapeKeyCoversDefinition fails when task.Definition gains a field:
// shapeKey (heap.go) must then learn it, or tasks differing only in that
// field would share one shape.
func TestShapeKeyCoversDefinition(t *testing.T) {
	known := []string{"Host", "Name", "Action", "Frequency", "Topic", "Start", "Data", "Cron", "CronDialect", "Rrule", "Timezone",
		"End", "Window", "Misfire", "Active", "Timeout", "Message", "After", "On", "Delay", "Retry"}
	typ := reflect.TypeFor[task.Definition]()
	var fields []string
	for i := range typ.NumField() {
		fields = append(fields, typ.Field(i).Name)
	}
	if !reflect.DeepEqual(fields, known) {
		t.Fatalf("task.Definition fields = %v, shapeKey knows %v: update shapeKey and keyOf", fields, known)
	}
}

func TestTasksAlikeShareOneShape(t *testing.T) {
	tb := testTable(t)
	def := func(name string, every int32, days ...string) task.Definition {
		return task.Definition{Host: "acme", Name: name, Topic: "jobs", Start: task.Ptr(int64(len(name))),
			Frequency: &task.Frequency{TimeUnit: task.Minutes, Time: every},
			Window:    &task.Window{From: "08:00", To: "18:00", Days: days}}
	}
	a, b, c := def("a", 5, "MON"), def("bb", 5, "MON"), def("c", 5, "TUE")
	st := record.State{Source: record.Source{Batch: "b1", File: "jobs.csv", Row: 2}}
	set := func(d *task.Definition) int32 {
		st := st
		st.Anchor = d.Anchor(0)
		i, err := tb.set(d.Key(), d, &st, nil)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	ia, ib, ic := set(&a), set(&b), set(&c)
	if tb.shape(ia) != tb.shape(ib) || tb.shape(ia) == tb.shape(ic) {
		t.Fatal("tasks differing only in name and start must share a shape, and only they")
	}
	if tb.source(ia) != tb.source(ic) || tb.state(ib, b.Key(), 0).Source != st.Source {
		t.Fatal("tasks of one file must share their source")
	}
	if got := tb.definition(ib, b.Key()); !got.Equal(&b) {
		t.Fatalf("definition = %+v, want %+v", got, b)
	}
	// The last task of a shape takes it with it.
	tb.remove(ic, c.Key())
	if n := len(tb.shapes.index); n != 1 {
		t.Fatalf("%d shapes held after the only task of one went, want 1", n)
	}
}
