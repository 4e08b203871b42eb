package record

import "fmt"

// Topics names jobdrop's own topics. Target topics are named by each task.
type Topics struct {
	// Input carries commands. Defaults to "light-scheduler".
	Input string `yaml:"input"`
	// State is the compacted changelog of task state. Defaults to
	// "light-scheduler-state".
	State string `yaml:"state"`
	// Executions carries one record per fire. Defaults to
	// "light-scheduler-executions".
	Executions string `yaml:"executions"`
	// Status carries workers' execution reports. Defaults to
	// "light-scheduler-status".
	Status string `yaml:"status"`
	// Audit carries the audit trail. Defaults to "light-scheduler-audit".
	Audit string `yaml:"audit"`
}

// WithDefaults fills the names left empty.
func (t Topics) WithDefaults() Topics {
	set := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	set(&t.Input, "light-scheduler")
	set(&t.State, "light-scheduler-state")
	set(&t.Executions, "light-scheduler-executions")
	set(&t.Status, "light-scheduler-status")
	set(&t.Audit, "light-scheduler-audit")
	return t
}

// All lists the topic names.
func (t Topics) All() []string { return []string{t.Input, t.State, t.Executions, t.Status, t.Audit} }

// CheckTarget says why topic cannot be the target of a task, in words
// that follow the topic's name: the state, executions, status and audit
// topics hold jobdrop's own records, which fired events would corrupt. The input topic may be one, as it is in
// light-scheduler's own example: the engine tells the events fired into
// it from commands by their fire id header, and skips them.
func (t Topics) CheckTarget(topic string) error {
	for _, own := range []struct{ name, what string }{
		{t.State, "state"}, {t.Executions, "executions"}, {t.Status, "status"}, {t.Audit, "audit"},
	} {
		if topic != "" && topic == own.name {
			return fmt.Errorf("is jobdrop's %s topic, which fired events would corrupt; name another topic", own.what)
		}
	}
	return nil
}
