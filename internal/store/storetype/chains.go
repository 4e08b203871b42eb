package storetype

import "time"

// Chain is where a task that follows others stands with them, as the
// engine last wrote it in the task's state.
type Chain struct {
	// Preds holds, for each predecessor whose run ended since the task
	// was defined, the latest such run, in the order its after names
	// them.
	Preds []PredRun `json:"preds,omitempty"`
	// Held says why the task waits for an operator (or a new run of the
	// predecessor): a predecessor's run failed and the task waits for
	// success. Empty otherwise.
	Held string `json:"held,omitempty"`
	// Release is a fire on its way: the task fires at its time.
	Release *ChainRelease `json:"release,omitempty"`
	// Waiting is the scheduled time of an occurrence of a task with a
	// schedule of its own that waits for its predecessors to release it.
	Waiting *time.Time `json:"waiting,omitempty"`
}

// PredRun is the latest run of a predecessor that ended.
type PredRun struct {
	// Key is the predecessor's.
	Key string `json:"key"`
	// Run is the fire id of the run's first attempt, Fire that of the
	// attempt that ended it.
	Run  string `json:"run"`
	Fire string `json:"fire,omitempty"`
	// Status is SUCCESS or FAILED.
	Status string    `json:"status"`
	At     time.Time `json:"at"`
	// Fresh marks a run not spent yet on a fire (or a skip) of the task.
	Fresh bool `json:"fresh,omitempty"`
}

// ChainRelease is a chained task's fire to come: at At, with fire id
// FireID, released by the predecessors' runs Runs.
type ChainRelease struct {
	At     time.Time `json:"at"`
	FireID string    `json:"fireId"`
	Runs   []string  `json:"runs,omitempty"`
}

// Failed returns the runs of the predecessors that failed, in the order
// the task names them: where a held chain stopped.
func (c *Chain) Failed() []PredRun {
	if c == nil {
		return nil
	}
	var out []PredRun
	for _, p := range c.Preds {
		if p.Status == ExecutionFailed {
			out = append(out, p)
		}
	}
	return out
}

// Waits reports whether the task waits for the rest of its predecessors
// or for its own time: a release on its way, an occurrence waiting, or a
// predecessor's run it has not spent yet. A held chain does not count.
func (c *Chain) Waits() bool {
	if c == nil || c.Held != "" {
		return false
	}
	if c.Release != nil || c.Waiting != nil {
		return true
	}
	for _, p := range c.Preds {
		if p.Fresh {
			return true
		}
	}
	return false
}

// ChainNode is a task as a chain shows it: its state, where it stands
// with its own predecessors, and its latest execution.
type ChainNode struct {
	Key string `json:"key"`
	// Status is the task's state (active, paused, completed or deleted);
	// empty when the store holds no task of this key.
	Status string `json:"status,omitempty"`
	// Batch is the file its latest command came from.
	Batch string `json:"batch,omitempty"`
	// On is the outcome of its predecessors it waits for (success,
	// failure or done) when it follows any; empty otherwise.
	On string `json:"on,omitempty"`
	// Chain is where it stands with its predecessors, when it follows
	// any.
	Chain *Chain `json:"chain,omitempty"`
	// Latest is its latest execution: the latest attempt of its current
	// run. Nil before its first fire.
	Latest *Execution `json:"latest,omitempty"`
	// Outside marks, in a graph, a task linked to the tasks drawn but not
	// one of them: of another file or host, or left out of the drawing.
	Outside bool `json:"outside,omitempty"`
}

// ChainEdge is one link of a chain: Succ follows Pred.
type ChainEdge struct {
	Pred string `json:"pred"`
	Succ string `json:"succ"`
}

// TaskChain is what a task is linked to: the tasks it follows and those
// that follow it.
type TaskChain struct {
	// Predecessors are the tasks it follows, in the order its after names
	// them.
	Predecessors []ChainNode
	// Successors are live tasks that follow it, by key: at most the limit
	// asked for, of Followers in all.
	Successors []ChainNode
	Followers  int
}

// ChainGraphFilter selects the tasks of one file or of one host, for a
// graph of their chains.
type ChainGraphFilter struct {
	// Batch selects the tasks whose latest command came from this file;
	// Host those of this host. One of them is required.
	Batch, Host string
	// Limit bounds the tasks of the file or host drawn. Defaults to
	// DefaultGraphNodes; at most MaxGraphNodes.
	Limit int
}

// Bounds of a chain graph.
const (
	DefaultGraphNodes = 50
	MaxGraphNodes     = 500
	// MaxGraphEdges bounds the links a graph holds, outside tasks'
	// included.
	MaxGraphEdges = 1000
)

// ChainGraph is the chains among the tasks of a file or a host: those of
// its tasks that follow or are followed by another task, and the tasks
// outside it they are linked to.
type ChainGraph struct {
	// Nodes are the chained tasks of the file or host, at most the limit
	// by key, then the tasks they are linked to that are not among them
	// (Outside).
	Nodes []ChainNode
	// Edges are the links between the nodes, at most MaxGraphEdges.
	Edges []ChainEdge
	// Chained counts the chained tasks of the file or host, drawn or not;
	// Links counts the links of those drawn, in Edges or not.
	Chained, Links int
}

// ExecutionRun is what an execution belongs to: its run's attempts, the
// predecessors' runs that released it, and what its run released.
type ExecutionRun struct {
	// Attempts are the executions of its run, first attempt first.
	Attempts []Execution
	// Planned is how many attempts its task's retry policy allows a run,
	// as its definition says now: 1 without a policy.
	Planned int
	// ReleasedBy is, for each predecessor's run that released it (in
	// the order it names them), that run's latest attempt; an execution
	// with only its fire id when the store holds none of that run.
	ReleasedBy []Execution
	// Released are the fires its run released, of the tasks that follow
	// its task, at most the limit asked for, of ReleasedTotal in all.
	Released      []Execution
	ReleasedTotal int
	// NextAttempt is the run's next attempt while the engine waits to
	// fire it after a failure; nil otherwise.
	NextAttempt *NextAttempt
}
