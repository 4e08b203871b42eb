package converters

import (
	"bytes"
	"context"
	"testing"
)

func FuzzCrontab(f *testing.F) {
	f.Add([]byte("CRON_TZ=Europe/Paris\n# name: a\n30 2 * * * /bin/backup\n@daily x\n@reboot y\n"), false)
	f.Add([]byte("25 6\t* * *\troot\tcmd\n\\\nTZ=Nowhere/City\n0 0 1 * *\n"), true)
	opts := Options{Defaults: Defaults{Host: "acme", Topic: "jobs"}}
	f.Fuzz(func(t *testing.T, b []byte, system bool) {
		o := opts
		o.Crontab.System = system
		prev := 0
		_ = Crontab{}.ConvertReader(context.Background(), "fuzz.crontab", bytes.NewReader(b), o, func(r Row) error {
			if err := checkRow("fuzz.crontab", prev, r); err != nil {
				t.Fatal(err)
			}
			prev = r.Line
			return nil
		})
	})
}
