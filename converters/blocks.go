package converters

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// Files whose rows stand alone (JSON Lines, CSV) are converted on several
// goroutines: converting a row costs far more than finding where it ends.
// One goroutine reads the file a block of rows at a time; each worker
// converts whole blocks with a converter of its own; the caller's
// goroutine emits their rows in file order.

// rowsPerBlock is how many rows a worker converts at a time.
const rowsPerBlock = 256

// maxWorkers bounds the workers converting one file.
const maxWorkers = 4

// block is a run of rows of a file as read (raw) and, once done is
// signalled, as converted.
type block[R any] struct {
	raw R
	// err is what ends the file after the block's rows: io.EOF, or the
	// file's error.
	err  error
	rows []Row
	done chan struct{}
}

// convertBlocks reads a file with fill, converts it with the converters
// newConvert makes, one a worker, and emits its rows in file order. fill
// empties raw and reads the next block of rows into it, at most
// rowsPerBlock; it returns nil while the file goes on, io.EOF after its
// last block, or the error that ends it after the rows it read. A
// converter appends the rows of raw to rows and returns them. It returns
// how many rows it emitted; nothing it starts outlives it.
func convertBlocks[R any](ctx context.Context, file string, fill func(raw *R) error, newConvert func() func(raw *R, rows []Row) []Row, emit func(Row) error) (int, error) {
	workers := min(runtime.GOMAXPROCS(0), maxWorkers)
	stop := make(chan struct{})
	work := make(chan *block[R], workers)
	order := make(chan *block[R], 2*workers)
	free := make(chan *block[R], 2*workers+2)
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		wg.Wait()
	}()

	wg.Go(func() {
		defer close(work)
		defer close(order)
		for {
			var b *block[R]
			select {
			case b = <-free:
			default:
				b = &block[R]{done: make(chan struct{}, 1)}
			}
			b.err = fill(&b.raw)
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
	})
	for range workers {
		wg.Go(func() {
			convert := newConvert()
			for b := range work {
				b.rows = convert(&b.raw, b.rows)
				b.done <- struct{}{}
			}
		})
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
