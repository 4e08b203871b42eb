package converters

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

func TestNewColumns(t *testing.T) {
	tests := []struct {
		name   string
		header []string
		opts   Options
		// wantErrs are substrings of the file errors, one per error, in order.
		wantErrs []string
	}{
		{
			name:   "every default column",
			header: []string{"host", "name", "action", "topic", "start", "timeUnit", "time", "cron", "timezone", "end", "data", "data.owner"},
		},
		{
			name:   "case and surrounding spaces ignored",
			header: []string{" HOST", "Name ", "\tTopic\t", "TIMEUNIT", "tImE", "DATA.Owner"},
		},
		{
			name:     "unknown column with a suggestion",
			header:   []string{"host", "name", "topic", "tiemUnit"},
			wantErrs: []string{`column tiemUnit: unknown column (did you mean timeUnit?); known columns are host, name,`},
		},
		{
			name:     "unknown column far from any known one",
			header:   []string{"host", "name", "topic", "owner"},
			wantErrs: []string{`column owner: unknown column; known columns are`},
		},
		{
			name:     "unknown column says how to ignore it",
			header:   []string{"host", "name", "topic", "x"},
			wantErrs: []string{`map it to "-" to ignore it`},
		},
		{
			name:     "duplicate column ignoring case",
			header:   []string{"host", "name", "topic", "NAME "},
			wantErrs: []string{`row 1: column NAME: duplicate column: "name" already gives name`},
		},
		{
			name:     "duplicate data key",
			header:   []string{"host", "name", "topic", "data.a", "data.a"},
			wantErrs: []string{`column data.a: duplicate column`},
		},
		{
			name:   "data keys differing in case are two keys",
			header: []string{"host", "name", "topic", "data.a", "data.A"},
		},
		{
			name:     "data column without a key",
			header:   []string{"host", "name", "topic", "data."},
			wantErrs: []string{`column data.: unknown column`},
		},
		{
			name:     "missing name",
			header:   []string{"host", "topic"},
			wantErrs: []string{`column name: missing column`},
		},
		{
			name:     "missing host and topic without defaults",
			header:   []string{"name"},
			wantErrs: []string{`column host: missing column and no default host`, `column topic: missing column and no default topic`},
		},
		{
			name:   "missing host and topic with defaults",
			header: []string{"name"},
			opts:   Options{Defaults: Defaults{Host: "acme", Topic: "jobs"}},
		},
		{
			name:   "mapping renames, ignoring case",
			header: []string{"Server", "Job", "Queue"},
			opts:   Options{Mapping: map[string]string{"server": "host", " JOB ": "Name", "queue": "TOPIC"}},
		},
		{
			name:   "mapping to - ignores a column",
			header: []string{"host", "name", "topic", "comment"},
			opts:   Options{Mapping: map[string]string{"Comment": "-"}},
		},
		{
			name:   "mapping frees a default name",
			header: []string{"host", "name", "topic", "job"},
			opts:   Options{Mapping: map[string]string{"name": "-", "job": "name"}},
		},
		{
			name:     "mapping onto a column already present",
			header:   []string{"host", "name", "topic", "job"},
			opts:     Options{Mapping: map[string]string{"job": "name"}},
			wantErrs: []string{`column job: duplicate column: "name" already gives name`},
		},
		{
			name:     "mapping to an unknown column",
			header:   []string{"host", "name", "topic", "job"},
			opts:     Options{Mapping: map[string]string{"job": "nmae"}},
			wantErrs: []string{`mapping "job": unknown target column "nmae" (did you mean name?)`},
		},
		{
			name:     "mapping names differing in case disagree",
			header:   []string{"host", "name", "topic"},
			opts:     Options{Mapping: map[string]string{"job": "name", "JOB": "-"}},
			wantErrs: []string{`mapping "job": maps to both "-" and "name"`},
		},
		{
			name:     "bad defaults",
			header:   []string{"name"},
			opts:     Options{Defaults: Defaults{Host: "a/b", Topic: "no spaces", Action: "run", Timezone: "Nowhere/City"}},
			wantErrs: []string{`default host: must not contain "/"`, `default action: must be INSERT, UPDATE, DELETE or TRIGGER (got "RUN")`, `default topic: must be a Kafka topic name`, `default timezone: must be an IANA time zone`},
		},
		{
			name:   "empty header cells are ignored",
			header: []string{"host", "", "name", "topic", " "},
		},
		{
			name:     "header not UTF-8",
			header:   []string{"host", "name", "topic", "caf\xe9"},
			wantErrs: []string{`column #4: header is not valid UTF-8`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewColumns("jobs.csv", 1, tt.header, tt.opts)
			got := RowErrors(err)
			if len(got) != len(tt.wantErrs) {
				t.Fatalf("NewColumns errors = %v, want %d errors %q", err, len(tt.wantErrs), tt.wantErrs)
			}
			for i, re := range got {
				if !strings.Contains(re.Error(), tt.wantErrs[i]) {
					t.Errorf("error %d = %q, want it to contain %q", i, re, tt.wantErrs[i])
				}
				if re.File != "jobs.csv" {
					t.Errorf("error %d names file %q", i, re.File)
				}
			}
			if err == nil && c.Len() != len(tt.header) {
				t.Errorf("Len() = %d, want %d", c.Len(), len(tt.header))
			}
		})
	}
}

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
			wantErrs: []string{`column action: value "run": must be INSERT, UPDATE, DELETE or TRIGGER`},
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

func TestParseTime(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      string
		loc     *time.Location
		want    time.Time
		wantErr string
	}{
		{"RFC 3339 UTC", "2026-03-01T08:00:00Z", paris, time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC), ""},
		{"RFC 3339 offset ignores the zone", "2026-03-01T08:00:00-05:00", paris, time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC), ""},
		{"RFC 3339 fraction", "2026-03-01T08:00:00.123456Z", time.UTC, time.Date(2026, 3, 1, 8, 0, 0, 123_000_000, time.UTC), ""},
		{"epoch milliseconds", "1772352000123", paris, time.UnixMilli(1772352000123), ""},
		{"local minutes", "2026-03-01 08:00", paris, time.Date(2026, 3, 1, 8, 0, 0, 0, paris), ""},
		{"local seconds", "2026-03-01 08:00:59", paris, time.Date(2026, 3, 1, 8, 0, 59, 0, paris), ""},
		{"local T minutes", "2026-03-01T08:00", paris, time.Date(2026, 3, 1, 8, 0, 0, 0, paris), ""},
		{"local T seconds", "2026-03-01T08:00:59", paris, time.Date(2026, 3, 1, 8, 0, 59, 0, paris), ""},
		{"local in UTC", "2026-03-01 08:00", time.UTC, time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC), ""},
		{"local in summer time", "2026-07-01 08:00", paris, time.Date(2026, 7, 1, 6, 0, 0, 0, time.UTC), ""},
		{"epoch seconds", "1772352000", time.UTC, time.Time{}, "epoch seconds? multiply by 1000"},
		{"epoch out of range", "99999999999999999999", time.UTC, time.Time{}, "out of range"},
		{"date alone", "2026-03-01", time.UTC, time.Time{}, "want RFC 3339"},
		{"day first", "01/03/2026 08:00", time.UTC, time.Time{}, "want RFC 3339"},
		{"no such day", "2026-02-30 08:00", time.UTC, time.Time{}, "want RFC 3339"},
		{"words", "tomorrow", time.UTC, time.Time{}, "YYYY-MM-DD HH:MM[:SS]"},
		{"negative number", "-1", time.UTC, time.Time{}, "want RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTime(tt.in, tt.loc)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseTime(%q) = %d, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseTime(%q): %v", tt.in, err)
			}
			if want := tt.want.UnixMilli(); got != want {
				t.Errorf("parseTime(%q) = %s, want %s", tt.in, time.UnixMilli(got).UTC(), tt.want.UTC())
			}
		})
	}
}

func TestColumnsCellsTime(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	excel := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC) // how a spreadsheet date arrives
	header := []string{"host", "name", "topic", "start", "end", "timezone"}
	tests := []struct {
		name      string
		cells     []Cell
		wantStart time.Time
		wantEnd   time.Time
	}{
		{
			name:      "local time read in the row's zone",
			cells:     []Cell{{Text: "acme"}, {Text: "job"}, {Text: "jobs"}, {Text: "ignored", Time: excel, Local: true}, {}, {Text: "Asia/Tokyo"}},
			wantStart: time.Date(2026, 3, 1, 8, 0, 0, 0, tokyo),
		},
		{
			name:      "instant kept as is",
			cells:     []Cell{{Text: "acme"}, {Text: "job"}, {Text: "jobs"}, {Time: excel}, {Time: excel.Add(time.Hour)}, {Text: "Asia/Tokyo"}},
			wantStart: excel,
			wantEnd:   excel.Add(time.Hour),
		},
		{
			name:      "text when no time is given",
			cells:     []Cell{{Text: "acme"}, {Text: "job"}, {Text: "jobs"}, {Text: "2026-03-01 08:00"}},
			wantStart: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewColumns("jobs.xlsx", 1, header, Options{})
			if err != nil {
				t.Fatal(err)
			}
			row := c.Cells(2, tt.cells)
			if row.Err != nil {
				t.Fatal(row.Err)
			}
			if row.Def.Start == nil || *row.Def.Start != tt.wantStart.UnixMilli() {
				t.Errorf("Start = %v, want %s", row.Def.Start, tt.wantStart.UTC())
			}
			switch {
			case tt.wantEnd.IsZero() && row.Def.End != nil:
				t.Errorf("End = %d, want none", *row.Def.End)
			case !tt.wantEnd.IsZero() && (row.Def.End == nil || *row.Def.End != tt.wantEnd.UnixMilli()):
				t.Errorf("End = %v, want %s", row.Def.End, tt.wantEnd.UTC())
			}
		})
	}
}

func TestRowErrors(t *testing.T) {
	a := &RowError{File: "f", Row: 1, Err: errors.New("a")}
	b := &RowError{File: "f", Row: 1, Err: errors.New("b")}
	tests := []struct {
		name string
		err  error
		want []*RowError
	}{
		{"nil", nil, nil},
		{"single", a, []*RowError{a}},
		{"joined", errors.Join(a, b), []*RowError{a, b}},
		{"nested joins", errors.Join(errors.Join(a), b), []*RowError{a, b}},
		{"other errors skipped", errors.Join(errors.New("x"), b), []*RowError{b}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RowErrors(tt.err)
			if len(got) != len(tt.want) {
				t.Fatalf("RowErrors = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("RowErrors[%d] = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestErrorsAreCapped(t *testing.T) {
	const extra = 60
	header := []string{"host", "name", "topic"}
	for i := range extra {
		header = append(header, fmt.Sprintf("unknown%d", i))
	}
	_, err := NewColumns("wide.csv", 1, header, Options{})
	got := RowErrors(err)
	if len(got) != maxErrors+1 || !strings.Contains(got[maxErrors].Error(), fmt.Sprintf("%d more problems in the header not shown", extra-maxErrors)) {
		t.Errorf("header with %d unknown columns: %d errors, last %q; want %d and a count of the rest", extra, len(got), got[len(got)-1], maxErrors+1)
	}

	header = append(header[:3], make([]string, extra)...) // unnamed columns
	c, err := NewColumns("wide.csv", 1, header, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cells := []string{"acme", "job", "jobs"}
	for range extra {
		cells = append(cells, "stray")
	}
	got = RowErrors(c.Row(2, cells).Err)
	if len(got) != maxErrors+1 || !strings.Contains(got[maxErrors].Error(), fmt.Sprintf("%d more problems in this row not shown", extra-maxErrors)) {
		t.Errorf("row with %d stray values: %d errors, last %q; want %d and a count of the rest", extra, len(got), got[len(got)-1], maxErrors+1)
	}
}

// TestColumnsCronDialect: the dialect a row's cron expression is read in
// is the row's cronDialect cell, else the folder's cron_dialect, else the
// one auto picks; it is written on the definition. An expression that
// reads otherwise in another dialect warns, unless the row or the folder
// said which.
func TestColumnsCronDialect(t *testing.T) {
	tests := []struct {
		name        string
		header      []string
		folder      string
		cells       []string
		wantDialect task.Dialect
		wantWarning string
		wantErr     string
	}{
		{name: "auto: five fields are unix", header: []string{"name", "cron"}, cells: []string{"j", "0 8 * * 1-5"},
			wantDialect: task.DialectUnix},
		{name: "auto: a ? is quartz, with a warning naming both readings", header: []string{"name", "cron"},
			cells: []string{"j", "0 0 12 ? * 2-6"}, wantDialect: task.DialectQuartz,
			wantWarning: `jobs.csv: row 2: column cron: day-of-week "2-6" read as quartz (MON-FRI); in spring it would be TUE-SAT; set cron_dialect to say which`},
		{name: "auto: names say it all", header: []string{"name", "cron"}, cells: []string{"j", "0 0 12 ? * MON-FRI"},
			wantDialect: task.DialectQuartz},
		{name: "the folder states spring", header: []string{"name", "cron"}, folder: "spring",
			cells: []string{"j", "0 0 12 ? * 2-6"}, wantDialect: task.DialectSpring},
		{name: "the row states quartz over the folder", header: []string{"name", "cron", "CronDialect"}, folder: "spring",
			cells: []string{"j", "0 0 12 ? * 2-6", "Quartz"}, wantDialect: task.DialectQuartz},
		{name: "cron_dialect as a header", header: []string{"name", "cron", "cron_dialect"},
			cells: []string{"j", "0 0 12 ? * 2-6", "spring"}, wantDialect: task.DialectSpring},
		{name: "a row's auto defers to the folder", header: []string{"name", "cron", "cronDialect"}, folder: "quartz",
			cells: []string{"j", "0 0 12 ? * 2-6", "auto"}, wantDialect: task.DialectQuartz},
		{name: "an unknown dialect is the column's error", header: []string{"name", "cron", "cronDialect"},
			cells: []string{"j", "0 0 12 ? * 2-6", "cobol"}, wantErr: `column cronDialect: value "cobol": must be unix, quartz, spring, systemd or auto`},
		{name: "spring refuses a wrapped range, on the cron column", header: []string{"name", "cron"}, folder: "spring",
			cells: []string{"j", "0 0 22-2 * * *"}, wantErr: `column cron: value "0 0 22-2 * * *": the hour field "22-2" must be a range a-b with a not after b`},
		{name: "no cron, no dialect", header: []string{"name", "cronDialect"}, cells: []string{"j", "quartz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Defaults: Defaults{Host: "acme", Topic: "jobs"}, CronDialect: tt.folder}
			cols, err := NewColumns("jobs.csv", 1, tt.header, opts)
			if err != nil {
				t.Fatal(err)
			}
			row := cols.Row(2, tt.cells)
			if tt.wantErr != "" {
				if row.Err == nil || !strings.Contains(row.Err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", row.Err, tt.wantErr)
				}
				return
			}
			if row.Err != nil {
				t.Fatal(row.Err)
			}
			if row.Def.CronDialect != tt.wantDialect {
				t.Errorf("dialect %q, want %q", row.Def.CronDialect, tt.wantDialect)
			}
			var want []string
			if tt.wantWarning != "" {
				want = []string{tt.wantWarning}
			}
			if !slices.Equal(row.Warnings, want) {
				t.Errorf("warnings %q, want %q", row.Warnings, want)
			}
		})
	}
	if _, err := NewColumns("jobs.csv", 1, []string{"name"}, Options{Defaults: Defaults{Host: "a", Topic: "b"}, CronDialect: "cobol"}); err == nil ||
		!strings.Contains(err.Error(), "cron_dialect: unknown cron dialect") {
		t.Errorf("a folder's unknown dialect: %v", err)
	}
	if err := (Options{CronDialect: "Quartz"}).Validate(); err != nil {
		t.Errorf("folder option quartz: %v", err)
	}
}
