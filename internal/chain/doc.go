// Package chain is the graph of who follows whom among tasks as a change
// (a file, a definition sent to the API) would leave it: the
// predecessors of the tasks the change defines, and of the running tasks
// they lead to. It finds the cycles a change would close, since a task
// on a cycle waits for itself and never fires.
//
// It reads nothing itself: its callers say what the change defines and
// look the running tasks up in their own store (Graph.Load); it writes
// nothing.
package chain
