package scheduler

import (
	"fmt"
	"os"
	"slices"
)

// spill keeps the data of a runner's tasks out of the Go heap, in a file of
// its own that nobody else can open (it is unlinked at once, so a crash
// leaves nothing behind). A task's data is only read to write a fired event
// or a state record; a million tasks' payloads cost disk and page cache,
// not resident memory.
//
// Writes go through a buffer; data is appended, never rewritten, and the
// file is rebuilt when more of it is garbage than live. A spill is used by
// one goroutine.
type spill struct {
	dir     string
	f       *os.File
	flushed int64  // bytes in the file
	buf     []byte // bytes after flushed, not written yet
	live    int64  // bytes referenced by tasks

	// block holds the file's bytes from blockAt, read in one go when
	// reads stay near each other (a burst fires tasks in the order they
	// came, or in the reverse order of the slots they reuse): one read
	// for a few hundred tasks in place of one each. lastAt is where the
	// last read began.
	block   []byte
	blockAt int64
	lastAt  int64
}

// spillBlock is how much a read near the last one takes from the file at
// once, from a multiple of itself.
const spillBlock = 64 << 10

// spillBuffer is how much is written at once.
const spillBuffer = 256 << 10

// spillRef locates one task's data; n is 0 for none.
type spillRef struct {
	off int64
	n   int32
}

func openSpill(dir string) (*spill, error) {
	s := &spill{dir: dir}
	f, err := s.create()
	if err != nil {
		return nil, err
	}
	s.f = f
	return s, nil
}

func (s *spill) create() (*os.File, error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("task data file: %w", err)
	}
	f, err := os.CreateTemp(s.dir, "tasks-*.data")
	if err != nil {
		return nil, fmt.Errorf("task data file: %w", err)
	}
	// Unlinked while open: it lives as long as the runner holds it.
	_ = os.Remove(f.Name())
	return f, nil
}

// size is the bytes written so far, buffered or not.
func (s *spill) size() int64 { return s.flushed + int64(len(s.buf)) }

// put stores b and returns where.
func (s *spill) put(b []byte) (spillRef, error) {
	if len(b) == 0 {
		return spillRef{}, nil
	}
	ref := spillRef{off: s.size(), n: int32(len(b))}
	s.buf = append(s.buf, b...)
	s.live += int64(len(b))
	if len(s.buf) >= spillBuffer {
		if err := s.flush(); err != nil {
			return spillRef{}, err
		}
	}
	return ref, nil
}

func (s *spill) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	if _, err := s.f.WriteAt(s.buf, s.flushed); err != nil {
		return fmt.Errorf("task data file: %w", err)
	}
	s.flushed += int64(len(s.buf))
	s.buf = s.buf[:0]
	return nil
}

// get appends the data at ref to dst.
func (s *spill) get(dst []byte, ref spillRef) ([]byte, error) {
	if ref.n == 0 {
		return dst, nil
	}
	if ref.off >= s.flushed {
		start := ref.off - s.flushed
		return append(dst, s.buf[start:start+int64(ref.n)]...), nil
	}
	if ref.off+int64(ref.n) > s.flushed {
		if err := s.flush(); err != nil {
			return dst, err
		}
	}
	end := ref.off + int64(ref.n)
	if ref.off >= s.blockAt && end <= s.blockAt+int64(len(s.block)) {
		s.lastAt = ref.off
		return append(dst, s.block[ref.off-s.blockAt:end-s.blockAt]...), nil
	}
	near := max(ref.off-s.lastAt, s.lastAt-ref.off) < spillBlock && ref.n < spillBlock/4
	s.lastAt = ref.off
	if near {
		at := ref.off &^ (spillBlock - 1)
		if end > at+spillBlock {
			at = ref.off // across two blocks: from the data on
		}
		n := max(min(spillBlock, s.flushed-at), end-at)
		s.block = slices.Grow(s.block[:0], int(n))[:n]
		if _, err := s.f.ReadAt(s.block, at); err != nil {
			s.block = s.block[:0]
			return dst, fmt.Errorf("task data file: %w", err)
		}
		s.blockAt = at
		return append(dst, s.block[ref.off-at:end-at]...), nil
	}
	n := len(dst)
	dst = append(dst, make([]byte, ref.n)...)
	if _, err := s.f.ReadAt(dst[n:], ref.off); err != nil {
		return dst[:n], fmt.Errorf("task data file: %w", err)
	}
	return dst, nil
}

// free marks the data at ref as garbage.
func (s *spill) free(ref spillRef) { s.live -= int64(ref.n) }

// wasteful reports whether rebuilding would give back much: more than half
// of a file over 64 MiB is garbage.
func (s *spill) wasteful() bool {
	size := s.size()
	return size > 64<<20 && s.live < size/2
}

// rebuild copies the live data named by refs into a new file and points
// refs at the copies.
func (s *spill) rebuild(refs func(yield func(*spillRef) bool)) error {
	f, err := s.create()
	if err != nil {
		return err
	}
	next := &spill{dir: s.dir, f: f}
	var buf []byte
	for ref := range refs {
		if buf, err = s.get(buf[:0], *ref); err != nil {
			break
		}
		if *ref, err = next.put(buf); err != nil {
			break
		}
	}
	if err == nil {
		err = next.flush()
	}
	if err != nil {
		f.Close()
		return err
	}
	s.f.Close()
	*s = *next
	return nil
}

func (s *spill) close() {
	if s != nil && s.f != nil {
		s.f.Close()
		s.f = nil
	}
}
