package auth

import (
	"net/url"
	"strings"
	"unicode"
)

// SafeNext keeps a redirect target on this site: a path, never
// "//host", a full URL, or anything a browser might read as one. Browsers
// drop tabs and line breaks from a URL and read "\" as "/", so
// "/\t/evil.example" would leave the site: a target with any control
// character, space or backslash is refused whole, for "/".
func SafeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsFunc(next, func(c rune) bool { return c <= ' ' || c == 0x7f || c == '\\' || unicode.IsControl(c) }) {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}
