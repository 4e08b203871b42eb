package converters

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jobdrop/jobdrop/task"
)

func TestColumnsChain(t *testing.T) {
	base := task.Definition{Host: "acme", Name: "load", Action: task.Insert, Topic: "jobs"}
	with := func(f func(*task.Definition)) task.Definition {
		d := base
		f(&d)
		return d
	}
	std := []string{"host", "name", "topic", "after", "on", "delay", "retry", "timeout"}

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
			name:  "empty cells are absent",
			cells: []string{"acme", "load", "jobs", " ", "", "", "", ""},
			want:  base,
		},
		{
			name:  "after: names separated by commas",
			cells: []string{"acme", "load", "jobs", " extract , other/transform ,", "", "", "", ""},
			want:  with(func(d *task.Definition) { d.After = []string{"extract", "other/transform"} }),
		},
		{
			name:  "after: a JSON array",
			cells: []string{"acme", "load", "jobs", `["extract", " transform"]`},
			want:  with(func(d *task.Definition) { d.After = []string{"extract", "transform"} }),
		},
		{
			name:  "on in any case, delay and timeout with units in any case",
			cells: []string{"acme", "load", "jobs", "extract", "FAILURE", "1H30M", "", "1d"},
			want: with(func(d *task.Definition) {
				d.After, d.On, d.Delay, d.Timeout = []string{"extract"}, task.OnFailure, 90*60_000, 24*3_600_000
			}),
		},
		{
			name:  "retry: the short form",
			cells: []string{"acme", "load", "jobs", "", "", "", "5 every 1m backoff 2 max 30m overdue", "2h"},
			want: with(func(d *task.Definition) {
				d.Retry = &task.Retry{Attempts: 5, Delay: 60_000, Multiplier: 2, MaxDelay: 1_800_000, OnOverdue: true}
				d.Timeout = 7_200_000
			}),
		},
		{
			name:  "retry: a JSON object",
			cells: []string{"acme", "load", "jobs", "", "", "", `{"attempts": 3, "delay": 600000}`},
			want:  with(func(d *task.Definition) { d.Retry = &task.Retry{Attempts: 3, Delay: 600_000} }),
		},
		{
			name:   "mapped and differently cased columns",
			header: []string{"host", "name", "topic", "Depends On", "WHEN", "Wait", "Retries", "Max Run"},
			opts:   Options{Mapping: map[string]string{"depends on": "after", "when": "On", "wait": "DELAY", "retries": "retry", "max run": "timeout"}},
			cells:  []string{"acme", "load", "jobs", "extract", "done", "5m", "3", "1h"},
			want: with(func(d *task.Definition) {
				d.After, d.On, d.Delay, d.Retry, d.Timeout = []string{"extract"}, task.OnDone, 300_000, &task.Retry{Attempts: 3}, 3_600_000
			}),
		},
		{
			name:     "a bare number needs a unit",
			cells:    []string{"acme", "load", "jobs", "extract", "", "10", "", "3600"},
			wantErrs: []string{`column delay: value "10": is a number without a unit; must be a duration such as 90s`, `column timeout: value "3600": is a number without a unit`},
		},
		{
			name:     "a spreadsheet time is a fraction of a day",
			cells:    []string{"acme", "load", "jobs", "extract", "", "0.00694444444444444"},
			wantErrs: []string{`column delay: value "0.00694444444444444": is a number without a unit; must be a duration such as 90s, 10m, 1h30m or 1d (a spreadsheet time cell holds a fraction of a day`},
		},
		{
			name:     "bad cells name their column as the file writes it",
			header:   []string{"host", "name", "topic", "After", "On", "Delay", "Retry", "Timeout"},
			cells:    []string{"acme", "load", "jobs", `["extract", 3]`, "sometimes", "soon", "thrice", "10 minutes"},
			wantErrs: []string{`column After: value "[\"extract\", 3]": must be task names separated by commas, or a JSON array`, `column On: value "sometimes": must be success, failure or done`, `column Delay: value "soon": must be a duration`, `column Retry: value "thrice": must be ATTEMPTS`, `column Timeout: value "10 minutes": must be a duration`},
		},
		{
			name:     "a retry of commas alone",
			cells:    []string{"acme", "load", "jobs", "", "", "", " , ,"},
			wantErrs: []string{`column retry: value ", ,": must be ATTEMPTS`},
		},
		{
			name:     "after naming the task itself says which name",
			cells:    []string{"acme", "load", "jobs", "extract, load"},
			wantErrs: []string{`column after: value "extract, load": "load" names the task itself`},
		},
		{
			name:     "after naming the task itself alone",
			cells:    []string{"acme", "load", "jobs", "acme/load"},
			wantErrs: []string{`column after: value "acme/load": names the task itself`},
		},
		{
			name:     "on and delay need after",
			cells:    []string{"acme", "load", "jobs", "", "failure", "5m"},
			wantErrs: []string{`column on: value "failure": needs after`, `column delay: value "5m": needs after`},
		},
		{
			name:     "retry bounds are checked",
			cells:    []string{"acme", "load", "jobs", "", "", "", "0 every 10m"},
			wantErrs: []string{`column retry: value "0 every 10m": must allow 1 to 100 attempts`},
		},
		{
			name:     "retry overdue needs a timeout",
			cells:    []string{"acme", "load", "jobs", "", "", "", "3 overdue"},
			wantErrs: []string{`column retry: value "3 overdue": needs a timeout`},
		},
		{
			name:     "delay past its bound",
			cells:    []string{"acme", "load", "jobs", "extract", "", "8d"},
			wantErrs: []string{`column delay: value "8d": must be between 0 and 7d`},
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
			for i, re := range got {
				if !strings.Contains(re.Error(), tt.wantErrs[i]) {
					t.Errorf("error %d = %q, want it to contain %q", i, re, tt.wantErrs[i])
				}
				if !strings.HasPrefix(re.Error(), "jobs.csv: row 7: column ") {
					t.Errorf("error %d = %q, want it to name the file, the row and the column", i, re)
				}
			}
		})
	}
}

// TestJSONChainFields: JSON job lists take after, retry, delay and timeout
// as JSON writes them, and as a cell writes them.
func TestJSONChainFields(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want string // the definition's chain fields as JSON, or an error substring
	}{
		{"JSON values", `"after": ["extract", "other/load"], "retry": {"attempts": 3, "delay": 600000}, "delay": 300000, "timeout": 3600000`,
			`{"after":["extract","other/load"],"delay":300000,"retry":{"attempts":3,"delay":600000},"timeout":3600000}`},
		{"cell text", `"after": "extract, other/load", "on": "Failure", "retry": "3 every 10m", "delay": "5m", "timeout": "1h"`,
			`{"after":["extract","other/load"],"on":"failure","delay":300000,"retry":{"attempts":3,"delay":600000},"timeout":3600000}`},
		{"retry as a number of attempts", `"retry": 2`, `{"retry":{"attempts":2}}`},
		{"null is absent", `"after": null, "on": null, "delay": null, "retry": null, "timeout": null`, `{}`},
		{"fractional milliseconds", `"after": ["x"], "delay": 1.5`, `column delay: value "1.5": must be a whole number of milliseconds, or a duration`},
		{"negative timeout", `"timeout": -5`, `column timeout: value "-5": must be a whole number of milliseconds`},
		{"a number in a string needs a unit", `"timeout": "600000"`, `column timeout: value "\"600000\"": is a number in a string, without a unit; write milliseconds as a JSON number`},
		{"after of numbers", `"after": [1, 2]`, `column after: value "[1, 2]": must be task names separated by commas, or a JSON array`},
		{"after as an object", `"after": {"a": "b"}`, `column after: value "{\"a\": \"b\"}": must be an array of task names`},
		{"retry as an array", `"retry": [3]`, `column retry: value "[3]": must be an object such as {"attempts": 3`},
		{"retry object with an unknown field", `"retry": {"attempts": 3, "every": "10m"}`, `column retry: value "{\"attempts\": 3, \"every\": \"10m\"}": must be ATTEMPTS`},
	}
	for _, tt := range tests {
		for _, form := range []string{"array", "lines"} {
			t.Run(tt.name+"/"+form, func(t *testing.T) {
				obj := `{"host": "acme", "name": "job", "topic": "jobs", ` + tt.obj + `}`
				in := obj + "\n"
				if form == "array" {
					in = "[" + obj + "]"
				}
				var rows []Row
				err := JSON{}.ConvertReader(context.Background(), "jobs.json", strings.NewReader(in), Options{}, func(r Row) error {
					rows = append(rows, r)
					return nil
				})
				if err != nil || len(rows) != 1 {
					t.Fatalf("%d rows, %v", len(rows), err)
				}
				r := rows[0]
				if strings.HasPrefix(tt.want, "{") {
					if r.Err != nil {
						t.Fatal(r.Err)
					}
					got, _ := json.Marshal(struct {
						After   []string     `json:"after,omitempty"`
						On      task.Outcome `json:"on,omitempty"`
						Delay   int64        `json:"delay,omitempty"`
						Retry   *task.Retry  `json:"retry,omitempty"`
						Timeout int64        `json:"timeout,omitempty"`
					}{r.Def.After, r.Def.On, r.Def.Delay, r.Def.Retry, r.Def.Timeout})
					if string(got) != tt.want {
						t.Errorf("got %s, want %s", got, tt.want)
					}
					return
				}
				if r.Err == nil || !strings.Contains(r.Err.Error(), tt.want) || !strings.HasPrefix(r.Err.Error(), "jobs.json: row 1: column ") {
					t.Errorf("got %v, want an error naming the row and column with %q", r.Err, tt.want)
				}
			})
		}
	}
}
