package converters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

// WinTask reads a Windows Task Scheduler task as `schtasks /query /xml`
// and the console's Export write it: UTF-16 with a byte order mark (or
// UTF-8), root element <Task> in WinTaskNamespace. One file is one task
// definition; each of its triggers becomes a jobdrop task, row by row in
// file order, its Line that of the trigger element:
//
//   - a TimeTrigger fires once at its StartBoundary; with a Repetition it
//     repeats every Interval, for Duration when given;
//   - a CalendarTrigger is an RFC 5545 rule started at its StartBoundary:
//     ScheduleByDay FREQ=DAILY, ScheduleByWeek FREQ=WEEKLY with BYDAY,
//     ScheduleByMonth FREQ=MONTHLY with BYMONTHDAY (Last is -1) and
//     BYMONTH, ScheduleByMonthDayOfWeek FREQ=MONTHLY with BYDAY=2TU, -1FR…;
//     a Repetition within the day becomes BYHOUR, BYMINUTE and BYSECOND
//     when those say exactly the same times;
//   - a StartBoundary or EndBoundary without an offset is a local time of
//     the folder's time zone, else UTC; with an offset it is that instant,
//     and a calendar rule runs in that fixed offset;
//   - Enabled false, on the trigger or in Settings, pauses the task;
//     Settings/StartWhenAvailable true fires a missed occurrence once
//     (FIRE_ONCE), otherwise missed occurrences are skipped, as Windows does;
//   - the Exec action's Command, Arguments and WorkingDirectory go into data
//     under "windows." keys, with the task's path, the trigger and where it
//     stands in the file; a RandomDelay is kept in data, with a warning.
//
// The name is the task's path (RegistrationInfo/URI, else the file name
// without .xml), followed by "." and the trigger's Id (else its position)
// when the task has several triggers; the host is the folder's, else
// "windows". What jobdrop cannot say is a row error naming the element and
// its line: logon, boot, idle, event, registration and session triggers,
// COM, e-mail and message actions, several actions, repetitions no rule
// says exactly.
//
// The zero value is ready to use.
type WinTask struct{}

var _ Converter = WinTask{}

// WinTaskNamespace is the XML namespace of Task Scheduler task definitions.
const WinTaskNamespace = "http://schemas.microsoft.com/windows/2004/02/mit/task"

const (
	// maxWinTaskBytes bounds a file: a task definition is a few KiB.
	maxWinTaskBytes = 4 << 20
	// winTaskDefaultHost is the host of a task when the folder gives none.
	winTaskDefaultHost = "windows"
)

// Convert reads the task definition at path; see Converter.
func (WinTask) Convert(ctx context.Context, path string, opts Options, emit func(Row) error) error {
	return convertFile(ctx, path, opts, emit, WinTask{}.ConvertReader)
}

// ConvertReader reads a task definition from r as Convert does; file is
// the name used in errors.
func (WinTask) ConvertReader(ctx context.Context, file string, r io.Reader, opts Options, emit func(Row) error) error {
	defaults, folderLoc, raw, err := readWholeExport(file, r, opts, maxWinTaskBytes, "a Task Scheduler task", "a Task Scheduler task")
	if err != nil {
		return err
	}
	root, err := parseXMLTreeCharset(ctx, decodeXMLBytes(raw), decodedCharset)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", file, ctx.Err())
		}
		return fmt.Errorf("%s: not well-formed XML: %w", file, err)
	}
	if root.name != "Task" || (root.space != "" && root.space != WinTaskNamespace) {
		return fmt.Errorf("%s: not a Task Scheduler task: the root element is <%s> in namespace %q, want <Task> in %s", file, root.name, root.space, WinTaskNamespace)
	}
	c := &winConv{file: file, defaults: defaults, folderLoc: folderLoc, data: map[string]string{}, names: map[string]int{}}
	c.action = task.Action(defaults.Action)
	if c.action == "" {
		c.action = task.Update
	}
	c.taskName = strings.TrimSuffix(file, filepath.Ext(file))
	c.misfire = task.Skip
	var triggers *xmlNode
	for _, k := range root.kids {
		switch k.name {
		case "RegistrationInfo":
			c.registration(k)
		case "Triggers":
			triggers = k
		case "Settings":
			c.settings(k)
		case "Actions":
			c.actions(k)
		case "Principals", "Data":
			// Who Windows runs the task as is the consumer's to decide;
			// Data is for COM handlers, refused below.
		default:
			c.issue(k, "", "not an element of a Task Scheduler task (RegistrationInfo, Triggers, Settings, Actions, Principals, Data)")
		}
	}
	if !c.hasExec && !c.hasAction {
		c.issue(root, "", "a task needs an <Actions> element with an <Exec> action")
	}
	if triggers == nil || len(triggers.kids) == 0 {
		return fmt.Errorf("%s: %w: the task has no trigger: Windows runs it only when started by hand, which jobdrop has no task for", file, ErrNoRows)
	}
	c.data["windows.task"] = c.taskName
	for i, t := range triggers.kids {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
		row := c.trigger(t, i+1, len(triggers.kids) > 1)
		if err := emit(*row); err != nil {
			return err
		}
	}
	return nil
}

// winIssue is a problem of the whole task, reported on every trigger's row.
type winIssue struct {
	n     *xmlNode
	value string
	err   error
}

// winConv holds what the triggers of one task share.
type winConv struct {
	file      string
	defaults  Defaults
	folderLoc *time.Location
	action    task.Action
	taskName  string
	data      map[string]string // from the task, for every trigger
	paused    bool
	misfire   task.Misfire
	hasExec   bool
	hasAction bool
	issues    []winIssue
	names     map[string]int // task keys given, by the line that took them
	row       int
}

func (c *winConv) issue(n *xmlNode, value, reason string) {
	c.issues = append(c.issues, winIssue{n, value, errors.New(reason)})
}

// rowErr is an error of the row being read found in element n, named with
// its line when that is not the row's own.
func (c *winConv) rowErr(n *xmlNode, value string, err error) error {
	col := "<" + n.name + ">"
	if n.line != c.row {
		col += fmt.Sprintf(" (line %d)", n.line)
	}
	return &RowError{File: c.file, Row: c.row, Column: col, Value: clip(value), Err: err}
}

func (c *winConv) registration(n *xmlNode) {
	for _, k := range n.kids {
		v := strings.TrimSpace(k.text)
		switch k.name {
		case "URI":
			if name := strings.Trim(strings.ReplaceAll(v, `\`, "/"), "/"); name != "" {
				c.taskName = name
			}
		case "Description":
			c.data["windows.description"] = v
		case "Author":
			c.data["windows.author"] = v
		}
	}
}

func (c *winConv) settings(n *xmlNode) {
	for _, k := range n.kids {
		v := strings.TrimSpace(k.text)
		switch k.name {
		case "Enabled":
			if err := checkBool(v); err != nil {
				c.issue(k, v, err.Error())
			} else if v == "false" || v == "0" {
				c.paused = true
			}
		case "StartWhenAvailable":
			if err := checkBool(v); err != nil {
				c.issue(k, v, err.Error())
			} else if v == "true" || v == "1" {
				c.misfire = task.FireOnce
			}
		case "RunOnlyIfIdle":
			if v == "true" || v == "1" {
				c.issue(k, v, "Windows starts the task only while the machine is idle, which jobdrop cannot know: set it to false, or leave the task on Windows")
			}
		case "ExecutionTimeLimit":
			c.data["windows.executionTimeLimit"] = v
		case "MultipleInstancesPolicy":
			c.data["windows.multipleInstancesPolicy"] = v
		}
	}
}

func (c *winConv) actions(n *xmlNode) {
	for _, k := range n.kids {
		c.hasAction = true
		switch k.name {
		case "Exec":
			if c.hasExec {
				c.issue(k, "", "a second action: Windows runs a task's actions one after the other, jobdrop fires one event per task: keep one <Exec>, or split the task")
				continue
			}
			c.hasExec = true
			cmd := k.value("Command")
			if cmd == "" {
				c.issue(k, "", "an <Exec> action needs a <Command>")
			}
			c.data["windows.command"] = cmd
			if v := k.child("Arguments"); v != nil {
				c.data["windows.arguments"] = strings.TrimSpace(v.text)
			}
			if v := k.child("WorkingDirectory"); v != nil {
				c.data["windows.workingDirectory"] = strings.TrimSpace(v.text)
			}
		case "ComHandler":
			c.issue(k, k.value("ClassId"), "a COM handler runs inside Windows; jobdrop fires an event to Kafka and can name no COM class for it: use an <Exec> action")
		case "SendEmail", "ShowMessage":
			c.issue(k, "", "an e-mail or message action is deprecated in Windows and jobdrop sends neither: use an <Exec> action")
		default:
			c.issue(k, "", "not an action (Exec)")
		}
	}
}
