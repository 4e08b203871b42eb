package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/xuri/excelize/v2"
)

// writeCSV writes the job list of n rows.
func writeCSV(tb testing.TB, path string, n int) { writeCSVFrom(tb, path, 0, n) }

// writeCSVFrom writes the job list of rows from to from+n-1.
func writeCSVFrom(tb testing.TB, path string, from, n int) {
	tb.Helper()
	writeFile(tb, path, func(w *bufio.Writer) {
		w.WriteString("host,name,action,topic,timeUnit,time,data.command\n")
		for i := from; i < from+n; i++ {
			d := def(i)
			fmt.Fprintf(w, "%s,%s,%s,%s,%s,%d,%s\n", d.Host, d.Name, d.Action, d.Topic, d.Frequency.TimeUnit, d.Frequency.Time, d.Data["command"])
		}
	})
}

// writeFile writes path through a buffer with write.
func writeFile(tb testing.TB, path string, write func(w *bufio.Writer)) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	write(w)
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// writeJSONL writes the same job list as JSON Lines: each line the
// light-scheduler TaskDefinition of its row, as the injector writes it.
func writeJSONL(tb testing.TB, path string, n int) {
	tb.Helper()
	writeFile(tb, path, func(w *bufio.Writer) {
		for i := range n {
			d := def(i)
			v, _ := json.Marshal(&d)
			w.Write(v)
			w.WriteByte('\n')
		}
	})
}

// writeXLSX writes the same job list as a workbook.
func writeXLSX(tb testing.TB, path string, n int) {
	tb.Helper()
	x := excelize.NewFile()
	defer x.Close()
	sw, err := x.NewStreamWriter("Sheet1")
	if err != nil {
		tb.Fatal(err)
	}
	if err := sw.SetRow("A1", []any{"host", "name", "action", "topic", "timeUnit", "time", "data.command"}); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		d := def(i)
		cell, _ := excelize.CoordinatesToCellName(1, i+2)
		if err := sw.SetRow(cell, []any{d.Host, d.Name, string(d.Action), d.Topic, string(d.Frequency.TimeUnit), d.Frequency.Time, d.Data["command"]}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := sw.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := x.SaveAs(path); err != nil {
		tb.Fatal(err)
	}
}

// writeKcatInput writes n key:value lines as the injector's commands:
// the same keys and the same JSON values.
func writeKcatInput(tb testing.TB, path string, n int) {
	tb.Helper()
	writeFile(tb, path, func(w *bufio.Writer) {
		for i := range n {
			d := def(i)
			v, _ := json.Marshal(d)
			w.WriteString(d.Key())
			w.WriteByte(':')
			w.Write(v)
			w.WriteByte('\n')
		}
	})
}
