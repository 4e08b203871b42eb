package converters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

var winDays = []struct{ name, code string }{
	{"Monday", "MO"}, {"Tuesday", "TU"}, {"Wednesday", "WE"}, {"Thursday", "TH"}, {"Friday", "FR"}, {"Saturday", "SA"}, {"Sunday", "SU"},
}

var winMonths = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}

// trigger turns one trigger element into a task.
func (c *winConv) trigger(t *xmlNode, index int, several bool) *Row {
	c.row = t.line
	row := &Row{Line: t.line}
	var errs []error
	fail := func(k *xmlNode, value string, err error) { errs = append(errs, c.rowErr(k, value, err)) }
	for _, is := range c.issues {
		fail(is.n, is.value, is.err)
	}
	switch t.name {
	case "TimeTrigger", "CalendarTrigger":
	default:
		reason, ok := winTriggerRefusals[t.name]
		if !ok {
			reason = "not a trigger jobdrop can fire (TimeTrigger, CalendarTrigger)"
		}
		fail(t, "", errors.New(reason))
		row.Err = joinRowErrors(errs)
		return row
	}
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
	paused := c.paused

	var start, end *int64
	var startNode, repetition, schedule *xmlNode
	zone, zoneOK := c.defaults.Timezone, true
	for _, k := range t.kids {
		v := strings.TrimSpace(k.text)
		switch k.name {
		case "Id":
		case "Enabled":
			if err := checkBool(v); err != nil {
				fail(k, v, err)
			} else if v == "false" || v == "0" {
				paused = true
			}
		case "StartBoundary", "EndBoundary":
			ms, z, ok, err := winBoundary(v, c.folderLoc)
			if err != nil {
				fail(k, v, err)
				continue
			}
			if k.name == "StartBoundary" {
				start, startNode = &ms, k
				if z != "" {
					zone = z
				}
				zoneOK = ok
			} else {
				end = &ms
			}
		case "ExecutionTimeLimit":
			d.Data["windows.executionTimeLimit"] = v
		case "RandomDelay":
			d.Data["windows.randomDelay"] = v
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s: line %d: <RandomDelay> %s: Windows delays each start by up to that at random; jobdrop fires on time and keeps the delay in data windows.randomDelay", c.file, k.line, v))
		case "Repetition":
			repetition = k
		case "ScheduleByDay", "ScheduleByWeek", "ScheduleByMonth", "ScheduleByMonthDayOfWeek":
			if t.name != "CalendarTrigger" {
				fail(k, "", fmt.Errorf("not an element of a <%s>", t.name))
			} else if schedule != nil {
				fail(k, "", errors.New("a second schedule: a CalendarTrigger holds one ScheduleBy… element"))
			} else {
				schedule = k
			}
		default:
			fail(k, "", fmt.Errorf("not an element of a <%s> jobdrop reads (Id, Enabled, StartBoundary, EndBoundary, Repetition, ExecutionTimeLimit, RandomDelay, ScheduleBy…)", t.name))
		}
	}
	if t.child("StartBoundary") == nil {
		fail(t, "", errors.New("a trigger needs a <StartBoundary>: Windows requires one"))
	}
	d.Start, d.End = start, end
	if paused {
		f := false
		d.Active = &f
	}
	if t.name == "CalendarTrigger" {
		if !zoneOK {
			fail(startNode, startNode.text, errors.New("an offset of hours and minutes has no IANA time zone for a calendar rule: write the boundary without an offset (the folder's time zone) or with a whole-hour offset"))
		}
		d.Timezone = zone
		if schedule == nil {
			fail(t, "", errors.New("a CalendarTrigger needs one of ScheduleByDay, ScheduleByWeek, ScheduleByMonth, ScheduleByMonthDayOfWeek"))
		} else {
			rule, serrs := c.schedule(schedule)
			errs = append(errs, serrs...)
			d.Rrule = rule
		}
	}
	if repetition != nil && start != nil {
		c.repeat(repetition, t.name == "TimeTrigger", schedule, start, &d, fail)
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

// schedule writes a ScheduleBy… element as an RFC 5545 rule.
func (c *winConv) schedule(s *xmlNode) (string, []error) {
	var errs []error
	fail := func(k *xmlNode, value, reason string) { errs = append(errs, c.rowErr(k, value, errors.New(reason))) }
	interval := func(name string, most int) int {
		k := s.child(name)
		if k == nil {
			return 1
		}
		v := strings.TrimSpace(k.text)
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > most {
			fail(k, v, fmt.Sprintf("want a whole number from 1 to %d", most))
			return 1
		}
		return n
	}
	days := func(required bool) []string {
		k := s.child("DaysOfWeek")
		if k == nil || len(k.kids) == 0 {
			if required {
				fail(s, "", "needs <DaysOfWeek> with at least one day")
			}
			return nil
		}
		var out []string
		for _, wd := range winDays {
			if k.child(wd.name) != nil {
				out = append(out, wd.code)
			}
		}
		for _, d := range k.kids {
			if !slices.ContainsFunc(winDays, func(wd struct{ name, code string }) bool { return wd.name == d.name }) {
				fail(d, "", "not a day of the week (Monday … Sunday)")
			}
		}
		return out
	}
	months := func() string {
		k := s.child("Months")
		if k == nil || len(k.kids) == 0 {
			return ""
		}
		var out []string
		for i, m := range winMonths {
			if k.child(m) != nil {
				out = append(out, strconv.Itoa(i+1))
			}
		}
		for _, m := range k.kids {
			if !slices.Contains(winMonths, m.name) {
				fail(m, "", "not a month (January … December)")
			}
		}
		if len(out) == 12 {
			return ""
		}
		return ";BYMONTH=" + strings.Join(out, ",")
	}
	known := func(names ...string) {
		for _, k := range s.kids {
			if !slices.Contains(names, k.name) {
				fail(k, "", fmt.Sprintf("not an element of <%s> (%s)", s.name, strings.Join(names, ", ")))
			}
		}
	}
	withInterval := func(freq string, n int) string {
		if n == 1 {
			return "FREQ=" + freq
		}
		return fmt.Sprintf("FREQ=%s;INTERVAL=%d", freq, n)
	}
	var rule string
	switch s.name {
	case "ScheduleByDay":
		known("DaysInterval")
		rule = withInterval("DAILY", interval("DaysInterval", 365))
	case "ScheduleByWeek":
		known("WeeksInterval", "DaysOfWeek")
		rule = withInterval("WEEKLY", interval("WeeksInterval", 52)) + ";BYDAY=" + strings.Join(days(true), ",")
	case "ScheduleByMonth":
		known("DaysOfMonth", "Months")
		var mdays []string
		if k := s.child("DaysOfMonth"); k != nil {
			for _, d := range k.kids {
				v := strings.TrimSpace(d.text)
				n, err := strconv.Atoi(v)
				switch {
				case d.name != "Day":
					fail(d, "", "not an element of <DaysOfMonth> (Day)")
				case v == "Last":
					mdays = append(mdays, "-1")
				case err != nil || n < 1 || n > 31:
					fail(d, v, "want a day from 1 to 31, or Last")
				default:
					mdays = append(mdays, v)
				}
			}
		}
		if len(mdays) == 0 {
			fail(s, "", "needs <DaysOfMonth> with at least one <Day>")
		}
		rule = "FREQ=MONTHLY;BYMONTHDAY=" + strings.Join(mdays, ",") + months()
	case "ScheduleByMonthDayOfWeek":
		known("Weeks", "DaysOfWeek", "Months")
		var weeks []string
		if k := s.child("Weeks"); k != nil {
			for _, w := range k.kids {
				v := strings.TrimSpace(w.text)
				switch {
				case w.name != "Week":
					fail(w, "", "not an element of <Weeks> (Week)")
				case v == "Last":
					weeks = append(weeks, "-1")
				case v == "1" || v == "2" || v == "3" || v == "4":
					weeks = append(weeks, v)
				default:
					fail(w, v, "want a week from 1 to 4, or Last")
				}
			}
		}
		if len(weeks) == 0 {
			fail(s, "", "needs <Weeks> with at least one <Week>")
		}
		var byday []string
		for _, w := range weeks {
			for _, d := range days(true) {
				byday = append(byday, w+d)
			}
		}
		rule = "FREQ=MONTHLY;BYDAY=" + strings.Join(byday, ",") + months()
	}
	return rule, errs
}

// xsdDuration matches the durations Task Scheduler writes (PT5M, P1D,
// P1DT12H); years and months have no fixed length and are refused.
var xsdDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$`)

// parseWinDuration reads an xsd:duration of days, hours, minutes and
// seconds.
func parseWinDuration(v string) (time.Duration, error) {
	m := xsdDuration.FindStringSubmatch(v)
	if m == nil || v == "P" || strings.HasSuffix(v, "T") {
		return 0, errors.New("want a duration of days, hours, minutes and seconds such as PT15M or P1DT12H")
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 32)
		if err != nil {
			return 0, errors.New("too long a duration")
		}
		d += time.Duration(n) * unit
	}
	if d <= 0 || d > 366*24*time.Hour {
		return 0, errors.New("want a duration above zero and at most a year")
	}
	return d, nil
}

// repeat maps a trigger's Repetition. On a TimeTrigger it is an interval
// from StartBoundary, ending with Duration. On a CalendarTrigger it adds
// times of day to the rule, when BYHOUR, BYMINUTE and BYSECOND can list
// exactly the times Windows starts (start, start + Interval, … before
// start + Duration, all on the start's day); without a Duration on a
// daily schedule, an interval that divides an hour is the same as a plain
// interval from StartBoundary.
func (c *winConv) repeat(r *xmlNode, timeTrigger bool, schedule *xmlNode, start *int64, d *task.Definition, fail func(*xmlNode, string, error)) {
	var interval, duration time.Duration
	for _, k := range r.kids {
		v := strings.TrimSpace(k.text)
		switch k.name {
		case "Interval", "Duration":
			if v == "" {
				continue
			}
			dur, err := parseWinDuration(v)
			if err != nil {
				fail(k, v, err)
				return
			}
			if k.name == "Interval" {
				interval = dur
			} else {
				duration = dur
			}
		case "StopAtDurationEnd":
			// Stops running instances; it changes no start.
			d.Data["windows.stopAtDurationEnd"] = v
		default:
			fail(k, "", errors.New("not an element of <Repetition> (Interval, Duration, StopAtDurationEnd)"))
			return
		}
	}
	if interval == 0 {
		fail(r, "", errors.New("a <Repetition> needs an <Interval>"))
		return
	}
	everyInterval := func() {
		f, ok := intervalFrequency(interval.Milliseconds())
		if !ok {
			fail(r.child("Interval"), r.value("Interval"), errors.New("fits no frequency unit"))
			return
		}
		d.Frequency = &f
	}
	if timeTrigger {
		everyInterval()
		if duration > 0 {
			last := *start + duration.Milliseconds() - 1
			if d.End == nil || last < *d.End {
				d.End = &last
			}
		}
		return
	}
	if duration == 0 {
		if schedule != nil && schedule.name == "ScheduleByDay" && (schedule.value("DaysInterval") == "" || schedule.value("DaysInterval") == "1") && time.Hour%interval == 0 {
			d.Rrule, d.Timezone = "", ""
			everyInterval()
			return
		}
		fail(r, "", errors.New("repeats without end from each start of a calendar schedule; jobdrop can say that only for a daily schedule repeating every hour or a part of an hour: give a <Duration> of at most a day"))
		return
	}
	if duration > 24*time.Hour {
		fail(r.child("Duration"), r.value("Duration"), errors.New("is longer than a day: the repetitions of one day would run into the next; jobdrop can say repetitions within a day only"))
		return
	}
	loc := time.UTC
	if d.Timezone != "" {
		if l, err := time.LoadLocation(d.Timezone); err == nil {
			loc = l
		}
	}
	s := time.UnixMilli(*start).In(loc)
	tod := time.Duration(s.Hour())*time.Hour + time.Duration(s.Minute())*time.Minute + time.Duration(s.Second())*time.Second
	hours, minutes, seconds := map[int]bool{}, map[int]bool{}, map[int]bool{}
	n := 0
	for k := time.Duration(0); k < duration; k += interval {
		at := tod + k
		if at >= 24*time.Hour {
			fail(r, "", fmt.Errorf("repeats past midnight (from %02d:%02d:%02d every %s for %s); jobdrop can say repetitions within a day only", s.Hour(), s.Minute(), s.Second(), r.value("Interval"), r.value("Duration")))
			return
		}
		hours[int(at/time.Hour)] = true
		minutes[int(at%time.Hour/time.Minute)] = true
		seconds[int(at%time.Minute/time.Second)] = true
		n++
	}
	if len(hours)*len(minutes)*len(seconds) != n {
		fail(r, "", fmt.Errorf("starts every %s from %02d:%02d:%02d, times no list of hours × minutes × seconds says exactly; jobdrop cannot say it: use an interval that divides an hour, or a TimeTrigger", r.value("Interval"), s.Hour(), s.Minute(), s.Second()))
		return
	}
	list := func(m map[int]bool) string {
		var out []string
		for v := range 60 {
			if m[v] {
				out = append(out, strconv.Itoa(v))
			}
		}
		return strings.Join(out, ",")
	}
	d.Rrule += ";BYHOUR=" + list(hours) + ";BYMINUTE=" + list(minutes)
	if len(seconds) > 1 || !seconds[s.Second()] {
		d.Rrule += ";BYSECOND=" + list(seconds)
	}
}
