package watcher

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// MaxNameBytes is the longest file name taken, in bytes: with a UTC
// timestamp for a name taken in archive/ or failed/ and the ErrorsSuffix
// of its report, a longer name would not fit the 255 bytes file systems
// allow.
const MaxNameBytes = 200

// RefusedError says why an entry of a watched folder is not taken: it is
// not a regular file, it cannot be read, or its name cannot be shown
// safely. A refused entry is never opened or read; it is moved to failed/
// beside NAME.errors.txt holding this error's text, except a subfolder,
// which is left where it is.
type RefusedError struct {
	// Name is the entry's name, byte for byte.
	Name string
	// Reason says what is wrong and what to do about it.
	Reason string
}

func (e *RefusedError) Error() string {
	return DisplayName(e.Name) + ": not taken: " + e.Reason
}

// DisplayName is name as logs, reports and the console may show it: the
// name itself when it is valid UTF-8 free of control and bidirectional
// formatting characters, else the name quoted with Go escapes
// ("jobs\x1b[31m.csv"), so that no name can forge a line of a log or a
// report, or send escape sequences to a terminal.
func DisplayName(name string) string {
	if printable(name) {
		return name
	}
	return strconv.Quote(name)
}

// printable reports whether s is valid UTF-8 free of control and
// bidirectional formatting characters.
func printable(s string) bool {
	return utf8.ValidString(s) && unprintable(s) < 0
}

// unprintable returns the first control or bidirectional formatting
// character of s, or -1.
func unprintable(s string) rune {
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return r
		}
	}
	return -1
}

// nameProblem says why a name is refused, or "" when it is taken.
func nameProblem(name string) string {
	if !utf8.ValidString(name) {
		return "its name is not valid UTF-8; rename the file"
	}
	if r := unprintable(name); r >= 0 {
		kind := "control"
		if !unicode.IsControl(r) {
			kind = "bidirectional formatting"
		}
		return fmt.Sprintf("its name holds the %s character %U; rename the file", kind, r)
	}
	if len(name) > MaxNameBytes {
		return fmt.Sprintf("its name is %d bytes long, over the limit of %d; rename the file", len(name), MaxNameBytes)
	}
	return ""
}

// typeProblem says why an entry of type mode, found at path, is refused, or
// "" for a regular file. A symbolic link is never followed: it is refused
// whatever it points to, so that nothing outside the folder is read, and a
// file is never read twice (once by its name, once by a link's).
func typeProblem(path string, mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t.IsRegular():
		return ""
	case t&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return "a symbolic link, not a regular file: links are not followed; put the file itself in the folder"
		}
		return fmt.Sprintf("a symbolic link (to %s), not a regular file: links are not followed; put the file itself in the folder",
			strconv.Quote(target))
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO), not a regular file: it is not read; write the job list to a regular file"
	case t&fs.ModeSocket != 0:
		return "a socket, not a regular file: it is not read"
	case t&fs.ModeDevice != 0:
		return "a device file, not a regular file: it is not read"
	case t.IsDir():
		return "a folder: only files directly in a watched folder are taken; the folder is left where it is"
	default:
		return fmt.Sprintf("not a regular file (%s): it is not read", t)
	}
}
