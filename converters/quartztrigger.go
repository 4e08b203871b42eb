package converters

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

// trigger turns a <trigger> into a task.
func (c *quartzConv) trigger(n *xmlNode) *Row {
	row := &Row{Line: n.line}
	var errs []error
	fail := func(k *xmlNode, value string, err error) { errs = append(errs, c.rowErr(k, value, err)) }
	if len(n.kids) != 1 {
		return c.refuse(n, "", "a trigger holds exactly one of <cron> or <simple>")
	}
	t := n.kids[0]
	switch t.name {
	case "cron", "simple":
	case "calendar-interval", "daily-time-interval":
		return c.refuse(t, "", "a "+t.name+" trigger counts calendar units (months, weeks, days) in local time; jobdrop cannot say that faithfully: write it as a <cron> trigger")
	default:
		return c.refuse(t, "", "not a trigger kind (cron, simple)")
	}
	name, group := t.value("name"), t.value("group")
	if group == "" {
		group = quartzDefaultGroup
	}
	if name == "" {
		fail(t, "", errors.New("a trigger needs a <name>"))
	}
	j := c.jobs[c.jobKeyOf(n)]
	if j == nil {
		jn := t.value("job-name")
		if jg := t.value("job-group"); jg != "" {
			jn = jg + "." + jn
		}
		return c.refuse(t, jn, "names a job this file does not define: jobdrop keeps no jobs apart from their triggers, so put the <job> in the same file")
	}
	if len(j.errs) > 0 {
		return c.refuse(t, j.name, fmt.Sprintf("its job, on line %d, is refused", j.node.line))
	}
	d := c.triggerTask(n, j, name, group)
	loc := c.triggerZone(t, &d, fail)
	e := c.triggerElements(t, loc, &d, &errs)
	start, end := e.start, e.end
	if start != nil && end != nil && *end < *start {
		fail(t.child("end-time"), t.value("end-time"), errors.New("is before start-time"))
	}
	d.Start = start
	finite := false // a simple trigger with a repeat count
	switch t.name {
	case "cron":
		if d.Cron == "" {
			fail(t, "", errors.New("a cron trigger needs a <cron-expression>"))
		}
		d.End = end
	case "simple":
		finite = c.simpleRepeat(t, e, row, &d, fail)
	}
	c.triggerMisfire(t, e.misfire, finite, row, &d, fail)
	if len(errs) == 0 {
		key := d.Key()
		if prev, ok := c.names[key]; ok {
			fail(t, d.Name, fmt.Errorf("the task %s is already given by the trigger on line %d: give the triggers of one job different names", key, prev))
		} else {
			c.names[key] = n.line
		}
	}
	for _, fe := range task.FieldErrors(d.Validate()) {
		errs = append(errs, &RowError{File: c.file, Row: c.row, Column: quartzElement(fe.Field), Value: clip(fe.Value), Err: errors.New(fe.Reason)})
	}
	row.Def = d
	if len(errs) > 0 {
		row.Err = joinRowErrors(errs)
	}
	return row
}

// triggerTask is the task of trigger n of job j before the trigger's
// elements are read: named after the trigger when the job has several.
func (c *quartzConv) triggerTask(n *xmlNode, j *quartzJob, name, group string) task.Definition {
	d := task.Definition{Host: j.group, Name: j.name, Action: c.action, Topic: c.defaults.Topic, Data: map[string]string{}}
	if d.Host == "" {
		d.Host = c.defaults.Host
	}
	if d.Host == "" {
		d.Host = quartzDefaultGroup
	}
	if j.triggers > 1 {
		d.Name += "." + name
	}
	for k, v := range j.data {
		d.Data[k] = v
	}
	jg := j.group
	if jg == "" {
		jg = quartzDefaultGroup
	}
	d.Data["quartz.job"] = jg + "." + j.name
	d.Data["quartz.trigger"] = group + "." + name
	d.Data["quartz.element"] = n.path
	return d
}

// triggerZone sets d's time zone from trigger t and returns the zone its
// bare times are read in.
func (c *quartzConv) triggerZone(t *xmlNode, d *task.Definition, fail func(*xmlNode, string, error)) *time.Location {
	// The zone bare times are read in: the trigger's, the folder's, UTC.
	loc := c.folderLoc
	if t.name == "cron" {
		if tz := t.value("time-zone"); tz != "" {
			l, err := time.LoadLocation(tz)
			if err != nil {
				fail(t.child("time-zone"), tz, errors.New("must be an IANA time zone such as Europe/Paris"))
			} else {
				loc = l
				d.Timezone = tz
			}
		} else if c.defaults.Timezone != "" {
			d.Timezone = c.defaults.Timezone
		}
	}
	return loc
}

// quartzTrigger is what the child elements of one trigger say beyond
// what goes straight into its task.
type quartzTrigger struct {
	start, end                           *int64
	misfire, repeatCount, repeatInterval *xmlNode
}

// triggerElements reads the child elements of trigger t, times in loc,
// putting what needs no further reading into d and problems into errs.
func (c *quartzConv) triggerElements(t *xmlNode, loc *time.Location, d *task.Definition, errs *[]error) quartzTrigger {
	fail := func(k *xmlNode, value string, err error) { *errs = append(*errs, c.rowErr(k, value, err)) }
	var start, end *int64
	var misfire *xmlNode
	var repeatCount, repeatInterval *xmlNode
	for _, k := range t.kids {
		v := strings.TrimSpace(k.text)
		switch k.name {
		case "name", "group", "job-name", "job-group", "time-zone":
		case "description":
			d.Data["quartz.triggerDescription"] = v
		case "priority":
			if p, err := strconv.Atoi(v); err != nil || p < 0 {
				fail(k, v, errors.New("want a whole number ≥ 0"))
			} else {
				// jobdrop fires simultaneous tasks in no set order.
				d.Data["quartz.priority"] = v
			}
		case "calendar-name":
			fail(k, v, errors.New("a Quartz calendar excludes times from the trigger; jobdrop has no calendars: drop it and narrow the cron expression, or give the task a window"))
		case "job-data-map":
			*errs = append(*errs, c.dataMap(k, d.Data)...)
		case "start-time", "end-time":
			ms, err := parseXSDDateTime(v, loc)
			if err != nil {
				fail(k, v, err)
				continue
			}
			if k.name == "start-time" {
				start = &ms
			} else {
				end = &ms
			}
		case "start-time-seconds-in-future":
			fail(k, v, errors.New("counts from when Quartz loads the file, which jobdrop cannot know: give a <start-time>"))
		case "misfire-instruction":
			misfire = k
		case "cron-expression":
			if t.name != "cron" {
				fail(k, "", errors.New("not an element of <"+t.name+">"))
			}
			d.Cron = v
			d.CronDialect = task.DialectQuartz
		case "repeat-count", "repeat-interval":
			if t.name != "simple" {
				fail(k, "", errors.New("not an element of <"+t.name+">"))
			} else if k.name == "repeat-count" {
				repeatCount = k
			} else {
				repeatInterval = k
			}
		default:
			fail(k, "", fmt.Errorf("not an element of a <%s> trigger", t.name))
		}
	}
	return quartzTrigger{start: start, end: end, misfire: misfire, repeatCount: repeatCount, repeatInterval: repeatInterval}
}

// simpleRepeat sets d's frequency and end from a simple trigger's repeat
// count and interval; finite tells a repeat count.
func (c *quartzConv) simpleRepeat(t *xmlNode, e quartzTrigger, row *Row, d *task.Definition, fail func(*xmlNode, string, error)) (finite bool) {
	start, end, repeatCount, repeatInterval := e.start, e.end, e.repeatCount, e.repeatInterval
	count, interval := int64(0), int64(0)
	if repeatCount != nil {
		v := strings.TrimSpace(repeatCount.text)
		c, err := strconv.ParseInt(v, 10, 32)
		if err != nil || c < -1 {
			fail(repeatCount, v, errors.New("want -1 (forever) or a whole number ≥ 0"))
		}
		count = c
	}
	if repeatInterval != nil {
		v := strings.TrimSpace(repeatInterval.text)
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil || i < 0 {
			fail(repeatInterval, v, errors.New("want milliseconds, a whole number ≥ 0"))
		}
		interval = i
	}
	switch {
	case count == 0:
		// One fire at start-time (at acceptance without one); Quartz
		// fires it even when end-time equals start-time.
	case interval <= 0:
		fail(t, strconv.FormatInt(interval, 10), errors.New("a repeating simple trigger needs a <repeat-interval> above 0 milliseconds"))
	default:
		f, ok := intervalFrequency(interval)
		if !ok {
			fail(repeatInterval, strconv.FormatInt(interval, 10), errors.New("jobdrop's frequency holds at most 2147483647 of its unit: this interval fits no unit"))
			break
		}
		d.Frequency = &f
		if count > 0 {
			finite = true
			if start == nil {
				fail(t, "", fmt.Errorf("repeats %d times counted from when Quartz loads the file, which jobdrop cannot know: give a <start-time>", count))
				break
			}
			last := *start + count*interval
			d.End = &last
		} else if start == nil {
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s: line %d: <%s> has no start-time: Quartz starts it when it loads the file, jobdrop at the next whole %s after it accepts it",
				c.file, t.line, t.name, strings.ToLower(strings.TrimSuffix(string(f.TimeUnit), "S"))))
		}
		if end != nil {
			// Quartz never fires a simple trigger at its end-time.
			e := *end - 1
			if d.End == nil || e < *d.End {
				d.End = &e
			}
		}
	}
	return finite
}

// triggerMisfire sets d's misfire policy from trigger t's
// misfire-instruction (Quartz's smart policy without one).
func (c *quartzConv) triggerMisfire(t, misfire *xmlNode, finite bool, row *Row, d *task.Definition, fail func(*xmlNode, string, error)) {
	if misfire != nil {
		v := strings.TrimSpace(misfire.text)
		m, warn, err := quartzMisfire(t.name, v, d.Frequency != nil, finite)
		if err != nil {
			fail(misfire, v, err)
		}
		d.Misfire = m
		if warn != "" {
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s: line %d: %s: %s", c.file, misfire.line, v, warn))
		}
	} else {
		m, warn, _ := quartzMisfire(t.name, "MISFIRE_INSTRUCTION_SMART_POLICY", d.Frequency != nil, finite)
		d.Misfire = m
		if warn != "" {
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s: line %d: no misfire-instruction (SMART_POLICY): %s", c.file, t.line, warn))
		}
	}
}

// quartzElement names the element a task field comes from.
func quartzElement(field string) string {
	switch field {
	case "host":
		return "<job>/<group>"
	case "name":
		return "<job>/<name>"
	case "cron":
		return "<cron-expression>"
	case "start":
		return "<start-time>"
	case "end":
		return "<end-time>"
	case "timezone":
		return "<time-zone>"
	}
	return field
}

// quartzMisfire maps a trigger's misfire instruction to a misfire policy,
// with a warning where Quartz would do something jobdrop does not.
// SMART_POLICY means, as in Quartz: FIRE_ONCE_NOW for a cron trigger;
// for a simple one, FIRE_NOW when it fires once,
// RESCHEDULE_NEXT_WITH_REMAINING_COUNT when it repeats forever,
// RESCHEDULE_NOW_WITH_EXISTING_REPEAT_COUNT when it repeats a number of
// times.
func quartzMisfire(kind, instr string, repeats, finite bool) (task.Misfire, string, error) {
	name, ok := strings.CutPrefix(instr, "MISFIRE_INSTRUCTION_")
	if !ok {
		name = "?"
	}
	if name == "IGNORE_MISFIRE_POLICY" {
		return task.FireAll, fmt.Sprintf("fires every missed occurrence, as Quartz does, but at most %d of them", task.MaxMisfires), nil
	}
	const rebase = "Quartz would move the remaining fires to count from the late fire; jobdrop fires the missed occurrence once and keeps the schedule"
	if kind == "cron" {
		switch name {
		case "SMART_POLICY", "FIRE_ONCE_NOW":
			return task.FireOnce, "", nil
		case "DO_NOTHING":
			return task.Skip, "", nil
		}
		return "", "", errors.New("not a cron trigger's misfire instruction (MISFIRE_INSTRUCTION_SMART_POLICY, _FIRE_ONCE_NOW, _DO_NOTHING, _IGNORE_MISFIRE_POLICY)")
	}
	if name == "SMART_POLICY" {
		switch {
		case !repeats:
			name = "FIRE_NOW"
		case !finite:
			name = "RESCHEDULE_NEXT_WITH_REMAINING_COUNT"
		default:
			name = "RESCHEDULE_NOW_WITH_EXISTING_REPEAT_COUNT"
		}
	}
	switch name {
	case "FIRE_NOW":
		if repeats {
			return task.FireOnce, rebase, nil
		}
		return task.FireOnce, "", nil
	case "RESCHEDULE_NOW_WITH_EXISTING_REPEAT_COUNT", "RESCHEDULE_NOW_WITH_REMAINING_REPEAT_COUNT":
		if !repeats {
			return task.FireOnce, "", nil
		}
		return task.FireOnce, rebase, nil
	case "RESCHEDULE_NEXT_WITH_REMAINING_COUNT":
		return task.Skip, "", nil
	case "RESCHEDULE_NEXT_WITH_EXISTING_COUNT":
		if finite {
			return task.Skip, "Quartz would not count the missed fires and end later; jobdrop skips them and keeps the end", nil
		}
		return task.Skip, "", nil
	}
	return "", "", errors.New("not a simple trigger's misfire instruction (MISFIRE_INSTRUCTION_SMART_POLICY, _FIRE_NOW, _RESCHEDULE_NOW_WITH_EXISTING_REPEAT_COUNT, _RESCHEDULE_NOW_WITH_REMAINING_REPEAT_COUNT, _RESCHEDULE_NEXT_WITH_REMAINING_COUNT, _RESCHEDULE_NEXT_WITH_EXISTING_COUNT, _IGNORE_MISFIRE_POLICY)")
}

// intervalFrequency writes milliseconds in the largest unit that holds
// them whole. Days are 24 hours here: a simple trigger has no time zone.
func intervalFrequency(ms int64) (task.Frequency, bool) {
	for _, u := range []task.TimeUnit{task.Days, task.Hours, task.Minutes, task.Seconds, task.Milliseconds} {
		size := u.Duration().Milliseconds()
		if ms%size == 0 && ms/size <= 1<<31-1 {
			return task.Frequency{TimeUnit: u, Time: int32(ms / size)}, true
		}
	}
	return task.Frequency{}, false
}
