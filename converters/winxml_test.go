package converters

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

func FuzzWinTask(f *testing.F) {
	for _, name := range []string{"../../../samples/windows_ledger_close.xml", "every_trigger.xml", "actions.xml", "Disk cleanup.xml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "windows", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	opts := Options{Defaults: Defaults{Topic: "jobs", Timezone: "Europe/Paris"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		prev := 0
		_ = XML{}.ConvertReader(context.Background(), "fuzz.xml", bytes.NewReader(b), opts, func(r Row) error {
			if err := checkRowFrom("fuzz.xml", prev, r); err != nil {
				t.Fatal(err)
			}
			prev = r.Line
			return nil
		})
	})
}

// winRows converts a file with WinTask and returns its rows by task name.
func winRows(t *testing.T, conv Converter, path string, opts Options) map[string]Row {
	t.Helper()
	got := map[string]Row{}
	err := conv.Convert(context.Background(), path, opts, func(r Row) error {
		if r.Err != nil {
			t.Fatalf("row %d: %v", r.Line, r.Err)
		}
		got[r.Def.Name] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestWinTaskSampleFires checks what a person compares with the Task
// Scheduler console: the next starts of each trigger of the sample export
// (UTF-16 with a BOM), in Paris time, and the command it runs.
func TestWinTaskSampleFires(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	rows := winRows(t, XML{}, filepath.Join("..", "samples", "windows_ledger_close.xml"), Options{Defaults: Defaults{Topic: "batch-jobs", Timezone: "Europe/Paris"}})
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, paris).UnixMilli()
	for _, tc := range []struct {
		name  string
		fires []string
	}{
		{"Finance/Ledger close.go-live", []string{"2027-01-04 07:00 Mon"}},
		{"Finance/Ledger close.weekdays", []string{"2027-01-04 23:30 Mon", "2027-01-05 23:30 Tue", "2027-01-06 23:30 Wed", "2027-01-07 23:30 Thu", "2027-01-08 23:30 Fri", "2027-01-11 23:30 Mon"}},
		{"Finance/Ledger close.office-hours", []string{"2027-01-04 09:00 Mon", "2027-01-04 11:00 Mon", "2027-01-04 13:00 Mon", "2027-01-04 15:00 Mon", "2027-01-05 09:00 Tue"}},
		{"Finance/Ledger close.month-end", []string{"2027-01-31 22:00 Sun", "2027-02-28 22:00 Sun", "2027-03-31 22:00 Wed", "2027-04-30 22:00 Fri"}},
		{"Finance/Ledger close.quarterly-audit", []string{"2027-01-12 06:00 Tue", "2027-04-13 06:00 Tue", "2027-07-13 06:00 Tue", "2027-10-12 06:00 Tue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := rows[tc.name]
			if !ok {
				t.Fatalf("no task %q among %d", tc.name, len(rows))
			}
			var got []string
			for _, ms := range r.Def.NextFires(r.Def.Anchor(from), from, len(tc.fires)) {
				got = append(got, time.UnixMilli(ms).In(paris).Format("2006-01-02 15:04 Mon"))
			}
			if strings.Join(got, ", ") != strings.Join(tc.fires, ", ") {
				t.Errorf("fires %v\nwant   %v", got, tc.fires)
			}
			d := r.Def
			if d.Host != "windows" || d.Topic != "batch-jobs" || d.Misfire != task.FireOnce || d.Paused() ||
				d.Data["windows.command"] != `C:\Batch\ledger-close.exe` || d.Data["windows.arguments"] != "--post --books EU-01" ||
				d.Data["windows.workingDirectory"] != `C:\Batch` || d.Data["windows.task"] != "Finance/Ledger close" {
				t.Errorf("task %+v", d)
			}
		})
	}
}

// TestWinTaskRandomDelayWarns: a RandomDelay is kept in data and said in
// the file's report, never silently dropped.
func TestWinTaskRandomDelayWarns(t *testing.T) {
	var warnings []string
	err := WinTask{}.Convert(context.Background(), filepath.Join("testdata", "windows", "every_trigger.xml"), Options{Defaults: Defaults{Topic: "jobs"}}, func(r Row) error {
		warnings = append(warnings, r.Warnings...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "every_trigger.xml: line 11: <RandomDelay> PT10M: Windows delays each start by up to that at random; jobdrop fires on time and keeps the delay in data windows.randomDelay"
	if len(warnings) != 1 || warnings[0] != want {
		t.Errorf("warnings %q, want [%q]", warnings, want)
	}
}

// TestXMLChoosesByRoot: the *.xml converter hands Quartz's job XML to
// QuartzXML and a Task Scheduler task to WinTask, whatever the encoding,
// and names what it wanted for any other root.
func TestXMLChoosesByRoot(t *testing.T) {
	opts := Options{Defaults: Defaults{Topic: "jobs"}}
	task := `<?xml version="1.0" encoding="UTF-16"?>
<Task xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">
  <Triggers><TimeTrigger><StartBoundary>2027-03-01T08:00:00Z</StartBoundary></TimeTrigger></Triggers>
  <Actions><Exec><Command>run.exe</Command></Exec></Actions>
</Task>`
	utf16 := func(s string, bom bool) []byte {
		var b []byte
		if bom {
			b = []byte{0xFF, 0xFE}
		}
		for _, r := range s {
			b = append(b, byte(r), byte(r>>8))
		}
		return b
	}
	for _, tc := range []struct {
		name, want string
		doc        []byte
	}{
		{"UTF-16 with a BOM", "windows/run", utf16(task, true)},
		{"UTF-16 without a BOM", "windows/run", utf16(task, false)},
		{"UTF-8 declaring UTF-16", "windows/run", []byte(task)},
		{"UTF-8 with a BOM", "windows/run", append([]byte{0xEF, 0xBB, 0xBF}, strings.Replace(task, "UTF-16", "UTF-8", 1)...)},
		{"Quartz", "DEFAULT/report", []byte(`<job-scheduling-data xmlns="http://www.quartz-scheduler.org/xml/JobSchedulingData" version="2.0"><schedule>
<job><name>report</name><job-class>com.acme.Report</job-class></job>
<trigger><cron><name>t</name><job-name>report</job-name><cron-expression>0 0 8 * * ?</cron-expression></cron></trigger>
</schedule></job-scheduling-data>`)},
		{"other root", `run.xml: the root element is <beans> in namespace "http://www.springframework.org/schema/beans": want Quartz job scheduling data (<job-scheduling-data>) or a Windows Task Scheduler task (<Task> in http://schemas.microsoft.com/windows/2004/02/mit/task)`,
			[]byte(`<?xml version="1.0"?><beans xmlns="http://www.springframework.org/schema/beans"/>`)},
		{"not XML", "run.xml: not well-formed XML", []byte("host,name\nacme,report\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := XML{}.ConvertReader(context.Background(), "run.xml", bytes.NewReader(tc.doc), opts, func(r Row) error {
				if r.Err != nil {
					t.Fatalf("row %d: %v", r.Line, r.Err)
				}
				got = append(got, r.Def.Key())
				return nil
			})
			if err != nil {
				got = append(got, err.Error())
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
