package injector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/record"
)

// chunkRows is how many converted rows pass from the converting goroutine
// to the producing one at a time.
const chunkRows = 256

// chunksAhead is how many chunks conversion may run ahead of producing.
const chunksAhead = 8

// errRowsRejected ends a file's transaction at its first invalid row
// (PolicyReject), or at its end when no row was valid (PolicyGoodRows).
var errRowsRejected = errors.New("rows rejected")

// errTwoPasses ends the stream of a file at its first valid row that
// follows tasks (after), or whose task is too large for the producer's
// small batches: its transaction is aborted before anything of it is
// committed, and the file is injected again in two passes
// (injectChecked). A chain's predecessors, its cycles and its link
// records, which go before every command, depend on every row; and the
// first pass finds the largest task, for which the producer is made anew
// before the second (largeBatches).
var errTwoPasses = errors.New("the file is injected in two passes")

// rowStream hands a file's converted rows from the goroutine that
// converts them to the one that checks, encodes and produces them.
type rowStream struct {
	chunks chan []converters.Row
	free   chan []converters.Row
	done   chan struct{}
	err    error // the converter's, once done is closed
	cancel context.CancelFunc
}

// maxHeld and maxHeldBytes bound the chunks converted before the stream
// is read (see convertAsync): 65,536 rows, and about 32 MiB of them (as
// heldBytes reckons), whichever comes first.
const (
	maxHeld      = 256
	maxHeldBytes = 32 << 20
)

// heldBytes reckons the memory of a chunk of rows: their structs, and
// the text of their tasks.
func heldBytes(chunk []converters.Row) int {
	n := len(chunk) * int(unsafe.Sizeof(converters.Row{}))
	for i := range chunk {
		d := &chunk[i].Def
		n += len(d.Host) + len(d.Name) + len(d.Topic) + len(d.Cron) + len(d.Rrule)
		for k, v := range d.Data {
			n += len(k) + len(v) + 16
		}
	}
	return n
}

// convertAsync converts f on a goroutine of its own. Until ready is
// closed, the rows it converts are held, up to maxHeld chunks, rather
// than handed over chunksAhead at a time: a file is converted while it is
// hashed, and its rows produced once its batch is known. stop ends it.
func convertAsync(ctx context.Context, f File, conv converters.Converter, opts converters.Options, ready <-chan struct{}) *rowStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &rowStream{
		chunks: make(chan []converters.Row, chunksAhead),
		free:   make(chan []converters.Row, chunksAhead+2),
		done:   make(chan struct{}),
		cancel: cancel,
	}
	go func() {
		defer close(s.done)
		defer close(s.chunks)
		var held [][]converters.Row
		heldSize := 0
		// give hands chunk over, or holds it while ready is open; at the
		// end of the file (last) it waits for ready.
		give := func(chunk []converters.Row, last bool) error {
			if ready != nil {
				select {
				case <-ready:
				default:
					if !last && len(held) < maxHeld && heldSize < maxHeldBytes {
						held = append(held, chunk)
						heldSize += heldBytes(chunk)
						return nil
					}
					select {
					case <-ready:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				ready = nil
				for _, c := range held {
					s.chunks <- c
				}
				held = nil
			}
			if len(chunk) > 0 {
				s.chunks <- chunk
			}
			return nil
		}
		chunk := make([]converters.Row, 0, chunkRows)
		s.err = conv.Convert(ctx, f.Path, opts, func(r converters.Row) error {
			chunk = append(chunk, r)
			if len(chunk) < chunkRows {
				return nil
			}
			if err := give(chunk, false); err != nil {
				return err
			}
			select {
			case chunk = <-s.free:
			default:
				chunk = make([]converters.Row, 0, chunkRows)
			}
			return nil
		})
		if err := give(chunk, true); err != nil && s.err == nil {
			s.err = err
		}
	}()
	return s
}

// stop ends the conversion and waits for its goroutine.
func (s *rowStream) stop() {
	s.cancel()
	for range s.chunks {
	}
	<-s.done
}

// recycle hands a consumed chunk back to the converter, and the data maps
// of its rows back to the converters.
func (s *rowStream) recycle(chunk []converters.Row) {
	converters.RecycleData(chunk)
	clear(chunk)
	select {
	case s.free <- chunk[:0]:
	default:
	}
}

// recordArena hands out records, header slices and bytes from blocks, so
// that a row costs a few allocations per block rather than a few of its
// own. What it hands out is never written again: the producer owns it.
type recordArena struct {
	recs    []kgo.Record
	headers []kgo.RecordHeader
	bytes   []byte
}

const (
	arenaRecords = 512
	arenaBytes   = 64 << 10
)

func (a *recordArena) record() *kgo.Record {
	if len(a.recs) == 0 {
		a.recs = make([]kgo.Record, arenaRecords)
	}
	r := &a.recs[0]
	a.recs = a.recs[1:]
	return r
}

func (a *recordArena) headerSlice(n int) []kgo.RecordHeader {
	if len(a.headers) < n {
		a.headers = make([]kgo.RecordHeader, n*arenaRecords)
	}
	h := a.headers[:n:n]
	a.headers = a.headers[n:]
	return h
}

// room makes at least n bytes free in the current block.
func (a *recordArena) room(n int) {
	if cap(a.bytes)-len(a.bytes) < n {
		a.bytes = make([]byte, 0, max(arenaBytes, n))
	}
}

// take returns the bytes appended since mark as a slice of their own.
func (a *recordArena) take(mark int) []byte {
	return a.bytes[mark:len(a.bytes):len(a.bytes)]
}

// stream injects a file that does not sync in one pass, in one
// transaction: its rows are converted on one goroutine while another
// checks, encodes and produces each into the open transaction. Under
// PolicyReject the transaction is aborted at the first invalid row and
// the rest of the file is only read for the report; under PolicyGoodRows
// the invalid rows are left out. The batch's audit record, with the
// counts, is produced last, so it commits with the rows or not at all.
// At the first valid row that follows tasks, or holds a task too large
// for the producer's small batches, it stops, aborting the transaction,
// and returns errTwoPasses: nothing of the file is committed or audited.
func (in *Injector) stream(ctx context.Context, f File, rows *rowStream, batch *record.Batch) (Result, error) {
	rej := &RejectedError{File: f.Name}
	rowCheck := NewRowCheck(f.Name, in.cfg.Topics).WithLimit(in.recordLimit(ctx))
	defer rows.stop()

	fail := func(line string) { rej.fail(line, in.cfg.MaxErrors) }
	src := record.Source{Batch: batch.ID, File: f.Name, Folder: f.Folder, Actor: in.actor(f)}
	hs := sourceHeaders(src)
	sourceBytes := len(src.Folder) + len(src.Actor) // a command's headers hold them
	var arena recordArena
	var value []byte
	produced := 0
	again := false // a valid row follows tasks, or is too large: see errTwoPasses
	in.mu.Lock()
	small := !in.large
	in.mu.Unlock()

	// keys and hashes are those of the task keys of the chunk's rows that
	// converted (nil for the others), made by prepare before next.
	keys, hashes := make([][]byte, 0, chunkRows), make([]uint64, 0, chunkRows)
	prepare := func(chunk []converters.Row) {
		keys, hashes = keys[:0], slices.Grow(hashes[:0], len(chunk))[:len(chunk)]
		for i := range chunk {
			d := &chunk[i].Def
			if chunk[i].Err != nil {
				keys = append(keys, nil)
				continue
			}
			arena.room(len(d.Host) + 1 + len(d.Name) + 24)
			mark := len(arena.bytes)
			arena.bytes = append(arena.bytes, d.Host...)
			arena.bytes = append(arena.bytes, '/')
			arena.bytes = append(arena.bytes, d.Name...)
			keys = append(keys, arena.take(mark))
		}
		rowCheck.hashAll(keys, hashes)
	}

	// next checks row i of the chunk prepared; when produce is not nil and
	// the row is valid it produces its command. It reports whether the
	// row was valid.
	next := func(chunk []converters.Row, i int, now time.Time, produce func(*kgo.Record)) bool {
		r := &chunk[i]
		if rej.read(r, f, in.cfg.MaxErrors) {
			rej.Bad++
			return false
		}
		d := &r.Def
		key := keys[i]
		value = appendDefinition(value[:0], d)
		if err := rowCheck.check(r, key, hashes[i], value); err != nil {
			fail(err.Error())
			rej.Bad++
			return false
		}
		if len(d.After) > 0 && !d.Action.KeyOnly() {
			again = true
			return true
		}
		if produce == nil {
			return true
		}
		if small && rowCheck.largest+sourceBytes > smallBatchRecord {
			again = true
			return true
		}
		arena.room(24)
		mark := len(arena.bytes)
		arena.bytes = strconv.AppendInt(arena.bytes, int64(r.Line), 10)
		line := arena.take(mark)
		arena.room(len(value))
		mark = len(arena.bytes)
		arena.bytes = append(arena.bytes, value...)
		rec := arena.record()
		rec.Topic, rec.Key, rec.Value, rec.Timestamp = in.cfg.Topics.Input, key, arena.take(mark), now
		rec.Headers = arena.headerSlice(len(hs) + 1)
		copy(rec.Headers, hs)
		rec.Headers[len(hs)] = kgo.RecordHeader{Key: record.HeaderRow, Value: line}
		produce(rec)
		produced++
		return true
	}

	var fileErr error // the file's own problem: rejects it
	txErr := in.transactFile(ctx, f, 1, func(produce func(*kgo.Record)) error {
		for chunk := range rows.chunks {
			// The command's timestamp is when it was submitted: a task
			// with no start counts from it.
			now := in.cfg.Clock.Now()
			prepare(chunk)
			for i := range chunk {
				valid := next(chunk, i, now, produce)
				if again {
					rows.recycle(chunk)
					return errTwoPasses
				}
				if valid || f.Policy == PolicyGoodRows {
					continue
				}
				for j := i + 1; j < len(chunk) && !again; j++ {
					next(chunk, j, now, nil)
				}
				rows.recycle(chunk)
				return errRowsRejected
			}
			rows.recycle(chunk)
		}
		<-rows.done
		if err := rows.err; err != nil {
			fileErr = err
			return err
		}
		if rej.Rows == 0 {
			fileErr = errors.New("no rows: the file holds no job")
			return fileErr
		}
		if rej.Bad >= rej.Rows {
			return errRowsRejected
		}
		batch.Rows, batch.Warnings = rej.Rows, rej.Warnings
		_, detail := in.outcome(f, batch, rej)
		produce(in.auditRecord(f, record.ActionFileInjected, record.OutcomeOK, batch, detail))
		return nil
	})
	if errors.Is(txErr, errRowsRejected) {
		// The rest of the file completes the report; nothing of it is
		// produced.
		for chunk := range rows.chunks {
			prepare(chunk)
			for i := 0; i < len(chunk) && !again; i++ {
				next(chunk, i, time.Time{}, nil)
			}
			rows.recycle(chunk)
			if again {
				break
			}
		}
		if !again {
			<-rows.done
			if err := rows.err; err != nil {
				fileErr = err
			}
		}
	}
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	if again {
		// The two passes make the whole report, its chains' problems
		// included.
		return Result{}, errTwoPasses
	}
	batch.Rows, batch.Warnings = rej.Rows, rej.Warnings
	if errors.Is(txErr, errRowsRejected) || fileErr != nil {
		rej.Err = fileErr
		if fileErr != nil && !errors.Is(txErr, fileErr) && !errors.Is(txErr, errRowsRejected) {
			in.log.Warn("abort rejected file", "file", f.Name, "err", txErr)
		}
		batch.Rejected = rej.Bad
		batch.Errors = rej.Errors[:min(len(rej.Errors), record.MaxBatchErrors)]
		return in.reject(ctx, f, *batch, rej, firstLine(rej.Error()))
	}
	if txErr != nil {
		if refused := refusedLines(f.Name, txErr); len(refused) > 0 {
			// The brokers refuse some of the file's records whenever they
			// are sent: the file's fault, not the cluster's.
			batch.Rejected, batch.Errors = 0, nil
			return in.refused(ctx, f, *batch, rej.Rows, refused)
		}
		if !errors.Is(txErr, errClosed) {
			return Result{}, fmt.Errorf("inject %s: %w: %w", f.Name, ErrUnavailable, txErr)
		}
		return Result{}, fmt.Errorf("inject %s: %w", f.Name, txErr)
	}
	outcome, _ := in.outcome(f, batch, rej)
	in.mu.Lock()
	in.injected[batch.ID] = true
	in.mu.Unlock()
	in.log.Info("file injected", "file", f.Name, "batch", batch.ID, "rows", batch.Rows, "rejected", batch.Rejected, "produced", produced)
	res := Result{Outcome: outcome, Batch: *batch}
	if outcome == Partial {
		res.Report = rej
	}
	return res, nil
}

// outcome says what a file's valid rows make of it, and the detail of its
// audit event, and marks batch and rej of a partly injected file.
func (in *Injector) outcome(f File, batch *record.Batch, rej *RejectedError) (Outcome, string) {
	if rej.Bad == 0 {
		return Injected, fmt.Sprintf("%d tasks injected", batch.Rows)
	}
	rej.Partial = true
	batch.Rejected = rej.Bad
	batch.Errors = rej.Errors[:min(len(rej.Errors), record.MaxBatchErrors)]
	return Partial, fmt.Sprintf("%d of %d rows injected, %d rejected (policy %s); the rejected rows are listed in %s.errors.txt beside the archived file",
		rej.Rows-rej.Bad, rej.Rows, rej.Bad, PolicyGoodRows, f.Name)
}

// sourceHeaders are the headers every command of a file carries but its
// row's, in the order command writes them.
func sourceHeaders(src record.Source) []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: record.HeaderActor, Value: []byte(src.Actor)},
		{Key: record.HeaderBatch, Value: []byte(src.Batch)},
		{Key: record.HeaderFile, Value: []byte(src.File)},
		{Key: record.HeaderFolder, Value: []byte(src.Folder)},
	}
}
