package record

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
