package watcher

import "strings"

// ignoredSuffixes name files that are still being written by some tool, or
// that are our own error reports. Compared in lower case.
var ignoredSuffixes = []string{".tmp", ".part", ".crdownload", ".swp", ErrorsSuffix}

// ignored reports whether a name in a watched folder is never input: hidden
// files (".name"), editor and office lock files ("~name"), temporary and
// partial downloads, and error reports.
func ignored(name string) bool {
	if name == "" || name[0] == '.' || name[0] == '~' {
		return true
	}
	lower := strings.ToLower(name)
	for _, s := range ignoredSuffixes {
		if strings.HasSuffix(lower, s) {
			return true
		}
	}
	return false
}
