package converters

import (
	"slices"
	"strings"
	"testing"

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
			header: []string{"host", "name", "action", "topic", "start", "timeUnit", "time", "cron", "timezone", "end", "after", "on", "delay", "retry", "timeout", "data", "data.owner"},
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
			wantErrs: []string{`default host: must not contain "/"`, `default action: must be INSERT, UPDATE, DELETE, TRIGGER, RELEASE or SKIP (got "RUN")`, `default topic: must be a Kafka topic name`, `default timezone: must be an IANA time zone`},
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
