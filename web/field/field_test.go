package field

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanEscapesAndBounds(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		limit    int
		want     string
	}{
		{"plain", "alice", MaxName, "alice"},
		{"line break", "a\nforged=1", MaxName, `a\nforged=1`},
		{"terminal escape", "\x1b[31mred", MaxName, `\x1b[31mred`},
		{"bidi override", "a\u202eb", MaxName, `a\u202eb`},
		{"invalid UTF-8", "a\xffb", MaxName, `a\xffb`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Clean(tc.in, tc.limit); got != tc.want {
				t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCleanCutsWithinTheBoundOnARuneBoundary(t *testing.T) {
	in := strings.Repeat("é", 10) // 2 bytes each
	for limit := len("…"); limit <= len(in); limit++ {
		got := Clean(in, limit)
		if len(got) > limit || !utf8.ValidString(got) || (limit < len(in) && !strings.HasSuffix(got, "…")) {
			t.Errorf("Clean(%d é, %d) = %q: want at most %d valid bytes, ending in … when cut", 10, limit, got, limit)
		}
	}
}
