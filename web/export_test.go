package web_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/xuri/excelize/v2"

	"github.com/jobdrop/jobdrop/internal/record"
)

// hostile are audit values a spreadsheet would run as formulas.
var hostile = []string{`=HYPERLINK("http://evil.example","x")`, "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"}

func hostileHistory(t *testing.T) *feed {
	f := newFeed(t, now)
	for i, v := range hostile {
		f.add(topics.Audit, "api", record.Audit{ID: fmt.Sprintf("h%d", i), At: ms(now.Add(time.Duration(i) * time.Second)),
			Actor: v, Action: "task.created", Object: v, Outcome: record.OutcomeOK, Detail: v})
	}
	return f
}

func TestAuditExportCSVNeutralisesFormulas(t *testing.T) {
	ts := serve(t, hostileHistory(t))
	resp, body := get(t, ts.URL+"/audit/export.csv")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("export.csv: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(hostile)+1 {
		t.Fatalf("%d rows, want header + %d", len(rows), len(hostile))
	}
	for i, v := range hostile {
		row := rows[i+1]
		if row[1] != "'"+v || row[3] != "'"+v || row[5] != "'"+v {
			t.Errorf("row %d = %q, want each of actor, object, detail as '%q", i+1, row, v)
		}
	}
}

func TestAuditExportXLSXHasNoFormula(t *testing.T) {
	ts := serve(t, hostileHistory(t))
	resp, body := get(t, ts.URL+"/audit/export.xlsx?actor="+strings.ReplaceAll(hostile[1], "+", "%2B"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export.xlsx: %s", resp.Status)
	}
	book, err := excelize.OpenReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer book.Close()
	rows, err := book.GetRows("Audit")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1][1] != "'"+hostile[1] {
		t.Errorf("filtered rows = %q, want the header and one row with actor '%s", rows, hostile[1])
	}
	// No cell of the workbook holds a formula.
	zr, err := zip.NewReader(strings.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		if bytes.Contains(b, []byte("<f>")) || bytes.Contains(b, []byte("<f ")) {
			t.Errorf("%s holds a formula", f.Name)
		}
	}
}

// TestAuditExportStreamsWithFlatMemory exports a day of 100,000 audit
// events and checks that the heap grows by far less than the export: the
// rows are streamed, never held.
func TestAuditExportStreamsWithFlatMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a store with 100,000 events")
	}
	f := newFeed(t, now)
	day := now.Truncate(24 * time.Hour)
	const n = 100_000
	var batch []*kgo.Record
	for i := range n {
		v, _ := json.Marshal(record.Audit{ID: fmt.Sprintf("e%06d", i), At: ms(day.Add(time.Duration(i) * 800 * time.Millisecond)),
			Actor: "operator-" + fmt.Sprint(i%7), Action: "task.paused", Object: fmt.Sprintf("acme/task-%06d", i),
			Outcome: record.OutcomeOK, Detail: "=cmd|' /C calc'!A0 and some words to make the row longer than a few bytes"})
		batch = append(batch, &kgo.Record{Topic: topics.Audit, Key: []byte("api"), Value: v, Offset: int64(i), Timestamp: now})
		if len(batch) == 5000 || i == n-1 {
			if _, err := f.st.Apply(context.Background(), topics, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	ts := serve(t, f)
	for _, ext := range []string{"csv", "xlsx"} {
		t.Run(ext, func(t *testing.T) {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			peak := before.HeapInuse
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for {
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					peak = max(peak, m.HeapInuse)
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()
			resp, err := http.Get(ts.URL + "/audit/export." + ext + "?from=" + day.Format("2006-01-02") + "&to=" + day.Format("2006-01-02"))
			if err != nil {
				t.Fatal(err)
			}
			size, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			close(stop)
			<-done
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("export: %v %s", err, resp.Status)
			}
			growth := int64(peak) - int64(before.HeapInuse)
			t.Logf("%s export of %d events: %d bytes, heap grew by at most %.1f MiB", ext, n, size, float64(growth)/(1<<20))
			if size < 5<<20 && ext == "csv" {
				t.Errorf("export is %d bytes: not all %d rows", size, n)
			}
			// CSV holds one row at a time. excelize's stream writer holds
			// up to its 16 MiB chunk (in a buffer that grows by doubling)
			// before it spills to a temporary file, whatever the row count.
			limit := int64(16 << 20)
			if ext == "xlsx" {
				limit = 80 << 20
			}
			if growth > limit {
				t.Errorf("heap grew by %.1f MiB during the export: rows are held, not streamed", float64(growth)/(1<<20))
			}
		})
	}
}
