package field

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of the audit fields the console fills from requests.
const (
	// MaxName bounds a name: an actor, an object, a worker.
	MaxName = 256
	// MaxDetail bounds a detail, a message, a reason.
	MaxDetail = 1024
)

// Clean makes a value a client sent fit for the audit trail and the
// log: valid UTF-8, control and bidirectional formatting characters
// written as Go escapes (so no value forges a line or sends a terminal
// escape sequences), at most max bytes, cut with "…".
func Clean(s string, limit int) string {
	var b strings.Builder
	for i, c := range s {
		if b.Len() > limit {
			break // what follows is cut anyway
		}
		switch {
		case c == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(c) || unicode.Is(unicode.Bidi_Control, c):
			q := strconv.QuoteRune(c)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(c)
		}
	}
	out := b.String()
	if len(out) <= limit {
		return out
	}
	out = out[:limit-len("…")]
	for !utf8.ValidString(out) {
		out = out[:len(out)-1]
	}
	return out + "…"
}
