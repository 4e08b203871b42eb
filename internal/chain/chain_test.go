package chain

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
)

// TestCycleNamesTheTasksInTheOrderTheyRun builds graphs with and without
// cycles, and checks the cycle found from the change's tasks.
func TestCycleNamesTheTasksInTheOrderTheyRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		preds map[string][]string // follower → predecessors
		from  []string
		want  string
	}{
		{"a chain", map[string][]string{"t": {"e"}, "l": {"e"}, "r": {"t", "l"}}, []string{"e", "t", "l", "r"}, ""},
		{"two tasks", map[string][]string{"a": {"b"}, "b": {"a"}}, []string{"a"}, "a → b → a"},
		{"three tasks, from the middle", map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}, []string{"b"}, "a → c → b → a"},
		{"a cycle the change leads to", map[string][]string{"new": {"x"}, "x": {"y"}, "y": {"x"}}, []string{"new"}, "x → y → x"},
		{"a cycle the change does not reach", map[string][]string{"new": {"z"}, "x": {"y"}, "y": {"x"}}, []string{"new"}, ""},
		{"a diamond", map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}, "e": {"d", "a"}}, []string{"e", "d"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New()
			for k, p := range tc.preds {
				g.Set(k, p)
			}
			if got := Path(g.Cycle(tc.from)); got != tc.want {
				t.Errorf("Cycle = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLoadFollowsTheRunningTasksInRounds looks up the running tasks a
// change leads to, each once, and none the change defines.
func TestLoadFollowsTheRunningTasksInRounds(t *testing.T) {
	running := map[string][]string{"acme/b": {"acme/c"}, "acme/c": {"acme/a"}, "acme/old": {"acme/b"}}
	g := New()
	g.Set("acme/a", []string{"acme/b", "acme/missing"})
	var asked [][]string
	err := g.Load(context.Background(), func(_ context.Context, keys []string) (map[string][]string, error) {
		asked = append(asked, keys)
		found := map[string][]string{}
		for _, k := range keys {
			if p, ok := running[k]; ok {
				found[k] = p
			}
		}
		return found, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"acme/b", "acme/missing"}, {"acme/c"}}; !slices.EqualFunc(asked, want, slices.Equal) {
		t.Errorf("asked %q, want %q", asked, want)
	}
	if got := Path(g.Cycle([]string{"acme/a"})); got != "acme/a → acme/c → acme/b → acme/a" {
		t.Errorf("cycle %q", got)
	}
	if len(g.Pending()) != 0 || !g.Has("acme/missing") {
		t.Errorf("pending %q after Load", g.Pending())
	}

	failed := New()
	failed.Set("x", []string{"y"})
	boom := errors.New("store closed")
	if err := failed.Load(context.Background(), func(context.Context, []string) (map[string][]string, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("Load = %v, want the lookup's error", err)
	}
}

// TestCycleWalksLongChains walks a chain of a hundred thousand tasks
// without running out of stack.
func TestCycleWalksLongChains(t *testing.T) {
	const n = 100_000
	g := New()
	key := func(i int) string { return "h/" + strconv.Itoa(i) }
	for i := 1; i < n; i++ {
		g.Set(key(i), []string{key(i - 1)})
	}
	if c := g.Cycle([]string{key(n - 1)}); c != nil {
		t.Fatalf("cycle in a straight chain: %d tasks", len(c))
	}
	g.Set(key(0), []string{key(n - 1)})
	if c := g.Cycle([]string{key(n / 2)}); len(c) != n+1 {
		t.Fatalf("cycle of %d tasks, want %d", len(c), n+1)
	}
}
