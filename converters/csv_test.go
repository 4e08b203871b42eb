package converters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/jobdrop/jobdrop/task"
)

// rowsReader produces a CSV file of n rows on demand, so a test can read a
// file far larger than it ever holds in memory.
type rowsReader struct {
	n, next int
	buf     []byte
}

func newRowsReader(n int) *rowsReader {
	return &rowsReader{n: n, buf: []byte("host,name,topic,timeUnit,time,start,data.owner\n")}
}

func (r *rowsReader) Read(p []byte) (int, error) {
	for len(r.buf) < len(p) && r.next < r.n {
		r.buf = fmt.Appendf(r.buf, "acme,job-%d,jobs,minutes,5,2026-03-01 08:00,team-%d\n", r.next, r.next%7)
		r.next++
	}
	if len(r.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.buf)
	r.buf = r.buf[:copy(r.buf, r.buf[n:])]
	return n, nil
}

func TestCSVStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 1,000,000-row file")
	}
	rows := 1_000_000 // about 75 MB of CSV
	if raceDetector {
		rows = 400_000 // 30 MB: half of it held would be over the bound too
	}
	var heapMid uint64
	seen := 0
	err := CSV{}.ConvertReader(context.Background(), "big.csv", newRowsReader(rows), Options{}, func(r Row) error {
		if r.Err != nil {
			return r.Err
		}
		if want := fmt.Sprintf("job-%d", seen); r.Def.Name != want || r.Line != seen+2 {
			return fmt.Errorf("row %d: got %s at line %d, want %s at line %d", seen, r.Def.Name, r.Line, want, seen+2)
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
	// Half-way through, the rows read so far are 15 to 37 MB of text;
	// holding them would show. Streaming keeps the heap to buffers and one row.
	if heapMid > 16<<20 {
		t.Errorf("heap half-way through the file = %d MiB; the file is not streamed", heapMid>>20)
	}
}

func TestCSVRecordTooLong(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"unclosed quote takes in the rest", "host,name,topic\nacme,ok,jobs\nacme,\"open," + strings.Repeat("acme,x,jobs\n", 2000)},
		{"one huge line", "host,name,topic\nacme,ok,jobs\nacme," + strings.Repeat("x", 30000) + ",jobs\n"},
		{"huge header", strings.Repeat("h", 30000) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CSV{MaxRecordBytes: 8 << 10}.ConvertReader(context.Background(), "huge.csv", strings.NewReader(tt.in), Options{}, func(Row) error { return nil })
			if err == nil || !strings.Contains(err.Error(), "huge.csv: after line") || !strings.Contains(err.Error(), "longer than 8192 bytes") {
				t.Errorf("ConvertReader = %v, want a record-too-long file error", err)
			}
		})
	}
	// The same content under the default bound converts.
	in := "host,name,topic\nacme," + strings.Repeat("x", 200) + ",jobs\n"
	if err := (CSV{}).ConvertReader(context.Background(), "ok.csv", strings.NewReader(in), Options{}, func(Row) error { return nil }); err != nil {
		t.Errorf("ConvertReader of a normal file: %v", err)
	}
}

func TestCSVCancelMidway(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const rows = 10_000
	seen := 0
	err := CSV{}.ConvertReader(ctx, "jobs.csv", newRowsReader(rows), Options{}, func(Row) error {
		seen++
		if seen == 100 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ConvertReader = %v, want context.Canceled", err)
	}
	if seen >= rows {
		t.Errorf("emitted all %d rows after the context was cancelled", seen)
	}
}

func TestCSVSeparators(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // names of the converted tasks
	}{
		{"comma", "host,name,topic\nacme,a;b,jobs\n", []string{"a;b"}},
		{"semicolon", "host;name;topic\nacme;a,b;jobs\n", []string{"a,b"}},
		{"tab", "host\tname\ttopic\nacme\ta b\tjobs\n", []string{"a b"}},
		{"separators inside quoted headers do not count", "\"host;x\",name,topic\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			opts := Options{Mapping: map[string]string{"host;x": "host"}}
			err := CSV{}.ConvertReader(context.Background(), "jobs.csv", strings.NewReader(tt.in), opts, func(r Row) error {
				if r.Err != nil {
					return r.Err
				}
				got = append(got, r.Def.Name)
				return nil
			})
			if tt.want == nil {
				// Parsed with ",", the header is valid and the file has no rows.
				if !errors.Is(err, ErrNoRows) {
					t.Fatalf("ConvertReader = %v, want ErrNoRows", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("names = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzCSV checks that no input makes the CSV converter panic, and that
// every row it emits is a valid definition or an error made of *RowError
// values naming the file and the row.
func FuzzCSV(f *testing.F) {
	inputs, err := filepath.Glob("testdata/csv/*.csv")
	if err != nil || len(inputs) == 0 {
		f.Fatalf("no seed files: %v", err)
	}
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	withDefaults := Options{
		Defaults: Defaults{Host: "acme", Topic: "jobs", Action: "update", Timezone: "Europe/Paris"},
		Mapping:  map[string]string{"job": "name", "every": "timeUnit", "comment": "-", "owner": "data.owner"},
	}
	f.Fuzz(func(t *testing.T, data []byte, defaults bool) {
		opts := Options{}
		if defaults {
			opts = withDefaults
		}
		prev := 0
		err := CSV{MaxRecordBytes: 4 << 10}.ConvertReader(context.Background(), "fuzz.csv", bytes.NewReader(data), opts, func(r Row) error {
			if err := checkRow("fuzz.csv", prev, r); err != nil {
				t.Fatal(err)
			}
			prev = r.Line
			return nil
		})
		for _, re := range RowErrors(err) {
			if re.File != "fuzz.csv" {
				t.Fatalf("file error %q names file %q", re, re.File)
			}
		}
		if err != nil && !strings.HasPrefix(err.Error(), "fuzz.csv: ") {
			t.Fatalf("file error %q does not start with the file name", err)
		}
	})
}

func BenchmarkCSV(b *testing.B) {
	benchConvert(b, 100_000, func(rows int) (string, io.Reader) { return "bench.csv", newRowsReader(rows) }, CSV{}.ConvertReader)
}

// benchConvert converts the rows input makes with convert, each loop,
// and reports the time a row took. The rows' data maps are recycled a
// chunk of rows at a time, as the injector does once it has encoded them.
func benchConvert(b *testing.B, rows int, input func(rows int) (string, io.Reader), convert readerConverter) {
	opts := Options{Defaults: Defaults{Timezone: "Europe/Paris"}}
	chunk := make([]Row, 0, rowsPerBlock)
	for b.Loop() {
		n := 0
		file, r := input(rows)
		err := convert(context.Background(), file, r, opts, func(r Row) error {
			if r.Err != nil {
				return r.Err
			}
			n++
			if chunk = append(chunk, r); len(chunk) == cap(chunk) {
				RecycleData(chunk)
				chunk = chunk[:0]
			}
			return nil
		})
		if err != nil || n != rows {
			b.Fatalf("%d rows, %v", n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}

// lineReader produces a header and one row holding a value of size bytes.
type lineReader struct {
	head []byte
	left int
}

func (r *lineReader) Read(p []byte) (int, error) {
	if len(r.head) > 0 {
		n := copy(p, r.head)
		r.head = r.head[n:]
		return n, nil
	}
	if r.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.left)
	for i := range n {
		p[i] = 'x'
	}
	r.left -= n
	return n, nil
}

func TestCSVRejectsHugeLine(t *testing.T) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := CSV{}.ConvertReader(context.Background(), "huge.csv", &lineReader{head: []byte("host,name,topic\nacme,"), left: 50 << 20}, Options{}, func(Row) error {
		t.Fatal("a row was emitted from a 50 MB line")
		return nil
	})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "huge.csv: after line 1: a record is longer than 1048576 bytes") {
		t.Fatalf("got %v, want a clear error about the record's length", err)
	}
	if after.HeapAlloc > before.HeapAlloc+100<<20 || after.TotalAlloc-before.TotalAlloc > 100<<20 {
		t.Errorf("rejecting a 50 MB line allocated %d MiB, want < 100 MiB", (after.TotalAlloc-before.TotalAlloc)>>20)
	}
	t.Logf("%v; allocated %d KiB", err, (after.TotalAlloc-before.TotalAlloc)>>10)
}

// TestCSVAcrossBlocks reads a CSV file whose blank rows, quoted newlines,
// syntax errors and short rows fall in many of the blocks converted
// apart: every row comes in file order with the line it starts at and its
// own error, and a stop asked by emit leaves no goroutine behind.
func TestCSVAcrossBlocks(t *testing.T) {
	const records = 5 * rowsPerBlock
	var in strings.Builder
	in.WriteString("host,name,topic,cron,data.note\r\n")
	line := 2
	type want struct {
		name string
		err  string // part of the row's error; empty: valid
	}
	wants := map[int]want{}
	for i := 1; i <= records; i++ {
		name := fmt.Sprintf("job-%d", i)
		switch {
		case i%97 == 0:
			in.WriteString("\r\n") // blank: no row
			line++
		case i%61 == 0:
			fmt.Fprintf(&in, "acme,%s,jobs,0 5 * * *,say \"hi\"\r\n", name)
			wants[line] = want{err: `a " inside a value`}
			line++
		case i%53 == 0:
			fmt.Fprintf(&in, "acme,%s,jobs\r\n", name)
			wants[line] = want{err: "has 3 fields, the header has 5"}
			line++
		case i%7 == 0:
			fmt.Fprintf(&in, "acme,%s,jobs,0 5 * * *,\"two\r\nlines\"\r\n", name)
			wants[line] = want{name: name}
			line += 2
		default:
			fmt.Fprintf(&in, "acme,%s,jobs,0 5 * * *,n%d\r\n", name, i)
			wants[line] = want{name: name}
			line++
		}
	}
	text := in.String()
	before := runtime.NumGoroutine()

	var got []int
	err := CSV{}.ConvertReader(context.Background(), "blocks.csv", strings.NewReader(text), Options{}, func(r Row) error {
		got = append(got, r.Line)
		w, ok := wants[r.Line]
		switch {
		case !ok:
			t.Errorf("row at line %d, where no record starts", r.Line)
		case w.err == "" && r.Err != nil:
			t.Errorf("line %d: %v", r.Line, r.Err)
		case w.err != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), fmt.Sprintf("blocks.csv: row %d", r.Line)) || !strings.Contains(r.Err.Error(), w.err)):
			t.Errorf("line %d: error %v, want one naming its row and %q", r.Line, r.Err, w.err)
		case w.err == "" && r.Def.Name != w.name:
			t.Errorf("line %d holds %s, want %s", r.Line, r.Def.Name, w.name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(wants) || !slices.IsSorted(got) {
		t.Fatalf("%d rows (in order: %v), want %d in line order", len(got), slices.IsSorted(got), len(wants))
	}

	stopsInSecondBlock(t, before, func(emit func(Row) error) error {
		return CSV{}.ConvertReader(context.Background(), "blocks.csv", strings.NewReader(text), Options{}, emit)
	})
}

// TestRecycledDataStartsEmpty converts rows into data maps that earlier
// rows gave back, from a data column and from a data.<key> column: each
// holds its own row's keys and no other.
func TestRecycledDataStartsEmpty(t *testing.T) {
	var in strings.Builder
	in.WriteString("host,name,topic,cron,data,data.extra\n")
	const rows = 3 * rowsPerBlock
	want := func(i int) map[string]string {
		m := map[string]string{}
		if i%3 != 0 {
			m[fmt.Sprintf("k%d", i%5)] = fmt.Sprintf("v%d", i)
		}
		if i%2 == 0 {
			m["extra"] = fmt.Sprintf("e%d", i)
		}
		if len(m) == 0 {
			return nil
		}
		return m
	}
	for i := range rows {
		data, extra := "", ""
		if i%3 != 0 {
			data = fmt.Sprintf(`"{""k%d"": ""v%d""}"`, i%5, i)
		}
		if i%2 == 0 {
			extra = fmt.Sprintf("e%d", i)
		}
		fmt.Fprintf(&in, "acme,job-%d,jobs,0 5 * * *,%s,%s\n", i, data, extra)
	}
	n := 0
	var chunk []Row
	recycle := func() {
		RecycleData(chunk)
		for _, r := range chunk {
			if r.Def.Data != nil {
				t.Errorf("line %d: data %v after RecycleData, want nil", r.Line, r.Def.Data)
			}
		}
		chunk = chunk[:0]
	}
	err := CSV{}.ConvertReader(context.Background(), "data.csv", strings.NewReader(in.String()), Options{}, func(r Row) error {
		i := r.Line - 2
		if r.Err != nil || !maps.Equal(r.Def.Data, want(i)) || (r.Def.Data == nil) != (want(i) == nil) {
			t.Errorf("line %d: data %v (%v), want %v", r.Line, r.Def.Data, r.Err, want(i))
		}
		if chunk = append(chunk, r); len(chunk) == 10 {
			recycle()
		}
		n++
		return nil
	})
	recycle()
	if err != nil || n != rows {
		t.Fatalf("%d rows, %v", n, err)
	}
}

// TestLargeDataMapsAreNotKept gives back a row of a large data object: its
// map is let go, not kept for later rows, which it would hold room for.
func TestLargeDataMapsAreNotKept(t *testing.T) {
	big := map[string]string{}
	for i := range maxRecycledKeys + 1 {
		big[fmt.Sprint("k", i)] = "v"
	}
	recycled.Lock()
	before := len(recycled.batches)
	recycled.Unlock()
	rows := []Row{{Def: task.Definition{Data: big}}}
	RecycleData(rows)
	recycled.Lock()
	after := len(recycled.batches)
	recycled.Unlock()
	if after != before || rows[0].Def.Data != nil {
		t.Errorf("batches %d to %d, data %v after RecycleData; want the map let go", before, after, rows[0].Def.Data)
	}
}
