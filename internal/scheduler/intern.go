package scheduler

import (
	"strings"

	"github.com/jobdrop/jobdrop/task"
)

// interner keeps one copy of values many tasks share, counting the tasks,
// and forgets a value no task holds any more.
type interner[K comparable, V any] struct {
	index map[K]int32
	items []interned[K, V]
	free  []int32
}

type interned[K comparable, V any] struct {
	key  K
	val  V
	refs int32
}

func (in *interner[K, V]) init() { in.index = map[K]int32{} }

// add counts one more holder of the value for k, made by mk the first time.
func (in *interner[K, V]) add(k K, mk func() V) int32 {
	if i, ok := in.index[k]; ok {
		in.items[i].refs++
		return i
	}
	it := interned[K, V]{key: k, val: mk(), refs: 1}
	var i int32
	if n := len(in.free); n > 0 {
		i, in.free = in.free[n-1], in.free[:n-1]
		in.items[i] = it
	} else {
		i = int32(len(in.items))
		in.items = append(in.items, it)
	}
	in.index[k] = i
	return i
}

func (in *interner[K, V]) get(i int32) V { return in.items[i].val }

// release counts one holder less of value i.
func (in *interner[K, V]) release(i int32) {
	it := &in.items[i]
	if it.refs--; it.refs > 0 {
		return
	}
	delete(in.index, it.key)
	*it = interned[K, V]{}
	in.free = append(in.free, i)
}

// shapeKey holds every field of a task.Definition but its name, start and
// data, comparably. TestShapeKeyCoversDefinition fails when Definition
// gains a field this does not know.
type shapeKey struct {
	host, action, topic, cron, dialect, rrule, timezone, misfire string
	unit                                                         task.TimeUnit
	every                                                        int32
	hasFrequency, hasEnd, hasWindow                              bool
	end                                                          int64
	from, to, days                                               string
	active                                                       int8 // 0 absent, 1 true, 2 false
	timeout                                                      int64
	message                                                      bool // its payload is a message (splitPayload)
	after, on                                                    string
	delay                                                        int64
	retry                                                        task.Retry
	hasRetry                                                     bool
}

func keyOf(d *task.Definition) shapeKey {
	k := shapeKey{host: d.Host, action: string(d.Action), topic: d.Topic, cron: d.Cron, dialect: string(d.CronDialect), rrule: d.Rrule,
		timezone: d.Timezone, misfire: string(d.Misfire), timeout: d.Timeout, message: d.Message != nil}
	if d.Frequency != nil {
		k.hasFrequency, k.unit, k.every = true, d.Frequency.TimeUnit, d.Frequency.Time
	}
	if d.End != nil {
		k.hasEnd, k.end = true, *d.End
	}
	if d.Window != nil {
		k.hasWindow, k.from, k.to, k.days = true, d.Window.From, d.Window.To, strings.Join(d.Window.Days, ",")
	}
	if len(d.After) > 0 {
		k.after, k.on, k.delay = strings.Join(d.After, "\x00"), string(d.On), d.Delay
	}
	if d.Retry != nil {
		k.hasRetry, k.retry = true, *d.Retry
	}
	if d.Active != nil {
		k.active = 2
		if *d.Active {
			k.active = 1
		}
	}
	return k
}
