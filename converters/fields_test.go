package converters

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

func TestColumnsRow(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	ms := func(t time.Time) *int64 { return task.Ptr(t.UnixMilli()) }
	base := task.Definition{Host: "acme", Name: "job", Action: task.Insert, Topic: "jobs"}
	with := func(f func(*task.Definition)) task.Definition {
		d := base
		f(&d)
		return d
	}
	std := []string{"host", "name", "action", "topic", "start", "timeUnit", "time", "cron", "timezone", "end", "data"}

	tests := []struct {
		name   string
		header []string // std when nil
		opts   Options
		cells  []string
		want   task.Definition
		// wantErrs are substrings of the row errors, one per error, in
		// column order; want is ignored when set.
		wantErrs []string
	}{
		{
			name:  "minimal row",
			cells: []string{"acme", "job", "", "jobs", "", "", "", "", "", "", ""},
			want:  base,
		},
		{
			name:  "short row: missing cells are empty",
			cells: []string{"acme", "job", "", "jobs"},
			want:  base,
		},
		{
			name:  "action in any case",
			cells: []string{"acme", "job", " update ", "jobs"},
			want:  with(func(d *task.Definition) { d.Action = task.Update }),
		},
		{
			name:  "delete needs only the key",
			cells: []string{"acme", "job", "Delete"},
			want:  with(func(d *task.Definition) { d.Action = task.Delete; d.Topic = "" }),
		},
		{
			name:     "unknown action",
			cells:    []string{"acme", "job", "run", "jobs"},
			wantErrs: []string{`column action: value "run": must be INSERT, UPDATE, DELETE, TRIGGER, RELEASE or SKIP`},
		},
		{
			name:   "defaults fill empty cells",
			header: []string{"host", "name", "action", "topic", "timezone"},
			opts:   Options{Defaults: Defaults{Host: "dflt", Topic: "dflt-topic", Action: "update", Timezone: "Europe/Paris"}},
			cells:  []string{" ", "job", "", "", ""},
			want:   task.Definition{Host: "dflt", Name: "job", Action: task.Update, Topic: "dflt-topic", Timezone: "Europe/Paris"},
		},
		{
			name:   "cells win over defaults",
			header: []string{"host", "name", "action", "topic", "timezone"},
			opts:   Options{Defaults: Defaults{Host: "dflt", Topic: "dflt-topic", Action: "update", Timezone: "Europe/Paris"}},
			cells:  []string{"acme", "job", "insert", "jobs", "UTC"},
			want:   with(func(d *task.Definition) { d.Timezone = "UTC" }),
		},
		{
			name:   "defaults for absent columns",
			header: []string{"name"},
			opts:   Options{Defaults: Defaults{Host: "acme", Topic: "jobs"}},
			cells:  []string{"job"},
			want:   base,
		},
		{
			name:  "plural unit",
			cells: []string{"acme", "job", "", "jobs", "", "MINUTES", "15"},
			want:  with(func(d *task.Definition) { d.Frequency = &task.Frequency{TimeUnit: task.Minutes, Time: 15} }),
		},
		{
			name:  "singular lowercase unit",
			cells: []string{"acme", "job", "", "jobs", "", "day", "1"},
			want:  with(func(d *task.Definition) { d.Frequency = &task.Frequency{TimeUnit: task.Days, Time: 1} }),
		},
		{
			name:  "milliseconds",
			cells: []string{"acme", "job", "", "jobs", "", "Millisecond", "500"},
			want:  with(func(d *task.Definition) { d.Frequency = &task.Frequency{TimeUnit: task.Milliseconds, Time: 500} }),
		},
		{
			name:     "unknown unit",
			cells:    []string{"acme", "job", "", "jobs", "", "fortnight", "1"},
			wantErrs: []string{`column timeUnit: value "fortnight": must be one of MILLISECONDS, SECONDS, MINUTES, HOURS, DAYS`},
		},
		{
			name:     "time without unit",
			cells:    []string{"acme", "job", "", "jobs", "", "", "5"},
			wantErrs: []string{`column timeUnit: is required when time is set`},
		},
		{
			name:     "unit without time",
			cells:    []string{"acme", "job", "", "jobs", "", "hours", ""},
			wantErrs: []string{`column time: is required when timeUnit is set`},
		},
		{
			name:     "time without a timeUnit column",
			header:   []string{"host", "name", "topic", "time"},
			cells:    []string{"acme", "job", "jobs", "5"},
			wantErrs: []string{`row 7: column timeUnit: is required when time is set`},
		},
		{
			name:     "time names the mapped columns",
			header:   []string{"host", "name", "topic", "Every", "Unit"},
			opts:     Options{Mapping: map[string]string{"every": "time", "unit": "timeUnit"}},
			cells:    []string{"acme", "job", "jobs", "", "hours"},
			wantErrs: []string{`column Every: is required when Unit is set`},
		},
		{
			name:     "zero time",
			cells:    []string{"acme", "job", "", "jobs", "", "hours", "0"},
			wantErrs: []string{`column time: value "0": must be a positive whole number`},
		},
		{
			name:     "negative time",
			cells:    []string{"acme", "job", "", "jobs", "", "hours", "-1"},
			wantErrs: []string{`column time: value "-1": must be a positive whole number`},
		},
		{
			name:     "fractional time",
			cells:    []string{"acme", "job", "", "jobs", "", "hours", "1.5"},
			wantErrs: []string{`column time: value "1.5": must be a positive whole number`},
		},
		{
			name:     "time over int32",
			cells:    []string{"acme", "job", "", "jobs", "", "hours", "2147483648"},
			wantErrs: []string{`column time: value "2147483648": must be a positive whole number`},
		},
		{
			name:  "cron with time zone",
			cells: []string{"acme", "job", "", "jobs", "", "", "", "0 8 * * 1-5", "Europe/Paris"},
			want: with(func(d *task.Definition) {
				d.Cron, d.CronDialect, d.Timezone = "0 8 * * 1-5", task.DialectUnix, "Europe/Paris"
			}),
		},
		{
			name:     "cron and frequency",
			cells:    []string{"acme", "job", "", "jobs", "", "hours", "1", "0 8 * * *"},
			wantErrs: []string{`column cron: value "0 8 * * *": cannot be combined with a frequency`},
		},
		{
			name:     "unknown time zone",
			cells:    []string{"acme", "job", "", "jobs", "2026-03-01 08:00", "", "", "", "Europe/Pariss"},
			wantErrs: []string{`column timezone: value "Europe/Pariss": must be an IANA time zone`},
		},
		{
			name:  "local start in the row's time zone",
			cells: []string{"acme", "job", "", "jobs", "2026-03-01 08:00", "", "", "", "America/New_York"},
			want: with(func(d *task.Definition) {
				d.Start = ms(time.Date(2026, 3, 1, 8, 0, 0, 0, newYork))
				d.Timezone = "America/New_York"
			}),
		},
		{
			name:  "local start in the default time zone",
			opts:  Options{Defaults: Defaults{Timezone: "Europe/Paris"}},
			cells: []string{"acme", "job", "", "jobs", "2026-07-01 08:00:30"},
			want: with(func(d *task.Definition) {
				d.Start = ms(time.Date(2026, 7, 1, 8, 0, 30, 0, paris))
				d.Timezone = "Europe/Paris"
			}),
		},
		{
			name:  "start and end",
			cells: []string{"acme", "job", "", "jobs", "2026-03-01T08:00:00Z", "", "", "", "", "2026-03-02T08:00:00Z"},
			want: with(func(d *task.Definition) {
				d.Start = ms(time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC))
				d.End = ms(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC))
			}),
		},
		{
			name:     "end before start",
			cells:    []string{"acme", "job", "", "jobs", "2026-03-02 08:00", "", "", "", "", "2026-03-01 08:00"},
			wantErrs: []string{`column end: value "2026-03-01 08:00": must not be before start`},
		},
		{
			name:     "bad end",
			cells:    []string{"acme", "job", "", "jobs", "", "", "", "", "", "next week"},
			wantErrs: []string{`column end: value "next week": want RFC 3339`},
		},
		{
			name:  "data object",
			cells: []string{"acme", "job", "", "jobs", "", "", "", "", "", "", ` {"team": "ops", "retries": 3, "dry": false} `},
			want:  with(func(d *task.Definition) { d.Data = map[string]string{"team": "ops", "retries": "3", "dry": "false"} }),
		},
		{
			name:   "data keys keep their case",
			header: []string{"host", "name", "topic", "Data.Owner", "data.team", "data.empty"},
			cells:  []string{"acme", "job", "jobs", "alice", "ops", ""},
			want:   with(func(d *task.Definition) { d.Data = map[string]string{"Owner": "alice", "team": "ops"} }),
		},
		{
			name:   "data object and keys merge",
			header: []string{"host", "name", "topic", "data", "data.team"},
			cells:  []string{"acme", "job", "jobs", `{"a":"1","team":"ops"}`, "ops"},
			want:   with(func(d *task.Definition) { d.Data = map[string]string{"a": "1", "team": "ops"} }),
		},
		{
			name:     "data object and key disagree",
			header:   []string{"host", "name", "topic", "data", "data.team"},
			cells:    []string{"acme", "job", "jobs", `{"team":"ops"}`, "dev"},
			wantErrs: []string{`column data.team: value "dev": key "team" is also set by column data to "ops"`},
		},
		{
			name:     "data not JSON",
			cells:    []string{"acme", "job", "", "jobs", "", "", "", "", "", "", `team=ops`},
			wantErrs: []string{`column data: value "team=ops": must be a JSON object of strings`},
		},
		{
			name:     "data array",
			cells:    []string{"acme", "job", "", "jobs", "", "", "", "", "", "", `["a"]`},
			wantErrs: []string{`column data: value "[\"a\"]": must be a JSON object of strings`},
		},
		{
			name:     "data empty key",
			cells:    []string{"acme", "job", "", "jobs", "", "", "", "", "", "", `{"":"x"}`},
			wantErrs: []string{`column data: value "{\"\":\"x\"}": keys must not be empty`},
		},
		{
			name:     "value under an unnamed column",
			header:   []string{"host", "name", "topic", ""},
			cells:    []string{"acme", "job", "jobs", "stray"},
			wantErrs: []string{`column #4: value "stray": value under a column with no header`},
		},
		{
			name:     "value beyond the header",
			header:   []string{"host", "name", "topic"},
			cells:    []string{"acme", "job", "jobs", "", "stray"},
			wantErrs: []string{`column #5: value "stray": value beyond the last column (the header has 3 columns)`},
		},
		{
			name:   "empty cells beyond the header are fine",
			header: []string{"host", "name", "topic"},
			cells:  []string{"acme", "job", "jobs", "", " "},
			want:   base,
		},
		{
			name:   "ignored column",
			header: []string{"host", "name", "topic", "comment"},
			opts:   Options{Mapping: map[string]string{"comment": "-"}},
			cells:  []string{"acme", "job", "jobs", "anything at all, even caf\xe9"},
			want:   base,
		},
		{
			name:     "invalid UTF-8",
			cells:    []string{"acme", "caf\xe9", "", "jobs"},
			wantErrs: []string{`column name: value "caf\xe9": is not valid UTF-8 text`},
		},
		{
			name:   "errors name the file's columns",
			header: []string{"Server", "Job", "Queue"},
			opts:   Options{Mapping: map[string]string{"server": "host", "job": "name", "queue": "topic"}},
			cells:  []string{"a/b", "", "bad topic"},
			wantErrs: []string{
				`column Server: value "a/b": must not contain "/"`,
				`column Job: is required`,
				`column Queue: value "bad topic": must be a Kafka topic name`,
			},
		},
		{
			name:     "a field without a column keeps its name",
			header:   []string{"name", "topic"},
			opts:     Options{Defaults: Defaults{Host: "acme"}},
			cells:    []string{"", "jobs"},
			wantErrs: []string{`column name: is required`},
		},
		{
			name:  "every problem of a row, in column order",
			cells: []string{"a/b", "", "go", "", "tomorrow", "weeks", "x", "bad cron", "Nowhere", "never", "{"},
			wantErrs: []string{
				`column host: value "a/b"`,
				`column name: is required`,
				`column action: value "go"`,
				`column topic: is required`,
				`column start: value "tomorrow"`,
				`column timeUnit: value "weeks"`,
				`column time: value "x"`,
				`column cron: value "bad cron"`,
				`column timezone: value "Nowhere"`,
				`column end: value "never"`,
				`column data: value "{"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := tt.header
			if header == nil {
				header = std
			}
			c, err := NewColumns("jobs.csv", 1, header, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			row := c.Row(7, tt.cells)
			if row.Line != 7 {
				t.Errorf("Line = %d, want 7", row.Line)
			}
			if tt.wantErrs == nil {
				if row.Err != nil {
					t.Fatalf("Row: %v", row.Err)
				}
				if !row.Def.Equal(&tt.want) {
					got, _ := json.Marshal(row.Def)
					want, _ := json.Marshal(tt.want)
					t.Errorf("Def =\n  %s\nwant\n  %s", got, want)
				}
				return
			}
			got := RowErrors(row.Err)
			if len(got) != len(tt.wantErrs) {
				t.Fatalf("Row errors = %v, want %d errors %q", row.Err, len(tt.wantErrs), tt.wantErrs)
			}
			if len(got) == 1 {
				if _, ok := row.Err.(*RowError); !ok {
					t.Errorf("a single problem is %T, want the *RowError itself", row.Err)
				}
			}
			for i, re := range got {
				if !strings.Contains(re.Error(), tt.wantErrs[i]) {
					t.Errorf("error %d = %q, want it to contain %q", i, re, tt.wantErrs[i])
				}
				if re.File != "jobs.csv" || re.Row != 7 {
					t.Errorf("error %d names %s row %d, want jobs.csv row 7", i, re.File, re.Row)
				}
			}
		})
	}
}
