package converters

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/jobdrop/jobdrop/task"
)

// TestRruleColumn reads the rrule column in a CSV file (a multi-line cell
// holding EXDATE) and a JSON file, with start as the rule's DTSTART in the
// row's time zone; a rule that does not parse is the rrule column's error.
func TestRruleColumn(t *testing.T) {
	csvFile := "host,name,topic,start,rrule,timezone\n" +
		"acme,payroll,jobs,2026-01-01 18:00,\"FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1\nEXDATE:20260130T180000\",Europe/Paris\n" +
		"acme,standup,jobs,2026-01-05 09:30,\"FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH\",Europe/Paris\n"
	jsonFile := `[{"host":"acme","name":"board","topic":"jobs","start":"2026-01-01 10:00","timezone":"Europe/Paris","rrule":"RRULE:FREQ=MONTHLY;BYDAY=2TU"},` +
		`{"host":"acme","name":"broken","topic":"jobs","start":"2026-01-01 10:00","rrule":"FREQ=FORTNIGHTLY"}]`
	type readerConverter interface {
		ConvertReader(ctx context.Context, file string, r io.Reader, opts Options, emit func(Row) error) error
	}
	convert := func(c readerConverter, file, text string) map[string]Row {
		t.Helper()
		rows := map[string]Row{}
		err := c.ConvertReader(context.Background(), file, strings.NewReader(text), Options{}, func(r Row) error {
			rows[r.Def.Name] = r
			if r.Err != nil {
				rows["error"] = r
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	paris := task.Location("Europe/Paris")
	firstFires := func(r Row, n int) string {
		t.Helper()
		if r.Err != nil || r.Def.Start == nil {
			t.Fatalf("row %d: %v (start %v)", r.Line, r.Err, r.Def.Start)
		}
		var out []string
		for _, ms := range r.Def.NextFires(*r.Def.Start, *r.Def.Start-1, n) {
			out = append(out, task.Time(ms).In(paris).Format("Mon 2006-01-02 15:04"))
		}
		return strings.Join(out, ", ")
	}

	csvRows := convert(CSV{}, "jobs.csv", csvFile)
	// The last working day of January is excluded; February's is a
	// Friday, March's a Tuesday.
	if got, want := firstFires(csvRows["payroll"], 2), "Fri 2026-02-27 18:00, Tue 2026-03-31 18:00"; got != want {
		t.Errorf("payroll fires %s, want %s", got, want)
	}
	if got, want := firstFires(csvRows["standup"], 4), "Mon 2026-01-05 09:30, Thu 2026-01-08 09:30, Mon 2026-01-19 09:30, Thu 2026-01-22 09:30"; got != want {
		t.Errorf("standup fires %s, want %s", got, want)
	}

	jsonRows := convert(JSON{}, "jobs.json", jsonFile)
	if got, want := firstFires(jsonRows["board"], 2), "Tue 2026-01-13 10:00, Tue 2026-02-10 10:00"; got != want {
		t.Errorf("board fires %s, want %s", got, want)
	}
	bad, ok := jsonRows["error"]
	if !ok || !strings.Contains(bad.Err.Error(), "column rrule") || !strings.Contains(bad.Err.Error(), "FORTNIGHTLY") {
		t.Errorf("a bad rule gives %v, want the rrule column's error naming FORTNIGHTLY", bad.Err)
	}
}
