package converters

import (
	"strings"
	"testing"
	"time"
)

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
