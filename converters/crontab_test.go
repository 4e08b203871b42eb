package converters

import (
	"bytes"
	"context"
	"strings"
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

// TestCrontabNamesSurviveEdits converts a crontab and edited versions of
// it: a task keeps its name when its line moves or its schedule changes,
// and lines with the same command get distinct names that do not depend
// on their line numbers.
func TestCrontabNamesSurviveEdits(t *testing.T) {
	opts := Options{Defaults: Defaults{Host: "acme", Topic: "cron-jobs"}}
	names := func(crontab string) map[string]string {
		t.Helper()
		out := map[string]string{} // command and schedule → name
		err := Crontab{}.ConvertReader(context.Background(), "crontab", strings.NewReader(crontab), opts, func(r Row) error {
			if r.Err != nil {
				t.Fatalf("row %d: %v", r.Line, r.Err)
			}
			out[r.Def.Data["command"]+" @ "+r.Def.Cron] = r.Def.Name
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	v1 := names("0 2 * * * /usr/local/bin/backup.sh --all\n*/5 * * * * /usr/bin/php /var/www/cron.php\n" +
		"0 1 * * * /opt/rotate.sh\n0 3 * * * /opt/rotate.sh\n# name: payroll\n0 6 1 * * /opt/pay/run\n")
	v2 := names("# a comment moves every line down\n\n*/5 * * * * /usr/bin/php /var/www/cron.php\n" +
		"0 1 * * * /opt/rotate.sh\n0 3 * * * /opt/rotate.sh\n30 2 * * * /usr/local/bin/backup.sh --all\n# name: payroll\n0 7 1 * * /opt/pay/run\n")
	for _, tc := range []struct{ name, before, after, want string }{
		{"moved", "/usr/bin/php /var/www/cron.php @ */5 * * * *", "/usr/bin/php /var/www/cron.php @ */5 * * * *", "cron-php-"},
		{"schedule changed", "/usr/local/bin/backup.sh --all @ 0 2 * * *", "/usr/local/bin/backup.sh --all @ 30 2 * * *", "backup-sh-"},
		{"same command, first", "/opt/rotate.sh @ 0 1 * * *", "/opt/rotate.sh @ 0 1 * * *", "rotate-sh-"},
		{"named", "/opt/pay/run @ 0 6 1 * *", "/opt/pay/run @ 0 7 1 * *", "payroll"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := v1[tc.before], v2[tc.after]
			if a == "" || a != b || !strings.HasPrefix(a, tc.want) {
				t.Errorf("named %q in v1 and %q in v2, want the same name starting %q", a, b, tc.want)
			}
		})
	}
	first, second := v1["/opt/rotate.sh @ 0 1 * * *"], v1["/opt/rotate.sh @ 0 3 * * *"]
	if first == second || second != first+"-2" {
		t.Errorf("the same command twice is named %q and %q, want NAME and NAME-2", first, second)
	}
}
