package web

import "testing"

// TestCronDialectOf: the task page names the dialect the engine reads a
// stored cron expression in, stated or picked by auto.
func TestCronDialectOf(t *testing.T) {
	for _, c := range []struct{ name, def, want string }{
		{"stated", `{"cron":"0 0 12 ? * 2-6","cronDialect":"spring"}`, "spring"},
		{"auto picks quartz for a ?", `{"cron":"0 0 12 ? * 2-6"}`, "quartz"},
		{"auto picks unix", `{"cron":"30 2 * * *"}`, "unix"},
		{"no cron", `{"frequency":{"timeUnit":"HOURS","time":1}}`, ""},
		{"no definition", ``, ""},
	} {
		if got := cronDialectOf(c.def); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
