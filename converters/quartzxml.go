package converters

import (
	"context"
	"errors"
	"fmt"
	"io"
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
