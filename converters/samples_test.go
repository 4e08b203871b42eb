package converters

import (
	"context"
	"path/filepath"
	"testing"
)

// TestSamples converts every sample job list the way a folder with the
// sample configuration would: each must convert cleanly.
func TestSamples(t *testing.T) {
	for _, tc := range []struct {
		file string
		conv Converter
		opts Options
		rows int
	}{
		{"jobs.csv", CSV{}, Options{}, 4},
		{"nightly-chain.csv", CSV{}, Options{}, 5},
		{"jobs.xlsx", XLSX{}, Options{}, 5},
		{"jobs.json", JSON{}, Options{}, 4},
		{"jobs.jsonl", JSON{}, Options{}, 4},
		{"crontab", Crontab{}, Options{Defaults: Defaults{Host: "acme", Topic: "batch-jobs"}}, 6},
		{"quartz_jobs.xml", QuartzXML{}, Options{Defaults: Defaults{Topic: "batch-jobs"}}, 5},
		{"cronjobs.yaml", Kubernetes{}, Options{Defaults: Defaults{Topic: "batch-jobs"}}, 4},
		{"windows_ledger_close.xml", WinTask{}, Options{Defaults: Defaults{Topic: "batch-jobs", Timezone: "Europe/Paris"}}, 5},
		{"windows_ledger_close.xml", XML{}, Options{Defaults: Defaults{Topic: "batch-jobs", Timezone: "Europe/Paris"}}, 5},
		{"quartz_jobs.xml", XML{}, Options{Defaults: Defaults{Topic: "batch-jobs"}}, 5},
		{"ledger-backup.timer", Systemd{}, Options{Defaults: Defaults{Topic: "batch-jobs", Timezone: "Europe/Paris"}}, 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			n := 0
			err := tc.conv.Convert(context.Background(), filepath.Join("..", "samples", tc.file), tc.opts, func(r Row) error {
				n++
				return r.Err
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.rows {
				t.Errorf("%d rows, want %d", n, tc.rows)
			}
		})
	}
}
