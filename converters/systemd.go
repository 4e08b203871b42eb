package converters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

// Systemd reads systemd timer units: a .timer file, with the .service it
// activates beside it, or an archive (.tar, .tar.gz, .tgz, .zip) holding
// timers and their services. Each timer becomes one task named by the
// timer's unit name (backup.timer is "backup"), on the folder's default
// host, else "systemd", firing to the folder's default topic:
//
//   - every OnCalendar= line, in systemd's calendar syntax, goes into one
//     cron expression of the systemd dialect (lines joined by "; "): the
//     task fires at the earliest of them, once when two coincide, as the
//     timer does; an expression without a time zone is read in the folder's;
//   - OnUnitActiveSec= (or OnUnitInactiveSec=) is an interval;
//     OnBootSec=, OnStartupSec= and OnActiveSec= count from events jobdrop
//     has not (a boot, the timer's start): beside an interval they are a
//     warning, alone a row error;
//   - Persistent=true fires the latest missed run once (FIRE_ONCE), as
//     systemd does at the next start; without it missed runs are skipped;
//   - RandomizedDelaySec=, AccuracySec= and the other settings are kept in
//     data; OnClockChange= and OnTimezoneChange= are events, a row error;
//   - the service's ExecStart= (each line), User=, Group=,
//     WorkingDirectory=, Environment= and the units' Description= go into
//     data.
//
// A timer whose service is not in the drop is a row error: systemd itself
// refuses to start it.
//
// The zero value is ready to use.
type Systemd struct{}

var _ Converter = Systemd{}

const (
	// maxSystemdBytes bounds one unit file, and maxSystemdArchiveBytes an
	// archive's units together.
	maxSystemdBytes        = 1 << 20
	maxSystemdArchiveBytes = 64 << 20
	maxSystemdUnits        = 10_000
	// systemdDefaultHost is the host of a task when the folder gives none.
	systemdDefaultHost = "systemd"
)

// unitFile is one unit's text and where it came from.
type unitFile struct {
	name  string // backup.timer
	entry string // its path in the archive, "" for a file dropped alone
	text  []byte
	// service is, for a timer, the service it activates.
	service string
}

// at is where a line of the unit is, as errors name it: "line 7" in a
// timer dropped alone, "etc/backup.timer line 7" in an archive.
func (u unitFile) at(line int) string {
	where := u.entry
	if where == "" && !strings.HasSuffix(u.name, ".timer") {
		where = u.name // a service read beside its timer
	}
	switch {
	case line > 0 && where != "":
		return fmt.Sprintf("%s line %d", where, line)
	case line > 0:
		return fmt.Sprintf("line %d", line)
	}
	return where
}

// Convert reads the timer or archive at path; see Converter.
func (Systemd) Convert(ctx context.Context, path string, opts Options, emit func(Row) error) error {
	file := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	lower := strings.ToLower(file)
	if !strings.HasSuffix(lower, ".timer") {
		units, err := readUnitArchive(file, f)
		if err != nil {
			return err
		}
		return Systemd{}.convertUnits(ctx, file, units, opts, emit)
	}
	text, err := readBounded(file, f, maxSystemdBytes, "a timer unit")
	if err != nil {
		return err
	}
	// The service is looked for beside the timer, and beside the folder's
	// .processing, where the watcher puts the timer while it is read.
	service := timerService(file, text)
	units := []unitFile{{name: file, text: text, service: service}}
	dirs := []string{filepath.Dir(path)}
	if filepath.Base(dirs[0]) == ".processing" {
		dirs = append(dirs, filepath.Dir(dirs[0]))
	}
	for _, dir := range dirs {
		if text, err := os.ReadFile(filepath.Join(dir, service)); err == nil {
			units = append(units, unitFile{name: service, text: text})
			break
		}
	}
	return Systemd{}.convertUnits(ctx, file, units, opts, emit)
}

// ConvertReader reads a timer from r as Convert does, with the units
// (services) given beside it; file is the name used in errors.
func (Systemd) ConvertReader(ctx context.Context, file string, r io.Reader, opts Options, emit func(Row) error) error {
	text, err := readBounded(file, r, maxSystemdBytes, "a timer unit")
	if err != nil {
		return err
	}
	return Systemd{}.convertUnits(ctx, file, []unitFile{{name: file, text: text}}, opts, emit)
}

// convertUnits turns each timer of units into a row.
func (Systemd) convertUnits(ctx context.Context, file string, units []unitFile, opts Options, emit func(Row) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	defaults, _, derrs := normalizeDefaults(opts.Defaults)
	var errs []error
	for _, err := range derrs {
		errs = append(errs, &RowError{File: file, Err: err})
	}
	if defaults.Topic == "" {
		errs = append(errs, &RowError{File: file, Column: "topic", Err: errors.New("a timer names no topic: set defaults.topic for the folder")})
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	byName := map[string]*unitFile{}
	activated := map[string]bool{}
	timers := 0
	for i := range units {
		byName[units[i].name] = &units[i]
		if strings.HasSuffix(units[i].name, ".timer") {
			if units[i].service == "" {
				units[i].service = timerService(units[i].name, units[i].text)
			}
			activated[units[i].service] = true
			timers++
		}
	}
	if timers == 0 {
		return fmt.Errorf("%s: %w: no .timer unit (want a timer such as backup.timer, with the backup.service it activates)", file, ErrNoRows)
	}
	archive := len(units) > 0 && units[0].entry != ""
	for i, u := range units {
		if i%64 == 63 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
		if !archive {
			// A timer dropped alone is one row, at its [Timer] section.
			return emit(convertTimer(defaults, file, timerLine(u.text), u, byName[u.service]))
		}
		// In an archive, row n is the archive's n-th file.
		switch {
		case strings.HasSuffix(u.name, ".timer"):
			if err := emit(convertTimer(defaults, file, i+1, u, byName[u.service])); err != nil {
				return err
			}
		case !activated[u.name]:
			// What an archive holds besides timers and their services is
			// no schedule: said, never dropped in silence.
			why := "no timer in the archive activates this service: add its .timer, or remove it from the archive"
			if !strings.HasSuffix(u.name, ".service") {
				why = "not a timer or service unit: jobdrop reads .timer units and the .service units they activate; remove it from the archive"
			}
			if err := emit(Row{Line: i + 1, Err: &RowError{File: file, Row: i + 1, Err: fmt.Errorf("%s: %s", u.entry, why)}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// timerLine is the line of a timer's [Timer] section, 1 when it has none.
func timerLine(text []byte) int {
	for i, l := range strings.Split(string(text), "\n") {
		if strings.TrimSpace(l) == "[Timer]" {
			return i + 1
		}
	}
	return 1
}

// convertTimer converts one timer unit, at position line of the drop, with
// its service (nil when absent).
func convertTimer(defaults Defaults, file string, line int, u unitFile, svc *unitFile) Row {
	service := u.service
	var errs []error
	var warnings []string
	report := func(where, column, value string, err error) {
		if where != "" {
			err = fmt.Errorf("%s: %w", where, err)
		}
		errs = append(errs, &RowError{File: file, Row: line, Column: column, Value: clip(value), Err: err})
	}
	bad := func(at int, column, value string, err error) { report(u.at(at), column, value, err) }
	settings, perrs := parseUnit(u.text)
	for _, err := range perrs {
		bad(0, "", "", err)
	}
	name := strings.TrimSuffix(u.name, ".timer")
	d := task.Definition{Host: defaults.Host, Name: name, Action: task.Action(defaults.Action), Topic: defaults.Topic,
		Timezone: defaults.Timezone, Misfire: task.Skip, Data: map[string]string{}}
	if d.Action == "" {
		d.Action = task.Insert
	}
	if d.Host == "" {
		d.Host = systemdDefaultHost
	}
	d.Data["systemd.timer"] = u.name
	d.Data["systemd.unit"] = service
	d.Data["systemd.source"] = file
	if u.entry != "" {
		d.Data["systemd.source"] += ": " + u.entry
	}

	var calendars []string
	var interval *task.Frequency
	intervalLine, calendarLine := 0, 0
	var relative []unitLine // OnBootSec= and the like
	for _, s := range settings {
		switch s.section {
		case "Unit":
			if s.key == "Description" {
				d.Data["description"] = s.value
			}
			continue
		case "Timer":
		default:
			continue // [Install] and the like say how it is enabled
		}
		col := "[Timer] " + s.key
		switch s.key {
		case "OnCalendar":
			if s.value == "" {
				calendars = nil // an empty assignment resets the list
				continue
			}
			if problem := task.SystemdCalendarProblem(s.value); problem != "" {
				bad(s.line, col, s.value, errors.New(problem))
				continue
			}
			calendars = append(calendars, s.value)
			calendarLine = s.line
		case "OnUnitActiveSec", "OnUnitInactiveSec":
			if s.value == "" {
				interval = nil
				continue
			}
			span, err := systemdTimespan(s.value)
			if err == nil {
				interval, err = durationFrequency(span)
			}
			if err != nil {
				bad(s.line, col, s.value, err)
				continue
			}
			intervalLine = s.line
			if s.key == "OnUnitInactiveSec" {
				warnings = append(warnings, fmt.Sprintf("%s: OnUnitInactiveSec=%s counts from the end of each run; jobdrop fires every %s from the first fire, whatever each run lasts",
					u.at(s.line), s.value, s.value))
			}
		case "OnBootSec", "OnStartupSec", "OnActiveSec":
			if s.value != "" {
				relative = append(relative, s)
			}
		case "Persistent":
			on, err := systemdBool(s.value)
			if err != nil {
				bad(s.line, col, s.value, err)
			} else if on {
				d.Misfire = task.FireOnce
			}
		case "OnClockChange", "OnTimezoneChange":
			if on, err := systemdBool(s.value); err != nil || on {
				bad(s.line, col, s.value, fmt.Errorf("fires on an event (the clock or time zone changing), not at a time: jobdrop has no such trigger; remove the line"))
			}
		case "Unit":
		case "RandomizedDelaySec", "AccuracySec", "FixedRandomDelay", "WakeSystem", "RemainAfterElapse":
			d.Data["systemd."+lowerFirst(s.key)] = s.value
		default:
			warnings = append(warnings, fmt.Sprintf("%s: %s= is not a [Timer] setting systemd knows; ignored, as systemd ignores it", u.at(s.line), s.key))
		}
	}
	switch {
	case len(calendars) > 0 && interval != nil:
		bad(intervalLine, "[Timer] OnUnitActiveSec", "", fmt.Errorf("the timer also has OnCalendar= (line %d): a jobdrop task has one schedule; split it into two timers", calendarLine))
	case len(calendars) > 0:
		d.Cron, d.CronDialect = strings.Join(calendars, "; "), task.DialectSystemd
	case interval != nil:
		d.Frequency, d.Timezone = interval, ""
	}
	for _, s := range relative {
		what := map[string]string{"OnBootSec": "the machine's boot", "OnStartupSec": "systemd's start", "OnActiveSec": "the timer's start"}[s.key]
		if d.Cron == "" && d.Frequency == nil {
			bad(s.line, "[Timer] "+s.key, s.value, fmt.Errorf("counts from %s, which jobdrop has not: give the timer an OnCalendar= or OnUnitActiveSec= schedule", what))
			continue
		}
		warnings = append(warnings, fmt.Sprintf("%s: %s=%s counts from %s, which jobdrop has not; the task follows its other schedule only", u.at(s.line), s.key, s.value, what))
	}
	if d.Cron == "" && d.Frequency == nil && len(relative) == 0 && !hasColumnPrefix(errs, "[Timer] On") {
		bad(0, "[Timer]", "", errors.New("no schedule: a timer has OnCalendar= or OnUnitActiveSec= in its [Timer] section"))
	}

	if svc == nil {
		bad(0, "[Timer] Unit", service, fmt.Errorf("the timer activates %s, which is not in the drop: drop it beside the timer, or both in one archive (.tar, .tar.gz, .zip)", service))
	} else {
		serviceData(d.Data, *svc, func(at int, column string, err error) { report(svc.at(at), column, "", err) })
	}

	for _, fe := range task.FieldErrors(d.Validate()) {
		col := fe.Field
		switch col {
		case "cron":
			col = "[Timer] OnCalendar"
		case "frequency", "frequency.time":
			col = "[Timer] OnUnitActiveSec"
		case "name":
			col = "unit name"
		}
		if hasColumn(errs, col) {
			continue
		}
		bad(0, col, fe.Value, errors.New(fe.Reason))
	}
	row := Row{Line: line, Def: d, Warnings: warnings}
	if len(errs) > 0 {
		row.Err = joinRowErrors(errs)
	}
	return row
}

// serviceData puts what a service runs into data.
func serviceData(data map[string]string, svc unitFile, bad func(at int, column string, err error)) {
	settings, perrs := parseUnit(svc.text)
	for _, err := range perrs {
		bad(0, "", err)
	}
	var exec []string
	for _, s := range settings {
		switch {
		case s.section == "Unit" && s.key == "Description":
			data["systemd.serviceDescription"] = s.value
		case s.section != "Service":
		case s.key == "ExecStart":
			if s.value == "" {
				exec = nil
			} else {
				exec = append(exec, s.value)
			}
		case s.key == "Environment":
			for _, kv := range splitQuoted(s.value) {
				if k, v, ok := strings.Cut(kv, "="); ok {
					data["env."+k] = v
				}
			}
		case s.key == "User", s.key == "Group", s.key == "WorkingDirectory", s.key == "Type", s.key == "EnvironmentFile", s.key == "TimeoutStartSec":
			data["systemd."+lowerFirst(s.key)] = s.value
		}
	}
	if len(exec) == 0 {
		bad(0, "[Service] ExecStart", errors.New("missing: the service runs nothing; give it an ExecStart= line"))
		return
	}
	data["command"] = strings.Join(exec, "\n")
}

func hasColumnPrefix(errs []error, prefix string) bool {
	for _, e := range errs {
		if re, ok := e.(*RowError); ok && strings.HasPrefix(re.Column, prefix) {
			return true
		}
	}
	return false
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// durationFrequency is an interval in the largest unit that divides d.
func durationFrequency(d time.Duration) (*task.Frequency, error) {
	if d < time.Millisecond {
		return nil, errors.New("must be a millisecond or more")
	}
	for _, u := range []struct {
		unit task.TimeUnit
		d    time.Duration
	}{{task.Days, 24 * time.Hour}, {task.Hours, time.Hour}, {task.Minutes, time.Minute}, {task.Seconds, time.Second}, {task.Milliseconds, time.Millisecond}} {
		if d%u.d == 0 {
			if d/u.d > math.MaxInt32 {
				break
			}
			return &task.Frequency{TimeUnit: u.unit, Time: int32(d / u.d)}, nil
		}
	}
	return nil, errors.New("too long an interval, or not a whole number of milliseconds")
}
