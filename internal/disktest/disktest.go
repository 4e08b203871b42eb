//go:build linux

package disktest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size (as mount's size option: "1m", "64m") on a
// new temporary folder until the test ends, and returns the folder.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+size); err != nil {
		t.Skipf("a small file system cannot be mounted here (mount needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file in dir until its file system is full, and returns a
// function that removes the file, freeing the space again.
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, ".disktest-filler") // hidden: watchers leave it alone
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := make([]byte, 64<<10); err == nil; {
		_, err = f.Write(chunk)
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling %s: %v, want no space left", dir, err)
	}
	return func() {
		t.Helper()
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}
