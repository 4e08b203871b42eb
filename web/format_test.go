package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

func TestRelative(t *testing.T) {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{"now", 300 * time.Millisecond, "now"},
		{"seconds ahead", 42 * time.Second, "in 42s"},
		{"minutes ahead", 4*time.Minute + 59*time.Second, "in 4m"},
		{"hours and minutes", 2*time.Hour + 5*time.Minute, "in 2h5m"},
		{"whole hours", 3 * time.Hour, "in 3h"},
		{"days and hours", 50 * time.Hour, "in 2d2h"},
		{"minutes ago", -3 * time.Minute, "3m ago"},
		{"days ago", -72 * time.Hour, "3d ago"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := relative(now, now.Add(tt.d)); got != tt.want {
				t.Errorf("relative(%v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

func TestTaskURL(t *testing.T) {
	tests := []struct{ key, want string }{
		{"acme/nightly", "/tasks/acme/nightly"},
		{"acme/reports/monthly", "/tasks/acme/reports%2Fmonthly"},
		{"acme/a b?c#d", "/tasks/acme/a%20b%3Fc%23d"},
	}
	for _, tt := range tests {
		if got := taskURL(tt.key); got != tt.want {
			t.Errorf("taskURL(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestPathPartsFoldLongPathsAfterSlashesAndDots(t *testing.T) {
	for _, tc := range []struct{ word, want string }{
		{"exported", "[exported]"},
		{"/srv/inbox/a.csv", "[/srv/inbox/a.csv]"},
		{"s3://finance-reports-eu/2026/11/ledger.parquet", "[s3://finance-reports-eu/ 2026/ 11/ ledger.parquet]"},
		{"postgres://ledger-replica-03.internal.example.com:5432/ledger", "[postgres://ledger-replica-03. internal. example. com:5432/ ledger]"},
		{"ledger-replica-03.internal.example.com", "[ledger-replica-03. internal. example. com]"},
		{"/tmp/TestConsoleLayoutHolds3832251025/002/inbox", "[/ tmp/ TestConsoleLayoutHolds3832251025/ 002/ inbox]"},
	} {
		if got := fmt.Sprint(pathParts(tc.word)); got != tc.want {
			t.Errorf("pathParts(%q) = %s, want %s", tc.word, got, tc.want)
		}
	}
}

// TestRejectedCountsSayWhy: a file rejected whole shows every row as
// rejected, and says how many were invalid, or that none was when the
// file was refused for what its rows make together.
func TestRejectedCountsSayWhy(t *testing.T) {
	for _, c := range []struct {
		rows, invalid int
		want          string
	}{
		{4, 3, "4 (3 invalid)"},
		{4, 4, "4"},
		{4, 0, "4 (none invalid on its own)"},
	} {
		got := countsOf(&storetype.Batch{Status: storetype.BatchRejected, Rows: c.rows, Rejected: c.invalid})
		if s := strings.TrimSpace(got.Rejected + " " + got.Invalid); s != c.want {
			t.Errorf("%d rows, %d invalid: %q, want %q", c.rows, c.invalid, s, c.want)
		}
	}
}
