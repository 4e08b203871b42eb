package watcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxNames bounds the search for a free name in archive/ or failed/.
const maxNames = 1000

// nameMax is the longest name file systems commonly allow, in bytes.
const nameMax = 255

// candidateName is the n-th name tried for name in archive/ or failed/: the
// name itself, then the name with a UTC timestamp before its extension
// (jobs.20261122T101500Z.csv), then with a counter as well
// (jobs.20261122T101500Z-2.csv) for files that collide within a second.
// A name too long to take these and the ErrorsSuffix of a report within
// nameMax bytes (only refused names are: see MaxNameBytes) is cut short,
// and "~" marks the cut.
func candidateName(name string, now time.Time, n int) string {
	ext := filepath.Ext(name)
	if ext == name || len(ext) > 32 {
		ext = "" // a name like ".csv" has no base to put the suffix after
	}
	base := strings.TrimSuffix(name, ext)
	suffix := ""
	if n > 0 {
		suffix = "." + now.UTC().Format("20060102T150405Z")
	}
	if n > 1 {
		suffix += "-" + strconv.Itoa(n)
	}
	if room := nameMax - len(ErrorsSuffix) - len(suffix) - len(ext); len(base) > room {
		cut := room - len("~")
		for cut > 0 && !utf8.RuneStart(base[cut]) {
			cut--
		}
		base = base[:cut] + "~"
	}
	return base + suffix + ext
}

// moveNoClobber moves the file at src into dir under name, or under the first
// free candidate name, and returns the path it now has. It never replaces a
// file.
func moveNoClobber(src, dir, name string, now time.Time) (string, error) {
	for n := range maxNames {
		dst := filepath.Join(dir, candidateName(name, now, n))
		err := renameNoReplace(src, dst)
		if err == nil {
			return dst, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("move %s: no free name in %s", name, dir)
}

// moveFailed moves the file at src into dir beside NAME.errors.txt holding
// report, picking the first candidate name for which neither file exists, and
// returns the path the file now has. The report is written first: should the
// process die in between, the file is still in .processing and is handled
// again at the next start.
func moveFailed(src, dir, name, report string, now time.Time) (string, error) {
	return moveWithReport(src, dir, name, ErrorsSuffix, report, now)
}

// moveWithReport is moveFailed with the report's suffix.
func moveWithReport(src, dir, name, suffix, report string, now time.Time) (string, error) {
	for n := range maxNames {
		dst := filepath.Join(dir, candidateName(name, now, n))
		errPath := dst + suffix
		err := writeNew(errPath, report)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("write error report: %w", err)
		}
		err = renameNoReplace(src, dst)
		if err == nil {
			return dst, nil
		}
		_ = os.Remove(errPath) // ours: created above
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("move %s: no free name in %s", name, dir)
}

// writeNew creates the file at path with content, failing with fs.ErrExist if
// it exists.
func writeNew(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

// renameChecked renames src to dst unless dst exists. Between the check and
// the rename another process could create dst; it is the fallback where the
// kernel or file system cannot refuse to replace.
func renameChecked(src, dst string) error {
	_, err := os.Lstat(dst)
	if err == nil {
		return &os.LinkError{Op: "rename", Old: src, New: dst, Err: fs.ErrExist}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(src, dst)
}
