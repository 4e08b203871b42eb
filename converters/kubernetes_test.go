package converters

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jobdrop/jobdrop/task"
)

func FuzzKubernetes(f *testing.F) {
	f.Add([]byte("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: a, namespace: n}\nspec:\n  schedule: \"CRON_TZ=Europe/Paris 0 6 * * *\"\n" +
		"  timeZone: Europe/Paris\n  suspend: true\n  startingDeadlineSeconds: 60\n" +
		"  jobTemplate: {spec: {template: {spec: {containers: [&c {name: a, image: b, command: [x], args: [y]}, *c]}}}}\n---\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: batch/v1\n  kind: Job\n- {apiVersion: batch/v1beta1, kind: CronJob, spec: {schedule: '@every 90s'}}\n"))
	f.Add([]byte("---\n# c\n---\n- a\n---\nkey: &a [*a]\n"))
	f.Add([]byte("apiVersion: batch/v1\nkind: CronJobList\nitems: [{kind: CronJob, apiVersion: batch/v1, metadata: {name: x}, spec: {schedule: '@daily'}}]\n"))
	opts := Options{Defaults: Defaults{Topic: "jobs"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		prev := 0
		_ = Kubernetes{}.ConvertReader(context.Background(), "fuzz.yaml", bytes.NewReader(b), opts, func(r Row) error {
			if err := checkRow("fuzz.yaml", prev, r); err != nil {
				t.Fatal(err)
			}
			prev = r.Line
			return nil
		})
	})
}

// TestKubernetesSchedules reads the schedules the CronJob controller
// accepts, and the time zone a CronJob ends up with.
func TestKubernetesSchedules(t *testing.T) {
	for _, tc := range []struct {
		name, schedule, timeZone, folderZone string
		want                                 string // cron@zone, or the interval
	}{
		{"five fields", "30 2 * * 1-5", "", "", "30 2 * * 1-5@"},
		{"extra spaces", "  0   6 * * *  ", "", "", "0 6 * * *@"},
		{"macro", "@hourly", "", "", "0 * * * *@"},
		{"macro in capitals", "@Daily", "", "", "0 0 * * *@"},
		{"folder zone", "0 6 * * *", "", "Europe/Paris", "0 6 * * *@Europe/Paris"},
		{"timeZone beats the folder", "0 6 * * *", "Asia/Tokyo", "Europe/Paris", "0 6 * * *@Asia/Tokyo"},
		{"CRON_TZ prefix", "CRON_TZ=America/New_York 0 6 * * *", "", "Europe/Paris", "0 6 * * *@America/New_York"},
		{"TZ prefix and macro", "TZ=Asia/Kolkata @weekly", "", "", "0 0 * * 0@Asia/Kolkata"},
		{"prefix and the same timeZone", "TZ=UTC 0 6 * * *", "UTC", "", "0 6 * * *@UTC"},
		{"every 90 minutes", "@every 1h30m", "", "", "90 MINUTES"},
		{"every day", "@every 24h", "", "Europe/Paris", "1 DAYS"},
		{"every 1.5 seconds is every second", "@every 1500ms", "", "", "1 SECONDS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := fmt.Sprintf("schedule: %q", tc.schedule)
			if tc.timeZone != "" {
				spec += fmt.Sprintf(", timeZone: %q", tc.timeZone)
			}
			doc := "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: job}\nspec: {" + spec +
				", jobTemplate: {spec: {template: {spec: {containers: [{name: a, image: b}]}}}}}\n"
			opts := Options{Defaults: Defaults{Topic: "jobs", Timezone: tc.folderZone}}
			var got []Row
			err := Kubernetes{}.ConvertReader(context.Background(), "job.yaml", strings.NewReader(doc), opts, func(r Row) error {
				got = append(got, r)
				return nil
			})
			if err != nil || len(got) != 1 || got[0].Err != nil {
				t.Fatalf("ConvertReader = %v, rows %+v", err, got)
			}
			d := got[0].Def
			s := d.Cron + "@" + d.Timezone
			if d.Frequency != nil {
				s = fmt.Sprintf("%d %s", d.Frequency.Time, d.Frequency.TimeUnit)
			}
			if s != tc.want {
				t.Errorf("schedule %q, timeZone %q, folder zone %q: got %s, want %s", tc.schedule, tc.timeZone, tc.folderZone, s, tc.want)
			}
			if d.Cron != "" && d.CronDialect != task.DialectUnix {
				t.Errorf("dialect %q, want unix", d.CronDialect)
			}
		})
	}
}
