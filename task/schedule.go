package task

import (
	"time"

	"github.com/adhocore/gronx"
)

// Anchor resolves the definition's start against the time the command was
// accepted: the explicit start when there is one; otherwise, for a fixed
// frequency, the accepted time rounded up to the next whole time unit (as
// light-scheduler does), and the accepted time itself for one-shot and cron
// tasks. Every fire is anchor + k·period, so execution delays never drift
// the schedule.
func (d *Definition) Anchor(accepted int64) int64 {
	if d.Start != nil {
		return *d.Start
	}
	if d.Frequency != nil && d.Cron == "" {
		unit := d.Frequency.TimeUnit.Duration().Milliseconds()
		if unit > 0 {
			return ceilDiv(accepted, unit) * unit
		}
	}
	return accepted
}

// NextFire is the first occurrence strictly after after, for a task anchored
// at anchor; ok is false when there is none (a one-shot already fired, or
// past End). The first fire of a task is NextFire(anchor, anchor-1).
func (d *Definition) NextFire(anchor, after int64) (next int64, ok bool) {
	switch {
	case d.Cron != "":
		ref := Time(max(after, anchor-1)).In(d.location())
		t, err := gronx.NextTickAfter(d.Cron, ref, false)
		if err != nil {
			return 0, false
		}
		next = t.UnixMilli()
	case d.Frequency != nil:
		p := d.Frequency.Period().Milliseconds()
		if p <= 0 {
			return 0, false
		}
		if after < anchor {
			next = anchor
		} else {
			next = anchor + ((after-anchor)/p+1)*p
		}
	default:
		if after >= anchor {
			return 0, false
		}
		next = anchor
	}
	if d.End != nil && next > *d.End {
		return 0, false
	}
	return next, true
}

// CatchUp decides what to fire when the occurrence due is already in the
// past at now (the engine was down or late): if later occurrences are due
// too, they are coalesced into one fire of the latest one due, so a
// restarted engine fires a missed task once rather than replaying every
// missed occurrence. It returns the occurrence to fire and the one after it.
func (d *Definition) CatchUp(anchor, due, now int64) (fire, following int64, more bool) {
	fire = due
	if n, ok := d.NextFire(anchor, due); ok && n <= now {
		fire = d.lastFireAtOrBefore(anchor, now, n)
	}
	following, more = d.NextFire(anchor, fire)
	return fire, following, more
}

// lastFireAtOrBefore returns the latest occurrence ≤ now, knowing that
// atLeast is one.
func (d *Definition) lastFireAtOrBefore(anchor, now, atLeast int64) int64 {
	switch {
	case d.Cron != "":
		t, err := gronx.PrevTickBefore(d.Cron, Time(now).In(d.location()), true)
		if err != nil || t.UnixMilli() < atLeast {
			return atLeast
		}
		last := t.UnixMilli()
		if d.End != nil && last > *d.End {
			return atLeast
		}
		return last
	case d.Frequency != nil:
		p := d.Frequency.Period().Milliseconds()
		last := anchor + (now-anchor)/p*p
		if d.End != nil && last > *d.End {
			last = anchor + (*d.End-anchor)/p*p
		}
		return max(last, atLeast)
	}
	return atLeast
}

// NextFires previews up to n occurrences strictly after from.
func (d *Definition) NextFires(anchor, from int64, n int) []int64 {
	var out []int64
	for after := from; len(out) < n; {
		next, ok := d.NextFire(anchor, after)
		if !ok {
			break
		}
		out = append(out, next)
		after = next
	}
	return out
}

func (d *Definition) location() *time.Location {
	if d.Timezone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(d.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}
