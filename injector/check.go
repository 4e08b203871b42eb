package injector

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/record"
)

// checkSize rejects a file over its size limit: it returns the rejection
// and the batch that records it, or nil.
func checkSize(f File) (*RejectedError, record.Batch) {
	limit := f.MaxBytes
	if limit == 0 {
		limit = DefaultMaxBytes
	}
	fi, err := os.Stat(f.Path)
	if limit < 0 || err != nil || fi.Size() <= limit {
		return nil, record.Batch{} // an unreadable file is reported when it is read
	}
	// Not hashed: reading a huge file whole is what the limit avoids. The
	// rejection is audited without a batch id.
	batch := record.Batch{File: f.Name, Folder: f.Folder, Size: fi.Size(), Arrival: f.Arrival}
	rej := &RejectedError{File: f.Name, Err: fmt.Errorf("file is %s (%d bytes), over the size limit of %s (max_file_bytes: %d); nothing was read or injected",
		humanBytes(fi.Size()), fi.Size(), humanBytes(limit), limit)}
	batch.Errors = []string{rej.Error()}
	return rej, batch
}

// humanBytes formats n bytes in binary units, as "1.5 GiB".
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// bufferRows bounds how many converted rows check keeps (files of sync
// folders, files with chains), so a small file is read once and a large
// one is converted again while producing instead of held in memory.
const bufferRows = 20_000

// check converts the whole file without producing anything, collecting
// every problem: invalid rows and task keys repeated within the file. It
// returns the valid rows when there were few enough to keep, and the lines
// of the invalid ones. It gives chains every row, and sync (if not nil)
// what a sync needs of them.
// A file being injected waits as pace says; nil: it never waits.
func (in *Injector) check(ctx context.Context, f File, conv converters.Converter, opts converters.Options, sync *syncRows, chains *ChainCheck, pace *pacer) (_ []converters.Row, _ *RejectedError, _ map[int]struct{}, largest int) {
	rej := &RejectedError{File: f.Name}
	var rows []converters.Row
	skip := map[int]struct{}{}
	keep := true
	rowCheck := NewRowCheck(f.Name, in.cfg.Topics).WithLimit(in.recordLimit(ctx))
	fail := func(line string) { rej.fail(line, in.cfg.MaxErrors) }
	err := conv.Convert(ctx, f.Path, opts, func(r converters.Row) error {
		pace.row(ctx)
		if rej.read(&r, f, in.cfg.MaxErrors) {
			skip[r.Line] = struct{}{}
			chains.Row(&r, false)
			if sync != nil {
				sync.add(r, false)
			}
			return nil
		}
		if err := rowCheck.Check(r); err != nil {
			fail(err.Error())
			skip[r.Line] = struct{}{}
			chains.Row(&r, false)
			if sync != nil {
				sync.add(r, false)
			}
			return nil
		}
		chains.Row(&r, true)
		if sync != nil {
			sync.add(r, true)
		}
		if keep && len(rows) < bufferRows {
			rows = append(rows, r)
		} else {
			keep, rows = false, nil
		}
		return ctx.Err()
	})
	rej.Bad = len(skip)
	if err != nil && !(sync != nil && errors.Is(err, converters.ErrNoRows)) {
		// A sync file may hold no task: it would empty its source,
		// which is held for review.
		rej.Err = err
	} else if rej.Rows == 0 && sync == nil {
		rej.Err = errors.New("no rows: the file holds no job")
	}
	if !keep {
		rows = nil
	}
	return rows, rej, skip, rowCheck.largest
}

// recordLimit is the largest record the brokers take on the input and
// state topics, asked at each file so that a changed setting is seen: a
// row over it is a row error, before anything is produced. When the
// brokers cannot be asked, the producers' own limit stands, and the
// brokers' answer to the records themselves decides.
func (in *Injector) recordLimit(ctx context.Context) kafka.RecordLimit {
	limit, err := kafka.RecordLimitOf(ctx, kadm.NewClient(in.admin), in.cfg.Topics.Input, in.cfg.Topics.State)
	if err != nil {
		in.log.Debug("cannot read the brokers' record limit; using the producers' own", "limit", limit.Bytes, "err", err)
	}
	return limit
}
