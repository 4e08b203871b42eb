package storetype

import "time"

// ActivityChart is what happened over a span of time, step by step, for
// the dashboard's charts: the executions of each step (by the time they
// are shown, as the lists filter them), those of them that failed, and
// how late they fired.
type ActivityChart struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// StepSeconds is the length of each bucket.
	StepSeconds int64 `json:"stepSeconds"`
	// Fires, Failures and the lateness figures are those of the whole
	// span, as each bucket's are of its step.
	Fires         int              `json:"fires"`
	Failures      int              `json:"failures"`
	LatenessP50Ms int64            `json:"latenessP50Ms"`
	LatenessP99Ms int64            `json:"latenessP99Ms"`
	LatenessMaxMs int64            `json:"latenessMaxMs"`
	Buckets       []ActivityBucket `json:"buckets"`
}

// ActivityBucket is one step of an ActivityChart, from Start for the
// chart's step.
type ActivityBucket struct {
	Start time.Time `json:"start"`
	// Fires counts the executions of the step; Failures those of them
	// that failed.
	Fires    int `json:"fires"`
	Failures int `json:"failures"`
	// Lateness is how late the step's fires fired (fired less
	// scheduled), in milliseconds: the median and the 99th percentile
	// (nearest rank: the value below which that share of the fires
	// fall, or at which they are) and the largest. Zero without fires of
	// known schedule.
	LatenessP50Ms int64 `json:"latenessP50Ms"`
	LatenessP99Ms int64 `json:"latenessP99Ms"`
	LatenessMaxMs int64 `json:"latenessMaxMs"`
}

// TaskSchedule is what the fires of a task to come are computed from:
// its definition (JSON), the anchor its fires are counted from and its
// next fire, with its host and topic to group them by.
type TaskSchedule struct {
	Key        string
	Host       string
	Topic      string
	Definition string
	Anchor     time.Time
	NextFire   time.Time
}
