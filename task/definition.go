package task

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Action says what a command does to the task named by its key.
type Action string

// The actions of light-scheduler's DefinitionAction enum.
const (
	// Insert creates the task; inserting a definition identical to the stored
	// one changes nothing, inserting a different one replaces it.
	Insert Action = "INSERT"
	// Update replaces the stored definition (or creates it).
	Update Action = "UPDATE"
	// Delete stops the task and forgets it.
	Delete Action = "DELETE"
	// Trigger fires the task once now, outside its schedule, without
	// changing it. Only the key is needed.
	Trigger Action = "TRIGGER"
	// Release fires a chained task now, as if its predecessors had just
	// released it: what an operator does with a chain held by a failure.
	// Only the key is needed.
	Release Action = "RELEASE"
	// SkipRun lets a chained task's current run go without firing: the
	// predecessors' outcomes it waited on are spent. Only the key is
	// needed.
	SkipRun Action = "SKIP"
)

// OneOff reports whether a command of this action acts once on a task
// that exists (TRIGGER, RELEASE, SKIP) and leaves its definition as it is.
func (a Action) OneOff() bool { return a == Trigger || a == Release || a == SkipRun }

// KeyOnly reports whether a command of this action needs only its key.
func (a Action) KeyOnly() bool {
	return a == Delete || a.OneOff()
}

// Misfire says what a task does about occurrences missed while no engine
// could fire them (downtime, a long pause of the whole group).
type Misfire string

// The misfire policies.
const (
	// FireOnce fires the latest missed occurrence once, then goes on. The
	// default.
	FireOnce Misfire = "FIRE_ONCE"
	// FireAll fires every missed occurrence, oldest first, up to
	// MaxMisfires of them.
	FireAll Misfire = "FIRE_ALL"
	// Skip fires none of them and waits for the next occurrence.
	Skip Misfire = "SKIP"
)

// MaxMisfires bounds how many missed occurrences FIRE_ALL replays.
const MaxMisfires = 1000

// Window restricts fires to a local time range on some weekdays, in the
// task's time zone: a fire due outside moves to the next opening.
type Window struct {
	// From and To are local times "HH:MM"; To before From spans midnight.
	From string `json:"from"`
	To   string `json:"to"`
	// Days are weekdays "MON".."SUN"; empty means every day.
	Days []string `json:"days,omitempty"`
}

// TimeUnit is the unit of a Frequency, as light-scheduler's TimeUnit enum.
type TimeUnit string

// The five time units of light-scheduler.
const (
	Milliseconds TimeUnit = "MILLISECONDS"
	Seconds      TimeUnit = "SECONDS"
	Minutes      TimeUnit = "MINUTES"
	Hours        TimeUnit = "HOURS"
	Days         TimeUnit = "DAYS"
)

// Duration is the length of one unit; zero for an unknown unit.
func (u TimeUnit) Duration() time.Duration {
	switch u {
	case Milliseconds:
		return time.Millisecond
	case Seconds:
		return time.Second
	case Minutes:
		return time.Minute
	case Hours:
		return time.Hour
	case Days:
		return 24 * time.Hour
	}
	return 0
}

// ParseTimeUnit accepts a unit name in any case, singular or plural
// ("minute", "Minutes", "MINUTES").
func ParseTimeUnit(s string) (TimeUnit, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasSuffix(u, "S") {
		u += "S"
	}
	if TimeUnit(u).Duration() == 0 {
		return "", fmt.Errorf("unknown time unit %q (want one of MILLISECONDS, SECONDS, MINUTES, HOURS, DAYS)", s)
	}
	return TimeUnit(u), nil
}

// Frequency is a fixed repeat interval: Time units of TimeUnit.
type Frequency struct {
	TimeUnit TimeUnit `json:"timeUnit"`
	Time     int32    `json:"time"`
}

// Period is the interval between two fires.
func (f Frequency) Period() time.Duration { return time.Duration(f.Time) * f.TimeUnit.Duration() }

// Definition is one scheduler command. The first seven fields are
// light-scheduler's TaskDefinition Avro record; the others are optional
// extensions that light-scheduler clients never send.
type Definition struct {
	Host      string            `json:"host"`
	Name      string            `json:"name"`
	Action    Action            `json:"action"`
	Frequency *Frequency        `json:"frequency"`
	Topic     string            `json:"topic"`
	Start     *int64            `json:"start"`
	Data      map[string]string `json:"data"`

	// Cron is a cron expression, read in CronDialect; it replaces
	// Frequency.
	Cron string `json:"cron,omitempty"`
	// CronDialect says how Cron is read: unix, quartz, spring or systemd. Empty
	// or auto picks one from the expression (see Dialect), so converters
	// write the dialect they resolved and the task keeps it.
	CronDialect Dialect `json:"cronDialect,omitempty"`
	// Rrule is an RFC 5545 recurrence rule, "FREQ=MONTHLY;BYDAY=2TU"
	// (the "RRULE:" prefix is optional), optionally followed, one per line
	// or after a space, by "EXDATE:…" and "RDATE:…" lines of local times
	// YYYYMMDDTHHMMSS (UTC with a trailing Z). Start is its DTSTART and
	// Timezone its zone; it replaces Frequency and Cron.
	Rrule string `json:"rrule,omitempty"`
	// Timezone is the IANA zone Cron or Rrule is evaluated in. Defaults
	// to UTC.
	Timezone string `json:"timezone,omitempty"`
	// End is the last possible fire time, epoch milliseconds.
	End *int64 `json:"end,omitempty"`
	// Window restricts when the task may fire.
	Window *Window `json:"window,omitempty"`
	// Misfire is the policy for occurrences missed while down. Defaults
	// to FIRE_ONCE.
	Misfire Misfire `json:"misfire,omitempty"`
	// Active false pauses the task: it keeps its schedule but fires
	// nothing until resumed. Absent means active.
	Active *bool `json:"active,omitempty"`
	// Timeout, in milliseconds, flags an execution with no final status
	// that long after its fire as overdue. Zero means no timeout.
	Timeout int64 `json:"timeout,omitempty"`
	// Message, when set, is the record the task fires in place of
	// jobdrop's event: a schedule of kafka-message-scheduler's protocol.
	Message *Message `json:"message,omitempty"`

	// After names the tasks this one follows (its predecessors): a name
	// alone is a task of the same host, "host/name" one of another. The
	// task fires once each time every predecessor's run has ended in the
	// outcome On waits for, Delay later; with a schedule of its own, an
	// occurrence waits for them instead (see docs/chains.md).
	After []string `json:"after,omitempty"`
	// On is the predecessors' outcome the task waits for: success (the
	// default), failure or done.
	On Outcome `json:"on,omitempty"`
	// Delay, in milliseconds, is the wait between the predecessors'
	// outcome and the fire.
	Delay int64 `json:"delay,omitempty"`
	// Retry fires a failed execution again, as the next attempt of the
	// same run.
	Retry *Retry `json:"retry,omitempty"`
}

// Paused reports whether the task is paused.
func (d *Definition) Paused() bool { return d.Active != nil && !*d.Active }

// Key is the record key of the task in every topic: host + "/" + name.
func (d *Definition) Key() string { return Key(d.Host, d.Name) }

// Key joins a host and a task name into a task key.
func Key(host, name string) string { return host + "/" + name }

// SplitKey is the inverse of Key.
func SplitKey(key string) (host, name string, ok bool) {
	return strings.Cut(key, "/")
}

// Repeats reports whether the task fires more than once.
func (d *Definition) Repeats() bool { return d.Frequency != nil || d.Cron != "" || d.Rrule != "" }

// Equal reports whether two definitions describe the same task the same way.
func (d *Definition) Equal(o *Definition) bool {
	a, _ := json.Marshal(d)
	b, _ := json.Marshal(o)
	return string(a) == string(b)
}

// Ptr returns a pointer to v; handy for the optional epoch fields.
func Ptr[T any](v T) *T { return &v }

// Time converts epoch milliseconds to a UTC time.
func Time(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// When says in a few words when d fires: "every 5
// minutes", "cron 0 2 * * * (Europe/Paris)", "rrule FREQ=MONTHLY;BYDAY=2TU
// (Europe/Paris)", "once", with ", until …"
// when it has an end.
func (d *Definition) When() string {
	var s string
	switch {
	case d.Cron != "":
		s = "cron " + d.Cron
		switch dialect := d.Dialect(); dialect {
		case DialectUnix:
		case DialectSystemd:
			s = "systemd calendar " + d.Cron
		default:
			// Name the dialect where the numbers mean something else
			// than cron's: "quartz cron 0 0 12 ? * 2-6".
			s = string(dialect) + " " + s
		}
		if d.Timezone != "" {
			s += " (" + d.Timezone + ")"
		}
	case d.Rrule != "":
		s = "rrule " + strings.Join(strings.Fields(strings.TrimPrefix(strings.TrimSpace(d.Rrule), "RRULE:")), " ")
		if d.Timezone != "" {
			s += " (" + d.Timezone + ")"
		}
	case d.Frequency != nil:
		unit := strings.ToLower(strings.TrimSuffix(string(d.Frequency.TimeUnit), "S"))
		if d.Frequency.Time == 1 {
			s = "every " + unit
		} else {
			s = fmt.Sprintf("every %d %ss", d.Frequency.Time, unit)
		}
	case d.Chained():
		s = d.chainWhen()
	default:
		s = "once"
	}
	if d.Chained() && !d.ChainOnly() {
		s += ", " + d.chainWhen()
	}
	if d.End != nil {
		s += ", until " + Time(*d.End).Format(time.RFC3339)
	}
	return s
}
