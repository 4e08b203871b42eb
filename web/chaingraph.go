package web

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web/list"
)

// A file's or a host's chains are drawn here as SVG, on the server, as
// the dashboard's charts are: layered left to right by depth (a task
// stands one column right of the furthest of its predecessors), each
// task a box linking to its page, coloured and labelled by its state,
// and each link an arrow from a predecessor to the task that follows it.

// Geometry of a chain graph, in SVG user units, drawn at one unit a
// pixel: the graph scrolls in its box rather than shrink to the page.
const (
	cgPad    = 12
	cgNodeW  = 210
	cgNodeH  = 46
	cgColGap = 56
	cgRowGap = 14
	// cgNameRunes bounds a node's first line; its title says it all.
	cgNameRunes = 24
)

// chainGraph is a graph drawn.
type chainGraph struct {
	// ID names the figure; its title and description are ID-title and
	// ID-desc.
	ID            string
	Width, Height int
	Nodes         []graphNode
	Edges         []graphEdge
	// Title and Desc say what the graph shows, Caption what to read in
	// it and what was left out.
	Title, Desc, Caption string
}

// graphNode is one task of a graph, as drawn.
type graphNode struct {
	Key string
	// Href is the task's page; empty for a task the view does not know.
	Href string
	// Name and Label are its two lines: its name (with its host when
	// outside) and its state in words.
	Name, Label string
	// State is its state (nodeNotRun, …), for the data-state attribute
	// and the colour; Late and Outside are said apart.
	State         string
	Late, Outside bool
	// Title says it all, for a pointer resting on it and for screen
	// readers.
	Title string
	X, Y  int
	layer int
	order float64
}

// graphEdge is one link drawn: Succ follows Pred.
type graphEdge struct {
	Pred, Succ string
	// Class styles it by what the successor waits for.
	Class, Title, Path string
}

// newChainGraph lays g out at now. scope names what it is of ("this
// file", "this host") and inScope says whether an outside node is of it
// all the same (one left out of the drawing) rather than of another.
func newChainGraph(id string, g storetype.ChainGraph, now time.Time, scope string, inScope func(storetype.ChainNode) bool) chainGraph {
	c := chainGraph{ID: id}
	index := make(map[string]int, len(g.Nodes))
	for i, n := range g.Nodes {
		index[n.Key] = i
	}
	preds := make([][]int, len(g.Nodes))
	succs := make([][]int, len(g.Nodes))
	for _, e := range g.Edges {
		p, okP := index[e.Pred]
		s, okS := index[e.Succ]
		if okP && okS && p != s {
			preds[s] = append(preds[s], p)
			succs[p] = append(succs[p], s)
		}
	}
	layers := layerOf(len(g.Nodes), preds, succs)

	drawn := 0
	for i, n := range g.Nodes {
		if !n.Outside {
			drawn++
		}
		late := false
		for _, p := range preds[i] {
			late = late || overdueRun(g.Nodes[p], now) != nil
		}
		st := nodeState(n, now)
		gn := graphNode{Key: n.Key, State: st, Late: late, Outside: n.Outside, layer: layers[i],
			Label: nodeLabel(n, now, late)}
		host, name, _ := task.SplitKey(n.Key)
		gn.Name = name
		if n.Outside {
			gn.Name = host + "/" + name
		}
		gn.Name = cut(gn.Name, cgNameRunes)
		if st != nodeUnknown {
			gn.Href = taskURL(n.Key)
		}
		gn.Title = n.Key + ": " + gn.Label
		if n.Chain != nil && n.Chain.Held != "" {
			gn.Title += " (" + n.Chain.Held + ")"
		}
		switch {
		case n.Outside && inScope(n):
			gn.Title += "; of " + scope + ", left out of the drawing"
		case n.Outside:
			gn.Title += "; not of " + scope
		}
		c.Nodes = append(c.Nodes, gn)
	}

	// Columns: each ordered by where its predecessors stand (their mean
	// row), then by key, so that links cross less.
	var columns [][]int
	for i, l := range layers {
		for len(columns) <= l {
			columns = append(columns, nil)
		}
		columns[l] = append(columns[l], i)
	}
	rows := 0
	for l, col := range columns {
		for _, i := range col {
			sum, n := 0.0, 0
			for _, p := range preds[i] {
				if layers[p] < l {
					sum += c.Nodes[p].order
					n++
				}
			}
			c.Nodes[i].order = -1
			if n > 0 {
				c.Nodes[i].order = sum / float64(n)
			}
		}
		slices.SortStableFunc(col, func(a, b int) int {
			return cmp.Or(cmp.Compare(c.Nodes[a].order, c.Nodes[b].order), cmp.Compare(c.Nodes[a].Key, c.Nodes[b].Key))
		})
		for row, i := range col {
			c.Nodes[i].order = float64(row)
		}
		rows = max(rows, len(col))
	}
	colH := func(n int) int { return n*cgNodeH + max(n-1, 0)*cgRowGap }
	for l, col := range columns {
		top := cgPad + (colH(rows)-colH(len(col)))/2
		for row, i := range col {
			c.Nodes[i].X = cgPad + l*(cgNodeW+cgColGap)
			c.Nodes[i].Y = top + row*(cgNodeH+cgRowGap)
		}
	}
	c.Width = 2*cgPad + len(columns)*cgNodeW + max(len(columns)-1, 0)*cgColGap
	c.Height = 2*cgPad + colH(rows)

	for _, e := range g.Edges {
		p, okP := index[e.Pred]
		s, okS := index[e.Succ]
		if !okP || !okS {
			continue
		}
		on := waitsFor(g.Nodes[s].On)
		ge := graphEdge{Pred: e.Pred, Succ: e.Succ, Class: "edge on-" + cmp.Or(g.Nodes[s].On, "success"),
			Title: e.Succ + " follows " + e.Pred + ", on " + on}
		a, b := c.Nodes[p], c.Nodes[s]
		x1, y1 := a.X+cgNodeW, a.Y+cgNodeH/2
		x2, y2 := b.X-2, b.Y+cgNodeH/2
		bend := max((x2-x1)/2, cgColGap/2)
		ge.Path = fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, x1+bend, y1, x2-bend, y2, x2, y2)
		c.Edges = append(c.Edges, ge)
	}

	c.Title = "Chains of " + scope
	c.Desc = fmt.Sprintf("%s tasks of %s in chains, %s links between them", list.Thousands(g.Chained), scope, list.Thousands(g.Links))
	c.Caption = "Each task stands right of the tasks it follows; an arrow runs from a task to one that follows it " +
		"(dashed: on failure; dotted: on either outcome). Each box says its task's state: its current run's, or held or waiting; " +
		"dashed boxes are tasks outside " + scope + "."
	if left := g.Chained - drawn; left > 0 {
		c.Caption += fmt.Sprintf(" The first %s of %s chained tasks by name are drawn; %s are left out.",
			list.Thousands(drawn), list.Thousands(g.Chained), list.Thousands(left))
	}
	if left := g.Links - len(c.Edges); left > 0 {
		c.Caption += fmt.Sprintf(" %s links are left out.", list.Thousands(left))
	}
	return c
}

// layerOf places each of n nodes in a column: 0 for a node that follows
// none drawn, else one right of the furthest of its predecessors. Nodes
// in a cycle (which no chain should have, but the view must survive)
// are placed one right of those of their predecessors placed before.
func layerOf(n int, preds, succs [][]int) []int {
	layer := make([]int, n)
	waiting := make([]int, n)
	var ready []int
	for i := range n {
		waiting[i] = len(preds[i])
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	placed := make([]bool, n)
	left := n
	for left > 0 {
		if len(ready) == 0 {
			// A cycle: take the first node not placed, as if its
			// unplaced predecessors were not there.
			for i := range n {
				if !placed[i] {
					ready = append(ready, i)
					break
				}
			}
		}
		i := ready[0]
		ready = ready[1:]
		if placed[i] {
			continue
		}
		placed[i] = true
		left--
		for _, p := range preds[i] {
			if placed[p] && p != i {
				layer[i] = max(layer[i], layer[p]+1)
			}
		}
		for _, s := range succs[i] {
			if waiting[s]--; waiting[s] == 0 && !placed[s] {
				ready = append(ready, s)
			}
		}
	}
	// A task that follows none drawn stands right before the first of
	// those that follow it, not at the far left: a predecessor from
	// outside stands beside the task it releases.
	for i := range n {
		if len(preds[i]) > 0 || len(succs[i]) == 0 {
			continue
		}
		first := -1
		for _, s := range succs[i] {
			if first < 0 || layer[s] < first {
				first = layer[s]
			}
		}
		layer[i] = max(layer[i], first-1)
	}
	return layer
}

// cut shortens s to n runes, marking the cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
