package converters

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

// winTriggerRefusals say why jobdrop cannot fire each trigger kind it
// refuses.
var winTriggerRefusals = map[string]string{
	"LogonTrigger":              "starts when a user logs on to Windows; jobdrop fires on a clock and sees no logons",
	"BootTrigger":               "starts when Windows boots; jobdrop fires on a clock and sees no boots",
	"IdleTrigger":               "starts when the machine goes idle; jobdrop fires on a clock and cannot know",
	"EventTrigger":              "starts on an event log entry; jobdrop fires on a clock and reads no event log",
	"RegistrationTrigger":       "starts when the task is registered or updated: give a TimeTrigger at the time it should run",
	"SessionStateChangeTrigger": "starts on a session's connect, disconnect, lock or unlock; jobdrop fires on a clock and sees no sessions",
}

// trigger turns one trigger element into a task.
func (c *winConv) trigger(t *xmlNode, index int, several bool) *Row {
	c.row = t.line
	row := &Row{Line: t.line}
	var errs []error
	fail := func(k *xmlNode, value string, err error) { errs = append(errs, c.rowErr(k, value, err)) }
	for _, is := range c.issues {
		fail(is.n, is.value, is.err)
	}
	if !triggerFires(t, fail) {
		row.Err = joinRowErrors(errs)
		return row
	}
	d := c.triggerTask(t, index, several)
	e := c.triggerElements(t, row, &d, fail)
	if t.child("StartBoundary") == nil {
		fail(t, "", errors.New("a trigger needs a <StartBoundary>: Windows requires one"))
	}
	d.Start, d.End = e.start, e.end
	if e.paused {
		f := false
		d.Active = &f
	}
	if t.name == "CalendarTrigger" {
		errs = append(errs, c.calendarRule(t, e, &d, fail)...)
	}
	if e.repetition != nil && e.start != nil {
		c.repeat(e.repetition, t.name == "TimeTrigger", e.schedule, e.start, &d, fail)
	}
	if len(errs) == 0 {
		key := d.Key()
		if prev, ok := c.names[key]; ok {
			fail(t, d.Name, fmt.Errorf("the task %s is already given by the trigger on line %d: give the triggers different Ids", key, prev))
		} else {
			c.names[key] = t.line
		}
	}
	if len(errs) == 0 {
		for _, fe := range task.FieldErrors(d.Validate()) {
			errs = append(errs, &RowError{File: c.file, Row: c.row, Column: winElement(fe.Field, t.name), Value: clip(fe.Value), Err: errors.New(fe.Reason)})
		}
	}
	row.Def = d
	if len(errs) > 0 {
		row.Err = joinRowErrors(errs)
	}
	return row
}

// triggerFires reports whether t is a trigger kind jobdrop can fire, and
// fails it with the reason when it is not.
func triggerFires(t *xmlNode, fail func(*xmlNode, string, error)) bool {
	switch t.name {
	case "TimeTrigger", "CalendarTrigger":
		return true
	}
	reason, ok := winTriggerRefusals[t.name]
	if !ok {
		reason = "not a trigger jobdrop can fire (TimeTrigger, CalendarTrigger)"
	}
	fail(t, "", errors.New(reason))
	return false
}

// triggerTask is the task of trigger t before its elements are read: the
// task's own settings, named after the trigger when the task has several.
func (c *winConv) triggerTask(t *xmlNode, index int, several bool) task.Definition {
	id := t.value("Id")
	if id == "" {
		id = strconv.Itoa(index)
	}
	d := task.Definition{Host: c.defaults.Host, Name: c.taskName, Action: c.action, Topic: c.defaults.Topic, Misfire: c.misfire, Data: map[string]string{}}
	if d.Host == "" {
		d.Host = winTaskDefaultHost
	}
	if several {
		d.Name += "." + id
	}
	for k, v := range c.data {
		d.Data[k] = v
	}
	d.Data["windows.trigger"] = id
	d.Data["windows.element"] = t.path
	return d
}

// winTrigger is what the child elements of one trigger say.
type winTrigger struct {
	start, end                      *int64
	startNode, repetition, schedule *xmlNode
	// zone is the time zone of the StartBoundary (the folder's without an
	// offset); zoneOK is false for an offset no IANA zone has.
	zone   string
	zoneOK bool
	paused bool
}

// triggerElements reads the child elements of trigger t, putting what
// needs no further reading into d and warnings into row.
func (c *winConv) triggerElements(t *xmlNode, row *Row, d *task.Definition, fail func(*xmlNode, string, error)) winTrigger {
	e := winTrigger{zone: c.defaults.Timezone, zoneOK: true, paused: c.paused}
	for _, k := range t.kids {
		v := strings.TrimSpace(k.text)
		switch k.name {
		case "Id":
		case "Enabled":
			if err := checkBool(v); err != nil {
				fail(k, v, err)
			} else if v == "false" || v == "0" {
				e.paused = true
			}
		case "StartBoundary", "EndBoundary":
			ms, z, ok, err := winBoundary(v, c.folderLoc)
			if err != nil {
				fail(k, v, err)
				continue
			}
			if k.name == "StartBoundary" {
				e.start, e.startNode = &ms, k
				if z != "" {
					e.zone = z
				}
				e.zoneOK = ok
			} else {
				e.end = &ms
			}
		case "ExecutionTimeLimit":
			d.Data["windows.executionTimeLimit"] = v
		case "RandomDelay":
			d.Data["windows.randomDelay"] = v
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s: line %d: <RandomDelay> %s: Windows delays each start by up to that at random; jobdrop fires on time and keeps the delay in data windows.randomDelay", c.file, k.line, v))
		case "Repetition":
			e.repetition = k
		case "ScheduleByDay", "ScheduleByWeek", "ScheduleByMonth", "ScheduleByMonthDayOfWeek":
			if t.name != "CalendarTrigger" {
				fail(k, "", fmt.Errorf("not an element of a <%s>", t.name))
			} else if e.schedule != nil {
				fail(k, "", errors.New("a second schedule: a CalendarTrigger holds one ScheduleBy… element"))
			} else {
				e.schedule = k
			}
		default:
			fail(k, "", fmt.Errorf("not an element of a <%s> jobdrop reads (Id, Enabled, StartBoundary, EndBoundary, Repetition, ExecutionTimeLimit, RandomDelay, ScheduleBy…)", t.name))
		}
	}
	return e
}

// calendarRule sets the time zone and RRULE of CalendarTrigger t; it
// returns the problems of its ScheduleBy… element.
func (c *winConv) calendarRule(t *xmlNode, e winTrigger, d *task.Definition, fail func(*xmlNode, string, error)) []error {
	if !e.zoneOK {
		fail(e.startNode, e.startNode.text, errors.New("an offset of hours and minutes has no IANA time zone for a calendar rule: write the boundary without an offset (the folder's time zone) or with a whole-hour offset"))
	}
	d.Timezone = e.zone
	if e.schedule == nil {
		fail(t, "", errors.New("a CalendarTrigger needs one of ScheduleByDay, ScheduleByWeek, ScheduleByMonth, ScheduleByMonthDayOfWeek"))
		return nil
	}
	rule, serrs := c.schedule(e.schedule)
	d.Rrule = rule
	return serrs
}

// winElement names the element a task field comes from.
func winElement(field, trigger string) string {
	switch field {
	case "host":
		return "host"
	case "name":
		return "<URI>"
	case "start":
		return "<StartBoundary>"
	case "end":
		return "<EndBoundary>"
	}
	return "<" + trigger + ">"
}

// winBoundary reads a StartBoundary or EndBoundary: a local time of loc,
// or an instant when it has an offset. zone is the IANA zone of that
// offset ("" without one); ok is false for an offset no IANA zone has.
func winBoundary(v string, loc *time.Location) (ms int64, zone string, ok bool, err error) {
	ms, err = parseXSDDateTime(v, loc)
	if err != nil {
		return 0, "", false, err
	}
	t, perr := time.Parse(time.RFC3339Nano, v)
	if perr != nil {
		return ms, "", true, nil
	}
	_, off := t.Zone()
	switch {
	case off == 0:
		return ms, "UTC", true, nil
	case off%3600 != 0:
		return ms, "", false, nil
	case off > 0:
		return ms, fmt.Sprintf("Etc/GMT-%d", off/3600), true, nil
	default:
		return ms, fmt.Sprintf("Etc/GMT+%d", -off/3600), true, nil
	}
}
