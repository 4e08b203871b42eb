package converters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// jsonRowsReader produces a JSON array (or JSON Lines) of n objects on
// demand, so a test reads a file far larger than it holds in memory.
type jsonRowsReader struct {
	n, next int
	lines   bool
	buf     []byte
}

func (r *jsonRowsReader) Read(p []byte) (int, error) {
	for len(r.buf) < len(p) && r.next <= r.n {
		switch {
		case r.next == r.n && !r.lines:
			r.buf = append(r.buf, "\n]\n"...)
		case r.next == r.n:
		default:
			sep := ",\n"
			if r.next == 0 {
				sep = "[\n"
			}
			if r.lines {
				sep = ""
			}
			r.buf = fmt.Appendf(r.buf, `%s{"host":"acme","name":"job-%d","topic":"jobs","frequency":{"timeUnit":"MINUTES","time":5},"start":1772348400000,"data":{"owner":"team-%d"}}`, sep, r.next, r.next%7)
			if r.lines {
				r.buf = append(r.buf, '\n')
			}
		}
		r.next++
	}
	if len(r.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.buf)
	r.buf = r.buf[:copy(r.buf, r.buf[n:])]
	return n, nil
}

func TestJSONStreams(t *testing.T) {
	rows := 100_000 // about 16 MB of JSON
	if testing.Short() || raceDetector {
		rows = 50_000
	}
	for _, lines := range []bool{false, true} {
		t.Run(fmt.Sprintf("lines=%v", lines), func(t *testing.T) {
			var heapMid uint64
			seen := 0
			err := JSON{}.ConvertReader(context.Background(), "big.json", &jsonRowsReader{n: rows, lines: lines}, Options{}, func(r Row) error {
				if r.Err != nil {
					return r.Err
				}
				if want := fmt.Sprintf("job-%d", seen); r.Def.Name != want || r.Line != seen+1 {
					return fmt.Errorf("got %s at row %d, want %s at row %d", r.Def.Name, r.Line, want, seen+1)
				}
				seen++
				if seen == rows/2 {
					runtime.GC()
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					heapMid = m.HeapAlloc
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if seen != rows {
				t.Fatalf("emitted %d rows, want %d", seen, rows)
			}
			t.Logf("heap half-way through %d objects: %d KiB", rows, heapMid>>10)
			if heapMid > 4<<20 {
				t.Errorf("heap half-way through the file = %d MiB; the file is not streamed", heapMid>>20)
			}
		})
	}
}

func TestJSONRecordTooLong(t *testing.T) {
	big := strings.Repeat("x", 2<<20)
	for name, in := range map[string]string{
		"array": `[{"host":"acme","name":"` + big + `"}]`,
		"lines": `{"host":"acme","name":"` + big + `"}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			err := JSON{}.ConvertReader(context.Background(), "big.json", strings.NewReader(in), Options{}, func(Row) error { return nil })
			if err == nil || !strings.Contains(err.Error(), "is longer than 1048576 bytes") {
				t.Fatalf("got %v, want an error about the object's length", err)
			}
		})
	}
}

func FuzzJSON(f *testing.F) {
	f.Add([]byte(`[{"host":"acme","name":"a","topic":"t","frequency":{"timeUnit":"MINUTES","time":5},"data":{"k":"v"}}]`))
	f.Add([]byte("{\"host\":\"a\",\"name\":\"b\",\"topic\":\"t\",\"window\":{\"from\":\"08:00\",\"to\":\"09:00\"}}\n{\n[1]\n"))
	f.Add([]byte(`[1, "x", null, {"name": null, "start": 1e400}]`))
	f.Add([]byte(`[{"host":"acme","name":"r","topic":"t","after":["a","b/c"],"on":"failure","delay":300000,"retry":{"attempts":3,"delay":60000},"timeout":"1h"}]`))
	f.Add([]byte("{\"host\":\"a\",\"name\":\"b\",\"topic\":\"t\",\"after\":\"x, y\",\"delay\":\"5m\",\"retry\":\"3 every 10m overdue\",\"timeout\":-1e3}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		prev := 0
		_ = JSON{MaxRecordBytes: 4096}.ConvertReader(context.Background(), "fuzz.json", bytes.NewReader(b), Options{}, func(r Row) error {
			if err := checkRow("fuzz.json", prev, r); err != nil {
				t.Fatal(err)
			}
			prev = r.Line
			return nil
		})
	})
}

// BenchmarkJSONLines converts 100,000 light-scheduler TaskDefinitions,
// one a line: the conversion alone of the JSON Lines drop.
func BenchmarkJSONLines(b *testing.B) {
	benchConvert(b, 100_000, func(rows int) (string, io.Reader) {
		return "bench.jsonl", &jsonRowsReader{n: rows, lines: true}
	}, JSON{}.ConvertReader)
}

// TestJSONLinesAcrossBlocks reads JSON Lines whose bad, blank and good
// lines fall in many of the blocks converted apart: every row comes in
// file order with its own line number and error, a line too long ends the
// file after every row before it, and a stop asked by emit leaves no
// goroutine behind.
func TestJSONLinesAcrossBlocks(t *testing.T) {
	const lines = 5 * rowsPerBlock
	var in strings.Builder
	bad := map[int]bool{}
	for i := 1; i <= lines; i++ {
		switch {
		case i%97 == 0:
			in.WriteString("\n") // blank: no row
		case i%61 == 0:
			bad[i] = true
			in.WriteString(`{"host":"acme","name":` + "\n")
		default:
			fmt.Fprintf(&in, `{"host":"acme","name":"job-%d","topic":"jobs","cron":"0 5 * * *"}`+"\n", i)
		}
	}
	text := in.String()
	before := runtime.NumGoroutine()

	var got []int
	err := JSON{}.ConvertReader(context.Background(), "blocks.jsonl", strings.NewReader(text), Options{}, func(r Row) error {
		got = append(got, r.Line)
		if bad[r.Line] != (r.Err != nil) {
			t.Errorf("line %d: error %v, want one: %v", r.Line, r.Err, bad[r.Line])
		}
		if r.Err == nil && r.Def.Name != fmt.Sprintf("job-%d", r.Line) {
			t.Errorf("line %d holds %s", r.Line, r.Def.Name)
		}
		if r.Err != nil && !strings.Contains(r.Err.Error(), fmt.Sprintf("blocks.jsonl: row %d:", r.Line)) {
			t.Errorf("line %d: error %q does not name its row", r.Line, r.Err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := 1; i <= lines; i++ {
		if i%97 != 0 {
			want++
		}
	}
	if len(got) != want || !slices.IsSorted(got) {
		t.Fatalf("%d rows (in order: %v), want %d in line order", len(got), slices.IsSorted(got), want)
	}

	// A line too long in the fourth block: the rows of the lines before
	// it, then the file's error naming it.
	long := 3*rowsPerBlock + 10
	parts := strings.SplitAfter(text, "\n")
	parts[long-1] = `{"host":"acme","name":"` + strings.Repeat("x", 5000) + `"}` + "\n"
	n := 0
	err = JSON{MaxRecordBytes: 4096}.ConvertReader(context.Background(), "blocks.jsonl", strings.NewReader(strings.Join(parts, "")), Options{}, func(r Row) error {
		if r.Line >= long {
			t.Errorf("row of line %d emitted after the line too long (%d)", r.Line, long)
		}
		n++
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("line %d is longer than 4096 bytes", long)) {
		t.Fatalf("got %v, want line %d too long", err, long)
	}
	if n != long-1-(long-1)/97 {
		t.Errorf("%d rows before the line too long, want %d", n, long-1-(long-1)/97)
	}

	stopsInSecondBlock(t, before, func(emit func(Row) error) error {
		return JSON{}.ConvertReader(context.Background(), "blocks.jsonl", strings.NewReader(text), Options{}, emit)
	})
}

// stopsInSecondBlock has convert stop at emit's error in the second block
// of a file, and checks that it returns that error, emits no row after it
// and leaves no more goroutines than before.
func stopsInSecondBlock(t *testing.T, before int, convert func(emit func(Row) error) error) {
	t.Helper()
	stop := errors.New("stop here")
	n := 0
	err := convert(func(r Row) error {
		if n++; n == rowsPerBlock+5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != rowsPerBlock+5 {
		t.Fatalf("got %v after %d rows, want emit's error after %d", err, n, rowsPerBlock+5)
	}
	// A goroutine the conversion waited for may still be ending: it is
	// counted until it has.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(time.Millisecond)
	}
	if after > before {
		t.Errorf("%d goroutines 5s after the conversions, %d before", after, before)
	}
}
