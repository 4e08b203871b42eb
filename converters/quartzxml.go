package converters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

// QuartzXML reads Quartz's job scheduling data XML
// (job_scheduling_data_2_0.xsd), the file Quartz's XML plugin and
// XMLSchedulingDataProcessor load. Every trigger of every job becomes a
// task, row by row in file order, its Line that of the <trigger> element:
//
//   - a cron trigger is a quartz-dialect cron task in its time-zone (else
//     the folder's, else UTC), from start-time to end-time;
//   - a simple trigger is a fixed interval (repeat-interval ms) from its
//     start-time, ending start + repeat-count × interval (-1: never), or a
//     one-shot when repeat-count is 0;
//   - misfire-instruction becomes the misfire policy (see quartzMisfire);
//   - the job's job-data-map, then the trigger's (which wins, as in
//     Quartz's merged map), become data, with the job class, descriptions
//     and where the task came from under "quartz." keys;
//   - host is the job's group, else the folder's host, else DEFAULT
//     (Quartz's default group); name is the job's name, followed by "."
//     and the trigger's name when the job has several triggers.
//
// A start-time or end-time without an offset is read in the trigger's
// time-zone, else the folder's, else UTC. What jobdrop cannot say is a
// row error naming the element and its line: pre-processing commands,
// calendar-interval triggers, calendar-name, start-time-seconds-in-future,
// a job without a trigger, a trigger of a job the file does not define.
//
// The zero value is ready to use.
type QuartzXML struct{}

var _ Converter = QuartzXML{}

// QuartzNamespace is the XML namespace of Quartz 2's job scheduling data.
const QuartzNamespace = "http://www.quartz-scheduler.org/xml/JobSchedulingData"

// quartz1Namespace is that of Quartz 1.x, whose layout differs.
const quartz1Namespace = "http://www.opensymphony.com/quartz/JobSchedulingData"

const (
	// maxQuartzXMLBytes bounds a file: job XML is read whole.
	maxQuartzXMLBytes = 32 << 20
	// maxQuartzDepth bounds element nesting; the format needs 6.
	maxQuartzDepth = 32
)

// Convert reads the job scheduling data at path; see Converter.
func (QuartzXML) Convert(ctx context.Context, path string, opts Options, emit func(Row) error) error {
	return convertFile(ctx, path, opts, emit, QuartzXML{}.ConvertReader)
}

// quartzJob is a <job> element read.
type quartzJob struct {
	node     *xmlNode
	name     string
	group    string
	data     map[string]string
	errs     []error
	triggers int
}

// ConvertReader reads job scheduling data from r as Convert does; file is
// the name used in errors.
func (QuartzXML) ConvertReader(ctx context.Context, file string, r io.Reader, opts Options, emit func(Row) error) error {
	defaults, folderLoc, data, err := readWholeExport(file, r, opts, maxQuartzXMLBytes, "the job XML", "Quartz job XML")
	if err != nil {
		return err
	}
	root, err := parseXMLTree(ctx, data)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", file, ctx.Err())
		}
		return fmt.Errorf("%s: not well-formed XML: %w", file, err)
	}
	switch {
	case root.space == quartz1Namespace:
		return fmt.Errorf("%s: Quartz 1.x job scheduling data (namespace %s): save it in the 2.0 format (job_scheduling_data_2_0.xsd)", file, quartz1Namespace)
	case root.name != "job-scheduling-data" || (root.space != "" && root.space != QuartzNamespace):
		return fmt.Errorf("%s: not Quartz job scheduling data: the root element is <%s> in namespace %q, want <job-scheduling-data> in %s", file, root.name, root.space, QuartzNamespace)
	}

	c := quartzConv{file: file, defaults: defaults, folderLoc: folderLoc, action: task.Action(defaults.Action), jobs: map[string]*quartzJob{}, names: map[string]int{}}
	// Items in document order: directives, commands, jobs and triggers.
	var items []*xmlNode
	for _, k := range root.kids {
		switch k.name {
		case "schedule":
			for _, s := range k.kids {
				switch s.name {
				case "job":
					c.row = s.line
					c.readJob(s)
				}
				items = append(items, s)
			}
		default:
			items = append(items, k)
		}
	}
	// Count each job's triggers first: the name of a task depends on it.
	for _, it := range items {
		if it.name == "trigger" {
			if j := c.jobs[c.jobKeyOf(it)]; j != nil {
				j.triggers++
			}
		}
	}
	if c.action == "" {
		c.action = task.Update
		for _, it := range items {
			if it.name == "processing-directives" && strings.TrimSpace(it.value("overwrite-existing-data")) == "false" {
				c.action = task.Insert
			}
		}
	}
	n := 0
	for i, it := range items {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
		var row *Row
		c.row = it.line
		switch it.name {
		case "processing-directives":
			row = c.directives(it)
		case "pre-processing-commands":
			row = c.refuse(it, "", "pre-processing commands delete jobs and triggers Quartz already holds; jobdrop does not run them: delete those tasks with DELETE rows, or drop the file into a sync folder")
		case "job":
			j := c.jobs[c.jobKey(it.value("group"), it.value("name"))]
			switch {
			case j == nil || j.node != it: // a duplicate, refused by readJob
				row = &Row{Line: it.line, Err: joinRowErrors(c.dupErr(it))}
			case len(j.errs) > 0:
				row = &Row{Line: it.line, Err: joinRowErrors(j.errs)}
			case j.triggers == 0:
				row = c.refuse(it, "", "a job without a trigger never fires, and jobdrop has no task without a schedule: add a <trigger> with this job's job-name, or leave the job out")
			}
		case "trigger":
			row = c.trigger(it)
		default:
			row = c.refuse(it, "", "not an element of Quartz job scheduling data (pre-processing-commands, processing-directives or schedule with job and trigger)")
		}
		if row == nil {
			continue
		}
		n++
		if err := emit(*row); err != nil {
			return err
		}
	}
	if n == 0 {
		return fmt.Errorf("%s: %w: no <job> or <trigger> in <schedule>", file, ErrNoRows)
	}
	return nil
}

// quartzConv holds what the rows of one file share.
type quartzConv struct {
	file      string
	defaults  Defaults
	folderLoc *time.Location
	action    task.Action
	jobs      map[string]*quartzJob
	names     map[string]int // task keys given, by the line that took them
	row       int            // the line of the row being read
}

// quartzDefaultGroup is the group Quartz gives a job or trigger without one.
const quartzDefaultGroup = "DEFAULT"

func (c *quartzConv) jobKey(group, name string) string {
	if group == "" {
		group = quartzDefaultGroup
	}
	return group + "\x00" + name
}

// jobKeyOf is the key of the job a <trigger> names.
func (c *quartzConv) jobKeyOf(trigger *xmlNode) string {
	t := triggerBody(trigger)
	if t == nil {
		return ""
	}
	return c.jobKey(t.value("job-group"), t.value("job-name"))
}

// triggerBody is the cron, simple, … element inside a <trigger>.
func triggerBody(trigger *xmlNode) *xmlNode {
	if len(trigger.kids) == 0 {
		return nil
	}
	return trigger.kids[0]
}

// rowErr is an error of the row being read (c.row) found in its element
// n, named with its line when that is not the row's own.
func (c *quartzConv) rowErr(n *xmlNode, value string, err error) error {
	col := "<" + n.name + ">"
	if n.line != c.row {
		col += fmt.Sprintf(" (line %d)", n.line)
	}
	return &RowError{File: c.file, Row: c.row, Column: col, Value: clip(value), Err: err}
}

func (c *quartzConv) refuse(n *xmlNode, value, reason string) *Row {
	return &Row{Line: c.row, Err: c.rowErr(n, value, errors.New(reason))}
}

func (c *quartzConv) dupErr(n *xmlNode) []error {
	return []error{c.rowErr(n, n.value("name"), errors.New("a second job of this group and name: Quartz keeps one job per group and name"))}
}

// readJob reads a <job>, keeping its errors for its row.
func (c *quartzConv) readJob(n *xmlNode) {
	j := &quartzJob{node: n, name: n.value("name"), group: n.value("group"), data: map[string]string{}}
	key := c.jobKey(j.group, j.name)
	if c.jobs[key] != nil {
		return
	}
	c.jobs[key] = j
	for _, k := range n.kids {
		v := strings.TrimSpace(k.text)
		switch k.name {
		case "name", "group":
		case "description":
			j.data["quartz.description"] = v
		case "job-class":
			j.data["quartz.jobClass"] = v
		case "durability":
			// A durable job outlives its triggers in Quartz; a task is
			// its schedule, so it only matters when there is none.
			if err := checkBool(v); err != nil {
				j.errs = append(j.errs, c.rowErr(k, v, err))
			}
		case "recover":
			if err := checkBool(v); err != nil {
				j.errs = append(j.errs, c.rowErr(k, v, err))
			} else if v == "true" || v == "1" {
				j.data["quartz.requestsRecovery"] = "true"
			}
		case "job-data-map":
			j.errs = append(j.errs, c.dataMap(k, j.data)...)
		default:
			j.errs = append(j.errs, c.rowErr(k, "", errors.New("not an element of <job> (name, group, description, job-class, durability, recover, job-data-map)")))
		}
	}
	if j.name == "" {
		j.errs = append(j.errs, c.rowErr(n, "", errors.New("a job needs a <name>")))
	}
	if j.data["quartz.jobClass"] == "" {
		j.errs = append(j.errs, c.rowErr(n, j.name, errors.New("a job needs a <job-class>")))
	}
}

func checkBool(v string) error {
	switch v {
	case "true", "false", "1", "0":
		return nil
	}
	return errors.New("want true or false")
}

// dataMap reads <entry><key/><value/></entry> pairs into m.
func (c *quartzConv) dataMap(n *xmlNode, m map[string]string) []error {
	var errs []error
	for _, e := range n.kids {
		if e.name != "entry" {
			errs = append(errs, c.rowErr(e, "", errors.New("a job-data-map holds <entry> elements")))
			continue
		}
		key := e.child("key")
		if key == nil || strings.TrimSpace(key.text) == "" {
			errs = append(errs, c.rowErr(e, "", errors.New("an entry needs a <key>")))
			continue
		}
		k := strings.TrimSpace(key.text)
		if strings.HasPrefix(k, "quartz.") {
			errs = append(errs, c.rowErr(key, k, errors.New(`keys starting "quartz." are where jobdrop keeps the job's class and origin: rename the entry`)))
			continue
		}
		val := ""
		if v := e.child("value"); v != nil {
			val = v.text // a value keeps its spaces, as Quartz does
		}
		m[k] = val
	}
	return errs
}

// directives reads <processing-directives>: overwrite-existing-data
// chooses UPDATE (the default, as in Quartz) or INSERT; ignore-duplicates
// needs nothing, an identical INSERT being a no-op.
func (c *quartzConv) directives(n *xmlNode) *Row {
	var errs []error
	for _, k := range n.kids {
		v := strings.TrimSpace(k.text)
		switch k.name {
		case "overwrite-existing-data", "ignore-duplicates":
			if err := checkBool(v); err != nil {
				errs = append(errs, c.rowErr(k, v, err))
			}
		default:
			errs = append(errs, c.rowErr(k, "", errors.New("not a processing directive (overwrite-existing-data, ignore-duplicates)")))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &Row{Line: c.row, Err: joinRowErrors(errs)}
}

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
			errs = append(errs, c.dataMap(k, d.Data)...)
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
	}
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

// parseXSDDateTime reads an xsd:dateTime (2027-03-01T08:00:00, with
// optional fraction and Z or ±hh:mm); without an offset it is a local time
// in loc.
func parseXSDDateTime(s string, loc *time.Location) (int64, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", s, loc)
	if err != nil {
		return 0, errors.New("want an xsd:dateTime such as 2027-03-01T08:00:00 or 2027-03-01T08:00:00+01:00")
	}
	if t.Year() < 1970 {
		return 0, errors.New("must be after 1970")
	}
	return t.UnixMilli(), nil
}
