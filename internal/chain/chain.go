package chain

import (
	"context"
	"slices"
	"strings"
)

// Graph holds the predecessors of tasks, by key. Set the tasks a change
// defines first, then Load the running tasks they lead to; a task Set
// keeps what it was Set with, so the change's definitions win over the
// running ones they replace.
type Graph struct {
	preds map[string][]string
	// pending are the keys named as predecessors and not Set yet.
	pending map[string]struct{}
}

// New returns an empty graph.
func New() *Graph {
	return &Graph{preds: map[string][]string{}, pending: map[string]struct{}{}}
}

// Set records that the task of key follows preds (keys). Nil preds: it
// follows no task, or there is no such task.
func (g *Graph) Set(key string, preds []string) {
	g.preds[key] = preds
	delete(g.pending, key)
	for _, p := range preds {
		if _, ok := g.preds[p]; !ok {
			g.pending[p] = struct{}{}
		}
	}
}

// Has reports whether key was Set.
func (g *Graph) Has(key string) bool { _, ok := g.preds[key]; return ok }

// Pending lists, sorted, the keys named as predecessors and not Set yet:
// the tasks to look up next.
func (g *Graph) Pending() []string {
	keys := make([]string, 0, len(g.pending))
	for k := range g.pending {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Lookup answers which of keys run now, and the predecessors of each that
// does; a key it leaves out runs not.
type Lookup func(ctx context.Context, keys []string) (map[string][]string, error)

// Load sets every pending key with what lookup answers, in rounds, until
// none is pending: the running tasks the change leads to, then those they
// follow, and so on. A key lookup leaves out is Set with no predecessors.
func (g *Graph) Load(ctx context.Context, lookup Lookup) error {
	for len(g.pending) > 0 {
		keys := g.Pending()
		found, err := lookup(ctx, keys)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if !g.Has(k) {
				g.Set(k, found[k])
			}
		}
	}
	return nil
}

// Cycle returns a cycle that a task of from is on or leads to, in the
// order its tasks run (each followed by a task that follows it), from its
// least key round to that key again: [acme/a acme/b acme/a] when acme/b
// follows acme/a and acme/a follows acme/b. Nil when there is none.
func (g *Graph) Cycle(from []string) []string {
	const (
		unseen = iota
		open   // on the path being walked
		done   // every task it leads to walked: on no cycle
	)
	state := map[string]uint8{}
	type step struct {
		key  string
		next int // the index of the predecessor to walk next
	}
	for _, start := range from {
		if state[start] != unseen {
			continue
		}
		// Walked without recursion: a chain may be long.
		path := []step{{key: start}}
		state[start] = open
		for len(path) > 0 {
			top := &path[len(path)-1]
			preds := g.preds[top.key]
			if top.next == len(preds) {
				state[top.key] = done
				path = path[:len(path)-1]
				continue
			}
			p := preds[top.next]
			top.next++
			switch state[p] {
			case unseen:
				state[p] = open
				path = append(path, step{key: p})
			case open:
				// Each task of the path follows the next; the last follows
				// p. They run the other way round.
				i := slices.IndexFunc(path, func(s step) bool { return s.key == p })
				ring := []string{p}
				for j := len(path) - 1; j > i; j-- {
					ring = append(ring, path[j].key)
				}
				least := slices.Index(ring, slices.Min(ring))
				ring = append(ring[least:], ring[:least]...)
				return append(ring, ring[0])
			}
		}
	}
	return nil
}

// Path writes a cycle as Cycle returns it: "acme/a → acme/b → acme/a".
func Path(keys []string) string { return strings.Join(keys, " → ") }
