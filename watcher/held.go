package watcher

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNotHeld is returned by TakeHeld for a file that is not, or no longer,
// in the folder's held/: another operator or node took it first.
var ErrNotHeld = errors.New("not held: applied, rejected or removed already")

// TakeHeld takes the file held/name of the watched folder dir for an
// operator's decision: it moves into .processing/, where no other node
// and no other operator can take it. Its held report stays until Settle. The
// caller handles it and then calls Settle. Should the process die in
// between, the next start handles the file as a file left in
// .processing/.
func TakeHeld(dir, name string) (File, error) {
	dir = filepath.Clean(dir)
	if name != filepath.Base(name) || name == "." || name == ".." || strings.HasPrefix(name, ".") {
		return File{}, fmt.Errorf("held file %q: not a file name", name)
	}
	src := filepath.Join(dir, HeldDir, name)
	dst := filepath.Join(dir, ProcessingDir, name)
	if err := renameNoReplace(src, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return File{}, fmt.Errorf("%s: %w", src, ErrNotHeld)
		}
		return File{}, fmt.Errorf("take held file %s: %w", src, err)
	}
	return File{Dir: dir, Name: name, Path: dst, held: name}, nil
}

// Settle moves a file taken with TakeHeld out of .processing/: to
// archive/ when report is empty, else to failed/ beside NAME.errors.txt
// holding report. It returns the path the file now has.
//
// f.Name, which TakeHeld sets to the name the file has in held/, may be
// set to the name it was dropped as, which it then takes (or the first
// free name after it).
func Settle(f File, report string, now time.Time) (string, error) {
	var to string
	var err error
	if report == "" {
		to, err = moveNoClobber(f.Path, filepath.Join(f.Dir, ArchiveDir), f.Name, now)
	} else {
		to, err = moveFailed(f.Path, filepath.Join(f.Dir, FailedDir), f.Name, strings.TrimRight(report, "\n")+"\n", now)
	}
	if err == nil && f.held != "" {
		_ = os.Remove(filepath.Join(f.Dir, HeldDir, f.held+HeldSuffix)) // decided: the report has done its job
	}
	return to, err
}

// Hold returns a file taken with TakeHeld to held/, when its decision
// could not be carried out.
func Hold(f File) error {
	return renameNoReplace(f.Path, filepath.Join(f.Dir, HeldDir, cmp.Or(f.held, f.Name)))
}

// CopyHeld puts a copy of the file at src into the held/ subfolder of the
// watched folder dir, as name (or the first free name after it), beside
// NAME.held.txt holding report, as the watcher does with a file a Handler
// held: for a file held by `jobdrop inject`, which leaves the file given
// where it is. It returns the path of the copy.
func CopyHeld(dir, name, src, report string, now time.Time) (string, error) {
	dir = filepath.Clean(dir)
	tmp, err := os.CreateTemp(filepath.Join(dir, ProcessingDir), "."+name+".*.part")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	in, err := os.Open(src)
	if err == nil {
		_, err = io.Copy(tmp, in)
		in.Close()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("copy %s: %w", src, err)
	}
	return moveWithReport(tmp.Name(), filepath.Join(dir, HeldDir), name, HeldSuffix, strings.TrimRight(report, "\n")+"\n", now)
}
