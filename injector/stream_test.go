package injector

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jobdrop/jobdrop/converters"
)

// countingConverter emits rows numbered from 1 to n, and closes at once it
// has emitted atOnce of them.
type countingConverter struct {
	n, atOnce int
	at        chan struct{}
}

func (c countingConverter) Convert(ctx context.Context, _ string, _ converters.Options, emit func(converters.Row) error) error {
	for i := 1; i <= c.n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(converters.Row{Line: i}); err != nil {
			return err
		}
		if i == c.atOnce {
			close(c.at)
		}
	}
	return nil
}

// TestHeldRowsComeFirstAndInOrder converts a file while it is not ready to
// be read: past the chunks it may hold, the conversion waits; once ready,
// every row comes once, in file order.
func TestHeldRowsComeFirstAndInOrder(t *testing.T) {
	held := maxHeld * chunkRows
	conv := countingConverter{n: held + 3*chunkRows + 7, atOnce: held, at: make(chan struct{})}
	ready := make(chan struct{})
	rows := convertAsync(context.Background(), File{Path: "jobs.csv"}, conv, converters.Options{}, ready)
	defer rows.stop()
	<-conv.at // every chunk it may hold is held, none handed over
	select {
	case c := <-rows.chunks:
		t.Fatalf("a chunk of %d rows handed over before the stream was ready", len(c))
	default:
	}
	close(ready)
	next := 1
	for chunk := range rows.chunks {
		for _, r := range chunk {
			if r.Line != next {
				t.Fatalf("row %d after row %d", r.Line, next-1)
			}
			next++
		}
		rows.recycle(chunk)
	}
	<-rows.done
	if rows.err != nil || next-1 != conv.n {
		t.Fatalf("%d rows of %d, %v", next-1, conv.n, rows.err)
	}
}

// TestStopEndsAHeldConversion stops a conversion that holds its rows and
// waits for ready: stop returns, the conversion cancelled.
func TestStopEndsAHeldConversion(t *testing.T) {
	conv := countingConverter{n: (maxHeld + 2) * chunkRows, atOnce: maxHeld * chunkRows, at: make(chan struct{})}
	rows := convertAsync(context.Background(), File{Path: "jobs.csv"}, conv, converters.Options{}, make(chan struct{}))
	<-conv.at
	rows.stop()
	if !errors.Is(rows.err, context.Canceled) {
		t.Errorf("conversion ended with %v, want it cancelled", rows.err)
	}
}

// TestHeldBytesCountTheData reckons the memory of held rows with their
// data: rows of large data stop the holding long before 65,536 of them.
func TestHeldBytesCountTheData(t *testing.T) {
	chunk := make([]converters.Row, chunkRows)
	small := heldBytes(chunk)
	for i := range chunk {
		chunk[i].Def.Data = map[string]string{"payload": strings.Repeat("x", 64<<10)}
	}
	large := heldBytes(chunk)
	if large-small < chunkRows*64<<10 {
		t.Fatalf("a chunk of 64 KiB payloads reckoned %d bytes, %d without them", large, small)
	}
	if chunks := maxHeldBytes/large + 1; chunks >= maxHeld {
		t.Errorf("%d chunks of 64 KiB payloads would be held, as many as of empty rows", chunks)
	}
}
