package watcher

import "strings"

// ignoredSuffixes name files that are still being written by some tool, or
// that are our own error reports. Compared in lower case.
var ignoredSuffixes = []string{".tmp", ".part", ".crdownload", ".swp", ErrorsSuffix}

// companionSuffix names the files that are never input on their own but
// read by another: a systemd .service unit, read by the .timer that
// activates it. They stay in the folder, as units stay in
// /etc/systemd/system, for the timers dropped beside them now or later.
const companionSuffix = ".service"

// ignored reports whether a name in a watched folder is never input: hidden
// files (".name"), editor and office lock files ("~name"), temporary and
// partial downloads, error reports and companion units.
func ignored(name string) bool {
	if name == "" || name[0] == '.' || name[0] == '~' {
		return true
	}
	lower := strings.ToLower(name)
	if strings.HasSuffix(lower, companionSuffix) {
		return true
	}
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
	if strings.HasSuffix(strings.ToLower(name), companionSuffix) {
		return "a .service unit is no input of its own: it is read by the .timer that activates it; " +
			"drop both in one archive (.tar.gz or .zip), or both into the folder"
	}
	if ignored(name) {
		return "a watched folder leaves alone names starting with . or ~ and names ending in " +
			strings.Join(ignoredSuffixes, ", ") + " (files still being written, and reports); rename the file"
	}
	return nameProblem(name)
}
