package web

import (
	"slices"
	"testing"
)

// TestLayerOfStandsEachTaskRightOfWhatItFollows: a task stands one
// column right of the furthest of its predecessors; a task that follows
// none stands right before the first that follows it; a cycle, which no
// chain should have, is laid out all the same.
func TestLayerOfStandsEachTaskRightOfWhatItFollows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		edges [][2]int // pred, succ
		want  []int
	}{
		{name: "a line", n: 3, edges: [][2]int{{0, 1}, {1, 2}}, want: []int{0, 1, 2}},
		{name: "a diamond with a shortcut", n: 4, edges: [][2]int{{0, 1}, {0, 2}, {1, 3}, {2, 3}, {0, 3}}, want: []int{0, 1, 1, 2}},
		{name: "a late source beside its successor", n: 4, edges: [][2]int{{0, 1}, {1, 2}, {3, 2}}, want: []int{0, 1, 2, 1}},
		{name: "a cycle", n: 3, edges: [][2]int{{0, 1}, {1, 2}, {2, 0}}, want: []int{0, 1, 2}},
		{name: "alone", n: 2, want: []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			preds, succs := make([][]int, tc.n), make([][]int, tc.n)
			for _, e := range tc.edges {
				preds[e[1]] = append(preds[e[1]], e[0])
				succs[e[0]] = append(succs[e[0]], e[1])
			}
			if got := layerOf(tc.n, preds, succs); !slices.Equal(got, tc.want) {
				t.Errorf("layers %v, want %v", got, tc.want)
			}
		})
	}
}
