package converters

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// JSON Lines are converted on several goroutines: a line is a whole
// object, so lines can be converted apart, and converting one costs far
// more than finding where it ends. One goroutine reads blocks of lines;
// each worker converts whole blocks with a jsonRows of its own; the
// caller's goroutine emits their rows in file order.

// linesPerBlock is how many lines a worker converts at a time.
const linesPerBlock = 256

// maxLineWorkers bounds the workers converting one file.
const maxLineWorkers = 4

// lineBlock is a run of lines of a file and, once done is signalled,
// their rows.
type lineBlock struct {
	first int    // the number of the block's first line
	buf   []byte // the lines, one after another
	ends  []int  // where each line ends in buf
	// err is what ends the file after the block's lines: io.EOF, or the
	// file's error.
	err  error
	rows []Row // the rows of the lines that are not blank, in order
	done chan struct{}
}

// jsonLines reads JSON Lines: one object per line, blank lines skipped. A
// line that is not an object is a row error, and the next line is read.
// It returns how many rows it emitted.
func jsonLines(ctx context.Context, file string, opts Options, br *bufio.Reader, max int64, emit func(Row) error) (int, error) {
	workers := min(runtime.GOMAXPROCS(0), maxLineWorkers)
	stop := make(chan struct{})
	work := make(chan *lineBlock, workers)
	order := make(chan *lineBlock, 2*workers)
	free := make(chan *lineBlock, 2*workers+2)
	var wg sync.WaitGroup
	// Nothing outlives the call: r is the caller's to close.
	defer func() {
		close(stop)
		wg.Wait()
	}()

	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(work)
		defer close(order)
		line := 1
		for {
			var b *lineBlock
			select {
			case b = <-free:
			default:
				b = &lineBlock{done: make(chan struct{}, 1)}
			}
			b.first, b.buf, b.ends, b.err = line, b.buf[:0], b.ends[:0], nil
			for len(b.ends) < linesPerBlock && b.err == nil {
				text, err := readLine(br, max)
				switch {
				case err == io.EOF:
					b.err = io.EOF
				case errors.Is(err, errRecordTooLong):
					b.err = fmt.Errorf("%s: line %d is longer than %d bytes; is this a JSON Lines file?", file, line, max)
				case err != nil:
					b.err = fmt.Errorf("%s: %w", file, err)
				default:
					b.buf = append(b.buf, text...)
					b.ends = append(b.ends, len(b.buf))
					line++
				}
			}
			if err := ctx.Err(); err != nil && b.err == nil {
				b.err = fmt.Errorf("%s: %w", file, err)
			}
			select {
			case order <- b:
			case <-stop:
				return
			}
			select {
			case work <- b:
			case <-stop:
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newJSONRows(file, opts)
			for b := range work {
				start := 0
				for i, end := range b.ends {
					if row, blank := c.line(b.first+i, b.buf[start:end]); !blank {
						b.rows = append(b.rows, row)
					}
					start = end
				}
				b.done <- struct{}{}
			}
		}()
	}

	n := 0
	for b := range order {
		<-b.done
		for i := range b.rows {
			n++
			if err := emit(b.rows[i]); err != nil {
				return n, err
			}
		}
		err := b.err
		clear(b.rows)
		b.rows = b.rows[:0]
		select {
		case free <- b:
		default:
		}
		switch {
		case err == io.EOF:
			return n, nil
		case err != nil:
			return n, err
		}
	}
	return n, nil
}
