package record

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

// Header names carried by commands on the input topic.
const (
	HeaderBatch = "jobdrop-batch"       // batch id: SHA-256 of the source file
	HeaderFile  = "jobdrop-source-file" // file name as dropped
	// HeaderFolder is the watched folder the file was dropped into, as
	// configured: with the file name, the source a sync folder's file
	// replaces.
	HeaderFolder = "jobdrop-source-folder"
	HeaderRow    = "jobdrop-source-row" // 1-based row (line) in the file
	HeaderActor  = "jobdrop-actor"      // who sent the command
)

// HeaderBarrier marks a record of the input topic that is no command: a
// sync writes one to each input partition and waits until the engine's
// checkpoint on the state topic is past it, so that the tasks recorded
// reflect every command committed before.
const HeaderBarrier = "jobdrop-barrier"

// Header names carried by fired events, so a router needs no JSON parsing.
const (
	HeaderFireHost      = "scheduler-host"
	HeaderFireName      = "scheduler-name"
	HeaderFireID        = "scheduler-fire-id"
	HeaderFireScheduled = "scheduler-scheduled-at"
	// HeaderFireCollapsed is set on a catch-up fire that stands for more
	// than one missed occurrence: how many, itself included (FIRE_ONCE
	// fires the latest of them once; FIRE_ALL drops those beyond
	// task.MaxMisfires).
	HeaderFireCollapsed = "scheduler-collapsed"
)

// Headers of kafka-message-scheduler's protocol. A schedule carries the
// first three; the record it fires carries the last three in their place.
const (
	HeaderScheduleEpoch       = "scheduler-epoch"
	HeaderScheduleTargetTopic = "scheduler-target-topic"
	HeaderScheduleTargetKey   = "scheduler-target-key"
	HeaderScheduleTimestamp   = "scheduler-timestamp"
	HeaderScheduleKey         = "scheduler-key"
	HeaderScheduleTopic       = "scheduler-topic"
)

// HeaderEnd on a state tombstone says why the task ended.
const HeaderEnd = "jobdrop-end"

// Reasons a task ends, carried in HeaderEnd.
const (
	EndCompleted = "completed" // its last occurrence fired
	EndDeleted   = "deleted"   // a DELETE command
)

// Source says where a command came from.
type Source struct {
	Batch  string `json:"batch,omitempty"`
	File   string `json:"file,omitempty"`
	Folder string `json:"folder,omitempty"`
	Row    int    `json:"row,omitempty"`
	Actor  string `json:"actor,omitempty"`
}

// State is the value of a task's record on the state topic: everything the
// engine needs to resume the task on another instance.
type State struct {
	Definition task.Definition `json:"definition"`
	// Anchor is the resolved start; every fire is Anchor + k·period.
	Anchor int64 `json:"anchor"`
	// NextFire is the next occurrence to fire, epoch ms.
	NextFire int64 `json:"nextFire"`
	// FireCount counts the occurrences fired so far.
	FireCount int64 `json:"fireCount"`
	// LastFire is the scheduled time of the last occurrence fired.
	LastFire int64  `json:"lastFire,omitempty"`
	Source   Source `json:"source"`
	// UpdatedAt is when the engine last wrote this record.
	UpdatedAt int64 `json:"updatedAt"`
	// Fault is set while an occurrence of the task is refused by the
	// brokers for a reason of the task's own, and once the engine's fault
	// policy paused the task for it. Any command on the task clears it.
	Fault *Fault `json:"fault,omitempty"`
	// Format is FormatAvro for a task whose command came as
	// light-scheduler's Avro: its fired events are Avro too. Empty: JSON.
	Format string `json:"format,omitempty"`
	// Chain is where a chained task stands with its predecessors.
	Chain *Chain `json:"chain,omitempty"`
}

// FormatAvro is State.Format of a task that came as light-scheduler's
// Avro records, in Confluent's framing.
const FormatAvro = "avro"

// Fault is an occurrence whose fired event the brokers refused for a
// reason of its task's own (too large for its target topic, a target
// topic missing or not authorised, a policy violation): the occurrence the
// engine fires again, or the reason it paused the task.
type Fault struct {
	// Occurrence is the scheduled time of the refused occurrence; it keeps
	// its fire id through every attempt.
	Occurrence int64 `json:"occurrence"`
	// Attempts counts the refused attempts at firing it.
	Attempts int `json:"attempts"`
	// Reason is the brokers' answer to the last attempt.
	Reason string `json:"reason"`
	// At is when the last attempt was refused.
	At int64 `json:"at"`
	// RetryAt is when the next attempt is due (the state's NextFire too);
	// zero once the task is paused.
	RetryAt int64 `json:"retryAt,omitempty"`
	// Paused is set when the fault policy paused the task after its last
	// attempt: the definition then says active: false.
	Paused bool `json:"paused,omitempty"`
}

// Description says what the fault means for the task, for people:
// "paused by fault policy: REASON" or "fire refused (attempt 2): REASON".
func (f *Fault) Description() string {
	if f.Paused {
		return PausedByFaultPolicy + ": " + f.Reason
	}
	return "fire refused (attempt " + strconv.Itoa(f.Attempts) + "): " + f.Reason
}

// PausedByFaultPolicy opens the description of a task the engine paused
// because its fires kept being refused.
const PausedByFaultPolicy = "paused by fault policy"

// Fired is the value of an event on a task's target topic.
type Fired struct {
	Host        string            `json:"host"`
	Name        string            `json:"name"`
	Data        map[string]string `json:"data"`
	ScheduledAt int64             `json:"scheduledAt"`
	// FiredAt is when the engine fired it: when it began the transaction
	// that commits it, or, for a transaction written ahead and committed
	// once its fires are due, their due time (never before ScheduledAt).
	FiredAt int64  `json:"firedAt"`
	FireID  string `json:"fireId"`
	// Triggered marks a fire asked for by hand (TRIGGER or RELEASE),
	// outside the schedule.
	Triggered bool `json:"triggered,omitempty"`
	// Attempt is the attempt of a retry (2 for the first retry), Run the
	// fire id of its run's first attempt; both absent on a first attempt.
	Attempt int    `json:"attempt,omitempty"`
	Run     string `json:"run,omitempty"`
	// After lists the runs of the predecessors (their first attempts'
	// fire ids) that released a chained task's fire.
	After []string `json:"after,omitempty"`
}

// Execution is the value of a record on the executions topic, keyed by
// fire id, committed in the same transaction as the fired event.
type Execution struct {
	FireID      string `json:"fireId"`
	Host        string `json:"host"`
	Name        string `json:"name"`
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	ScheduledAt int64  `json:"scheduledAt"`
	// FiredAt is the fired event's (Fired.FiredAt).
	FiredAt int64  `json:"firedAt"`
	Batch   string `json:"batch,omitempty"`
	// Timeout is the task's timeout in milliseconds: an execution with no
	// final status by FiredAt+Timeout is overdue. Zero: no timeout.
	Timeout int64 `json:"timeout,omitempty"`
	// Collapsed is, for a catch-up fire that stands for more than one
	// missed occurrence, how many it stands for, itself included (as
	// HeaderFireCollapsed says on its event); zero otherwise.
	Collapsed int `json:"collapsed,omitempty"`
	// Attempt, Run and After are those of the fired event (see Fired):
	// the attempt of a retry and its run's first fire id, and the
	// predecessors' runs that released a chained task's fire.
	Attempt int      `json:"attempt,omitempty"`
	Run     string   `json:"run,omitempty"`
	After   []string `json:"after,omitempty"`
}

// Execution statuses. FIRED is implied by the execution record; the others
// are reported by workers on the status topic.
const (
	StatusFired   = "FIRED"
	StatusRunning = "RUNNING"
	StatusSuccess = "SUCCESS"
	StatusFailed  = "FAILED"
	// StatusOverdue is shown, never written: an execution with no final
	// status past its timeout.
	StatusOverdue = "OVERDUE"
)

// Status is a worker's report on an execution, keyed by fire id: a new
// status, lines for the execution's log, or both. A record with lines and
// no status only adds to the log.
type Status struct {
	FireID  string `json:"fireId"`
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Worker  string `json:"worker,omitempty"`
	At      int64  `json:"at"`
	// Logs are lines the worker appends to the execution's log.
	Logs []LogLine `json:"logs,omitempty"`
}

// LogLine is one line of an execution's log.
type LogLine struct {
	// At is when the worker wrote it, epoch ms.
	At int64 `json:"at"`
	// Level is LevelInfo or LevelError.
	Level   string `json:"level"`
	Message string `json:"message"`
}

// Levels of a log line.
const (
	LevelInfo  = "info"
	LevelError = "error"
)

// MaxLogMessage bounds the bytes of one log line's message; a longer one
// is cut, and says so.
const MaxLogMessage = 16 << 10

// ReaperWorker is the worker a reaped execution's FAILED status names:
// one left without a final status past its timeout and the grace after
// it.
const ReaperWorker = "reaper"

// Audit actions.
const (
	// A file's arrival: seen in a watched folder, taken by a node for
	// conversion, failed before anything was recorded of its content, or
	// gone from the folder before any node took it. Once handled, a file
	// of a batch is moved to its folder's archive/ or failed/: the moved
	// event's Object is the path it was given there, not the dropped name
	// when an earlier file holds that (inbox/archive/jobs.20261122T101500Z.csv).
	ActionFileReceived   = "file.received"
	ActionFileConverting = "file.converting"
	ActionFileFailed     = "file.failed"
	ActionFileWithdrawn  = "file.withdrawn"
	ActionFileInjected   = "file.injected"
	ActionFileRejected   = "file.rejected"
	ActionFileDuplicate  = "file.duplicate"
	ActionFileMoved      = "file.moved"
	// A file of a sync folder that would remove too much of its source
	// waits in held/ for an operator's Apply (then injected) or Reject
	// (then rejected).
	ActionFileHeld = "file.held"
	// A console user uploaded a file into a watched folder: the batch
	// names its content, the detail its size and folder.
	ActionFileUploaded  = "file.uploaded"
	ActionTaskCreated   = "task.created"
	ActionTaskUpdated   = "task.updated"
	ActionTaskDeleted   = "task.deleted"
	ActionTaskTriggered = "task.triggered"
	ActionTaskPaused    = "task.paused"
	// An occurrence's fired event refused by the brokers for a reason of
	// its task's own (outcome failed, the brokers' answer in the detail),
	// and a refused occurrence fired on a later attempt.
	ActionTaskFireRefused = "task.fire_refused"
	ActionTaskFireRetried = "task.fire_retried"
	ActionTaskResumed     = "task.resumed"
	ActionTaskRejected    = "task.rejected"
	// ActionScheduleRejected is a record of a schedule topic that is no
	// valid schedule; ActionScheduleDropped one that arrived past due by
	// more than the grace.
	ActionScheduleRejected = "schedule.rejected"
	ActionScheduleDropped  = "schedule.dropped"
	// An execution left without a final status past its task's timeout
	// and the grace after it, marked FAILED.
	ActionExecutionReaped = "execution.reaped"
	// A request refused: wrong role, or a cross-origin write.
	ActionAccessDenied = "access.denied"
	// A node started, and had read everything committed before.
	ActionNodeStarted = "node.started"
	// A node found at its start that its run before did not stop cleanly
	// (killed, crashed, or its machine went down): the detail says when
	// that run started. Written before the start's own node.started.
	ActionNodeUncleanStop = "node.unclean_stop"
	// A console user logged in (or was refused: outcome rejected) or out.
	ActionLogin  = "user.login"
	ActionLogout = "user.logout"
	// Failed logins slowed down, then locked, a user name or a client
	// address: once in a run of failures, not for every attempt.
	ActionLoginThrottled = "user.throttled"
	// A node started with a configuration other than the one it last ran
	// with (or its first): the detail lists the changed keys.
	ActionConfigChanged = "config.changed"
)

// Audit outcomes.
const (
	OutcomeOK       = "ok"
	OutcomeRejected = "rejected"
	OutcomeNoChange = "unchanged"
	OutcomeFailed   = "failed"
)

// Audit is one event of the audit trail: who did what to which object, when,
// and how it ended.
type Audit struct {
	ID      string `json:"id"`
	At      int64  `json:"at"`
	Actor   string `json:"actor"`
	Action  string `json:"action"`
	Object  string `json:"object"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
	// Batch is set on file events.
	Batch *Batch `json:"batch,omitempty"`
	// Arrival is set on the events of a file's arrival, before its
	// content is known.
	Arrival *Arrival `json:"arrival,omitempty"`
}

// NewAudit is the one way to make an audit event: actor did action to
// object at at, and it ended in outcome. Set Detail, Batch and Arrival on
// what it returns.
//
// The event's ID is 128 random bits in hex, its own whatever else it
// holds: the store keeps one row per ID, so two events alike in every
// field, even within one millisecond, are both kept. A replay of the
// audit topic still stores each event once, since the ID travels in the
// record. An event that must be stored once however often it is written
// takes its ID from Keyed instead.
func NewAudit(at time.Time, actor, action, object, outcome string) Audit {
	var id [16]byte
	rand.Read(id[:]) // never fails: it crashes the program instead
	return Audit{ID: hex.EncodeToString(id[:]), At: at.UnixMilli(), Actor: actor, Action: action, Object: object,
		Outcome: outcome}
}

// Keyed returns a with an ID that follows from its action and key, for an
// event that is one event however often it is written: by two nodes that
// both do the same thing (reap one execution), or by a retry or a replay
// of what it answers (a schedule record read again after an aborted
// transaction). The store keeps the first and drops the others. key must
// name that one thing within the action: a fire id, a record's place in
// its topic. A keyed ID holds a colon and a random one never does, so the
// two never meet.
func (a Audit) Keyed(key string) Audit {
	a.ID = a.Action + ":" + key
	return a
}

// Key is the event's record key on the audit topic. The events of one
// file share one, so they are read in order: its arrival's ID, or else its
// batch's; any other event goes by its actor.
func (a Audit) Key() string {
	switch {
	case a.Arrival != nil:
		return a.Arrival.ID
	case a.Batch != nil && a.Batch.Arrival != "":
		return a.Batch.Arrival
	case a.Batch != nil && a.Batch.ID != "":
		return a.Batch.ID
	}
	return a.Actor
}

// Arrival is a file on its way in, named by ArrivalID of its folder and
// name: the console shows it from the moment a watcher sees it until its
// batch is recorded.
type Arrival struct {
	ID     string `json:"id"`
	File   string `json:"file"`
	Folder string `json:"folder,omitempty"`
}

// ArrivalID names the arrival of the file called name in folder. Every
// event of one arrival is keyed by it, so they stay in order.
func ArrivalID(folder, name string) string {
	h := sha256.Sum256([]byte(folder + "\x00" + name))
	return hex.EncodeToString(h[:12])
}

// MaxBatchErrors bounds the row errors a batch record carries; the error
// report beside the file has more.
const MaxBatchErrors = 100

// Batch describes one file's journey; it rides on the file's audit events.
type Batch struct {
	ID       string `json:"id"`
	File     string `json:"file"`
	Folder   string `json:"folder,omitempty"`
	Size     int64  `json:"size"`
	Rows     int    `json:"rows"`
	Rejected int    `json:"rejected"`
	// Errors holds the first row errors of a rejected file, one per line.
	Errors []string `json:"errors,omitempty"`
	// Warnings holds the first of what is valid but doubtful in its rows
	// (a cron expression two dialects read apart), one per line.
	Warnings []string `json:"warnings,omitempty"`
	// Arrival is the ArrivalID of the file when it came from a watched
	// folder: recording the batch ends the arrival.
	Arrival string `json:"arrival,omitempty"`
	// Diff is set on the events of a file of a sync folder: what it
	// changes of the tasks earlier versions of its source created.
	Diff *Diff `json:"diff,omitempty"`
}

// MaxDiffLines bounds the lines of a diff its events carry; the console
// shows them, and a held file's report beside it has them all.
const MaxDiffLines = 200

// Diff is what a new version of a sync source changes: counts, and its
// first changes, one per line ("+ acme/x: cron 0 2 * * *", "~ acme/y:
// cron 0 2 * * * → cron 30 2 * * *", "- acme/z: every hour").
type Diff struct {
	Added     int      `json:"added"`
	Changed   int      `json:"changed"`
	Removed   int      `json:"removed"`
	Unchanged int      `json:"unchanged"`
	Scope     int      `json:"scope"`
	Lines     []string `json:"lines,omitempty"`
	// Held says why the file waits for an operator, when it does.
	Held string `json:"held,omitempty"`
}

// TriggerFireID is the id of a fire asked for by a TRIGGER command: derived
// from the command's place in the input topic, so it is the same however
// often the command is replayed, and never equal to a scheduled fire's.
func TriggerFireID(host, name string, partition int32, offset int64) string {
	return FireID(host, name+"\x00trigger\x00"+strconv.Itoa(int(partition)), offset)
}

// FireID is the deterministic id of one occurrence of a task, so that
// downstream consumers can deduplicate.
func FireID(host, name string, scheduledAt int64) string {
	// sha256 of host/name@scheduledAt, built on the stack: every fire
	// computes one.
	var buf [256]byte
	b := append(append(append(buf[:0], host...), '/'), name...)
	b = strconv.AppendInt(append(b, '@'), scheduledAt, 10)
	h := sha256.Sum256(b)
	var id [32]byte
	hex.Encode(id[:], h[:16])
	return string(id[:])
}
