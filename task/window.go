package task

import (
	"strings"
	"time"
)

// open returns t when the window is open at t, or else the next time it
// opens. t is in the task's time zone.
func (w *Window) open(t time.Time) time.Time {
	from, _ := parseClock(w.From)
	to, _ := parseClock(w.To)
	if w.isOpen(t, from, to) {
		return t
	}
	y, m, d := t.Date()
	for i := range 8 {
		o := time.Date(y, m, d+i, from/60, from%60, 0, 0, t.Location())
		if o.After(t) && w.allows(o.Weekday()) {
			return o
		}
	}
	return t // no allowed day: validation prevents it
}

// isOpen reports whether the window is open at t. A window spanning
// midnight belongs to the day it opens.
func (w *Window) isOpen(t time.Time, from, to int) bool {
	min := t.Hour()*60 + t.Minute()
	day := t.Weekday()
	if from < to {
		return min >= from && min < to && w.allows(day)
	}
	if min >= from {
		return w.allows(day)
	}
	return min < to && w.allows((day+6)%7)
}

func (w *Window) allows(d time.Weekday) bool {
	if len(w.Days) == 0 {
		return true
	}
	for _, s := range w.Days {
		if weekdays[strings.ToUpper(s)] == d {
			return true
		}
	}
	return false
}
