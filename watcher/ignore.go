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

// NameProblem says why a file of this name in a watched folder would never
// be injected, or "" when it would be taken: left alone as a file still
// being written (or a report), or refused for its name. A tool that drops
// files (the console's upload) asks before it drops one.
func NameProblem(name string) string {
	if ignored(name) {
		return "a watched folder leaves alone names starting with . or ~ and names ending in " +
			strings.Join(ignoredSuffixes, ", ") + " (files still being written, and reports); rename the file"
	}
	return nameProblem(name)
}
