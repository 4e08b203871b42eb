package main

import (
	"time"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/pace"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/scheduler"
)

// Config is the whole configuration file; samples/jobdrop.yaml documents
// every key.
type Config struct {
	// DataDir holds the SQLite file and the embedded broker's data.
	DataDir   string          `yaml:"data_dir"`
	Node      string          `yaml:"node"`
	Kafka     kafka.Config    `yaml:"kafka"`
	Topics    record.Topics   `yaml:"topics"`
	Console   ConsoleConfig   `yaml:"console"`
	Watch     []Folder        `yaml:"watch"`
	Watcher   WatcherConfig   `yaml:"watcher"`
	Scheduler SchedulerConfig `yaml:"scheduler"`
	Pacing    pace.Pacing     `yaml:"pacing"`
	Log       LogConfig       `yaml:"log"`
	// MessageScheduler reads kafka-message-scheduler's schedule topics.
	MessageScheduler MessageSchedulerConfig `yaml:"message_scheduler"`
	// Executions says how long executions may stay unfinished and how
	// much of their logs is kept.
	Executions ExecutionsConfig `yaml:"executions"`
}

// WatcherConfig tunes how files are detected.
type WatcherConfig struct {
	StableChecks  int           `yaml:"stable_checks"`
	CheckInterval time.Duration `yaml:"check_interval"`
	Rescan        time.Duration `yaml:"rescan"`
	// StallAfter is how long a folder may make no headway with a file
	// (no row read, no record acknowledged) for a reason outside it (the
	// brokers unreachable or refusing writes, a full disk) before the
	// node reports the folder stalled: /readyz fails naming it, and the
	// console and the metrics say so. Defaults to 1m.
	StallAfter time.Duration `yaml:"stall_after"`
	// SlowAfter is how long a file may stay in .processing/ before the
	// console and the metrics point at it, even while it makes progress
	// (a very large file). Defaults to 10m.
	SlowAfter time.Duration `yaml:"slow_after"`
}

// SchedulerConfig tunes the engine.
type SchedulerConfig struct {
	// Group is the consumer group the instances share.
	Group string `yaml:"group"`
	// SessionTimeout is how long the group waits for a silent instance
	// before its partitions move to the others.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// MaxFiresPerTxn caps the fires committed in one transaction.
	MaxFiresPerTxn int `yaml:"max_fires_per_txn"`
	// FireAhead is how long before their due time, at most, the
	// transaction of occurrences due soon is written, to commit once they
	// are due; negative: never ahead.
	FireAhead time.Duration `yaml:"fire_ahead"`
	// MaxFiresAhead caps the fires of one transaction written ahead.
	MaxFiresAhead int `yaml:"max_fires_ahead"`
	// Refused is what becomes of an occurrence whose fired event the
	// brokers refuse for a reason of the task's own.
	Refused scheduler.FaultPolicy `yaml:"refused_fires"`
}

// LogConfig configures logging.
type LogConfig struct {
	// Level is debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is text or json; empty picks text on a terminal, json elsewhere.
	Format string `yaml:"format"`
}

// defaultConfig is what jobdrop runs with when no file is given.
func defaultConfig() Config {
	return Config{
		DataDir: "./data",
		Console: ConsoleConfig{Listen: "127.0.0.1:8080"},
		Watch:   []Folder{{Dir: "./inbox"}},
		Log:     LogConfig{Level: "info"},
		// A burst of fires commits within tens of milliseconds on an
		// idle node: a scheduler later than this is held up.
		Pacing: pace.Pacing{Lateness: defaultPacingLateness, RecorderLateness: defaultRecorderLateness},
	}
}

// defaultPacingLateness is pacing.lateness when the configuration does not
// say.
const defaultPacingLateness = 250 * time.Millisecond

// defaultRecorderLateness is pacing.recorder_lateness when the
// configuration does not say: past the few milliseconds a steady schedule
// runs late at most, the scheduler is in a burst, and the console's
// database can wait for it.
const defaultRecorderLateness = 20 * time.Millisecond
