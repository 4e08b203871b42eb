package converters

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
)

// lines is a block of JSON Lines as read.
type lines struct {
	first int    // the number of the block's first line
	buf   []byte // the lines, one after another
	ends  []int  // where each line ends in buf
}

// jsonLines reads JSON Lines: one object per line, blank lines skipped. A
// line that is not an object is a row error, and the next line is read.
// The lines are converted on several goroutines (convertBlocks). It
// returns how many rows it emitted.
func jsonLines(ctx context.Context, file string, opts Options, br *bufio.Reader, max int64, emit func(Row) error) (int, error) {
	line := 1
	fill := func(b *lines) error {
		b.first, b.buf, b.ends = line, b.buf[:0], b.ends[:0]
		for len(b.ends) < rowsPerBlock {
			text, err := readLine(br, max)
			switch {
			case err == io.EOF:
				return io.EOF
			case errors.Is(err, errRecordTooLong):
				return fmt.Errorf("%s: line %d is longer than %d bytes; is this a JSON Lines file?", file, line, max)
			case err != nil:
				return fmt.Errorf("%s: %w", file, err)
			}
			b.buf = append(b.buf, text...)
			b.ends = append(b.ends, len(b.buf))
			line++
		}
		return nil
	}
	newConvert := func() func(*lines, []Row) []Row {
		c := newJSONRows(file, opts)
		return func(b *lines, rows []Row) []Row {
			start := 0
			for i, end := range b.ends {
				if row, blank := c.line(b.first+i, b.buf[start:end]); !blank {
					rows = append(rows, row)
				}
				start = end
			}
			return rows
		}
	}
	return convertBlocks(ctx, file, fill, newConvert, emit)
}
