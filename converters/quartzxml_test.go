package converters

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/task"
)

func FuzzQuartzXML(f *testing.F) {
	for _, name := range []string{"../../../samples/quartz_jobs.xml", "folder.xml", "refused.xml", "broken.xml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "quartz", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	opts := Options{Defaults: Defaults{Topic: "jobs", Timezone: "Europe/Paris"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		prev := 0
		_ = QuartzXML{}.ConvertReader(context.Background(), "fuzz.xml", bytes.NewReader(b), opts, func(r Row) error {
			if err := checkRowFrom("fuzz.xml", prev, r); err != nil {
				t.Fatal(err)
			}
			prev = r.Line
			return nil
		})
	})
}

// quartzRowErrors converts doc and returns each row's error messages by
// line, and the file's error.
func quartzRowErrors(t *testing.T, doc string, opts Options) (map[int][]string, error) {
	t.Helper()
	rows := map[int][]string{}
	err := QuartzXML{}.ConvertReader(context.Background(), "jobs.xml", strings.NewReader(doc), opts, func(r Row) error {
		for _, re := range RowErrors(r.Err) {
			rows[r.Line] = append(rows[r.Line], re.Error())
		}
		return nil
	})
	return rows, err
}

// TestQuartzXMLRefusesWhatJobdropCannotSay: each construct jobdrop cannot
// say is a row error naming the element and its line, never a task that
// quietly means something else.
func TestQuartzXMLRefusesWhatJobdropCannotSay(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "quartz", "refused.xml"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := quartzRowErrors(t, string(b), Options{Defaults: Defaults{Topic: "jobs"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		line int
		text string
	}{
		{3, "jobs.xml: row 3: column <pre-processing-commands>: pre-processing commands delete jobs"},
		{6, `row 6: column <overwrite-existing-data> (line 7): value "maybe": want true or false`},
		{10, `row 10: column <key> (line 15): value "quartz.jobClass": keys starting "quartz." are where jobdrop keeps`},
		{18, "row 18: column <job>: a job without a trigger never fires"},
		{29, "row 29: column <calendar-interval> (line 30): a calendar-interval trigger counts calendar units"},
		{38, `row 38: column <calendar-name> (line 43): value "bank-holidays": a Quartz calendar excludes times`},
		{47, `row 47: column <start-time-seconds-in-future> (line 52): value "60": counts from when Quartz loads the file`},
		{55, "row 55: column <simple> (line 56): repeats 10 times counted from when Quartz loads the file"},
		{64, `row 64: column <time-zone> (line 72): value "Mars/Olympus": must be an IANA time zone`},
		{64, `row 64: column <start-time> (line 69): value "2027-02-30T00:00:00": want an xsd:dateTime`},
		{64, `row 64: column <misfire-instruction> (line 70): value "MISFIRE_INSTRUCTION_FIRE_NOW": not a cron trigger's misfire instruction`},
		{64, `row 64: column <cron-expression>: value "0 0 8 * * *"`},
		{75, `row 75: column <end-time> (line 81): value "2026-01-01T00:00:00Z": is before start-time`},
		{75, `row 75: column <simple> (line 76): value "0": a repeating simple trigger needs a <repeat-interval> above 0`},
		{86, `row 86: column <cron> (line 87): value "defined-elsewhere": names a job this file does not define`},
		{93, "row 93: column <paused> (line 99): not an element of a <cron> trigger"},
		{102, `row 102: column <cron> (line 103): value "report": its job, on line 10, is refused`},
		{111, "row 111: column <calendars>: not an element of Quartz job scheduling data"},
	} {
		found := false
		for _, msg := range rows[want.line] {
			found = found || strings.Contains(msg, want.text)
		}
		if !found {
			t.Errorf("line %d: no error containing %q; got %q", want.line, want.text, rows[want.line])
		}
	}
	// Every trigger is refused: the file yields no task.
	if len(rows) != 14 {
		t.Errorf("%d rows with errors, want 14: %v", len(rows), rows)
	}
}

// TestQuartzXMLMapping checks what a person reads in a converted trigger:
// names, hosts, zones of bare times, repeat counts as ends, misfire
// policies and data.
func TestQuartzXMLMapping(t *testing.T) {
	got := map[string]Row{}
	err := QuartzXML{}.Convert(context.Background(), filepath.Join("..", "samples", "quartz_jobs.xml"), Options{Defaults: Defaults{Topic: "batch-jobs"}}, func(r Row) error {
		if r.Err != nil {
			t.Fatalf("row %d: %v", r.Line, r.Err)
		}
		got[r.Def.Key()] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ms := func(s string) int64 { tm, _ := time.Parse(time.RFC3339, s); return tm.UnixMilli() }
	ledger := got["finance/nightly-ledger-close.weekdays-2330-paris"].Def
	if ledger.Cron != "0 30 23 ? * MON-FRI" || ledger.CronDialect != task.DialectQuartz || ledger.Timezone != "Europe/Paris" ||
		ledger.Misfire != task.FireOnce || *ledger.Start != ms("2027-01-03T23:00:00Z") || ledger.Action != task.Update {
		t.Errorf("ledger close: %+v", ledger)
	}
	if ledger.Data["command"] != "/opt/finance/bin/ledger-close --post" || ledger.Data["quartz.jobClass"] != "com.acme.batch.finance.LedgerCloseJob" ||
		ledger.Data["quartz.element"] != "job-scheduling-data/schedule[1]/trigger[1]" {
		t.Errorf("ledger close data: %v", ledger.Data)
	}
	monthEnd := got["finance/nightly-ledger-close.month-end"].Def
	if monthEnd.Data["ledger"] != "EU-01-MONTH" || monthEnd.Misfire != task.Skip || monthEnd.Start != nil {
		t.Errorf("month end: the trigger's data map must win over the job's, DO_NOTHING is SKIP: %+v", monthEnd)
	}
	inv := got["warehouse/inventory-sync"].Def
	if *inv.Frequency != (task.Frequency{TimeUnit: task.Minutes, Time: 15}) || inv.End != nil || *inv.Start != ms("2027-01-01T06:00:00Z") || inv.Misfire != task.Skip {
		t.Errorf("inventory sync (a bare start-time is UTC for a folder without a zone): %+v", inv)
	}
	rem := got["reporting/quarterly-report.reminders"]
	if *rem.Def.End != ms("2027-04-09T09:00:00Z") || len(rem.Warnings) != 1 {
		t.Errorf("reminders: 40 repeats of 12 h from 20 March end on 9 April 09:00 UTC, with a warning on FIRE_NOW: end %v, warnings %q", task.Time(*rem.Def.End), rem.Warnings)
	}

	// Bare times read in the trigger's zone, else the folder's.
	var folder []task.Definition
	err = QuartzXML{}.Convert(context.Background(), filepath.Join("testdata", "quartz", "folder.xml"), Options{Defaults: Defaults{Host: "acme", Topic: "jobs", Timezone: "Europe/Paris"}}, func(r Row) error {
		if r.Err != nil {
			t.Fatalf("row %d: %v", r.Line, r.Err)
		}
		folder = append(folder, r.Def)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(folder) != 3 || folder[0].Host != "acme" || *folder[0].Start != ms("2027-03-28T01:30:00Z") || folder[0].Frequency != nil ||
		*folder[1].End != ms("2027-01-01T22:59:59.999Z") || *folder[2].Start != ms("2027-01-01T00:00:00Z") || folder[2].Timezone != "Asia/Tokyo" {
		t.Errorf("folder defaults: %+v", folder)
	}
}

// The Quartz witness: Debian's libquartz2-java loads the same files with
// its XMLSchedulingDataProcessor, which also needs JAXB and slf4j.
var quartzClassPath = []string{"/usr/share/java/quartz2.jar", "/usr/share/java/jaxb-api.jar", "/usr/share/java/slf4j-api.jar", "/usr/share/java/slf4j-nop.jar"}

// quartzXMLBases are the instants each trigger's fires are counted from:
// before the triggers start, on the eves of daylight-saving changes in
// Paris and New York, and near the end of the finite ones.
var quartzXMLBases = []string{"2027-01-01T00:00:00Z", "2027-03-27T20:00:00Z", "2027-04-09T08:00:00Z", "2027-10-30T20:00:00Z", "2027-11-06T12:00:00Z", "2028-02-28T12:00:00Z"}

const quartzXMLFires = 20

// askQuartzXML loads each file with real Quartz, in one JVM, and
// returns, per file and trigger (group.name), its fires after each base.
// It skips the test when java or a jar is missing, and fails it on CI,
// which installs them.
func askQuartzXML(t *testing.T, files []string, bases []int64) map[string]map[string][][]int64 {
	t.Helper()
	java, err := exec.LookPath("java")
	missing := err != nil
	for _, jar := range quartzClassPath {
		if _, err := os.Stat(jar); err != nil {
			missing = true
		}
	}
	if missing {
		if os.Getenv("CI") != "" {
			t.Fatal("java or a jar of " + strings.Join(quartzClassPath, ":") + " is missing; .ci/run installs default-jdk-headless, libquartz2-java, libjaxb-api-java and libslf4j-java")
		}
		t.Skip("java or a jar of " + strings.Join(quartzClassPath, ":") + " is missing")
	}
	// Quartz must load the job classes a file names: the oracle's own
	// stands in for them. Lines stay where they are.
	dir := t.TempDir()
	var loaded []string
	byLoaded := map[string]string{}
	for i, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b = regexp.MustCompile(`<job-class>[^<]*</job-class>`).ReplaceAllLiteral(b, []byte("<job-class>XMLOracle$NoopJob</job-class>"))
		l := filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(file)))
		if err := os.WriteFile(l, b, 0o644); err != nil {
			t.Fatal(err)
		}
		loaded = append(loaded, l)
		byLoaded[l] = file
	}
	args := []string{"-Duser.timezone=UTC", "-cp", strings.Join(quartzClassPath, ":"), filepath.Join("testdata", "quartz", "XMLOracle.java"),
		strings.Join(loaded, ","), strconv.Itoa(quartzXMLFires)}
	for _, b := range bases {
		args = append(args, strconv.FormatInt(b, 10))
	}
	cmd := exec.Command(java, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Quartz XML oracle: %v", err)
	}
	answers := map[string]map[string][][]int64{}
	file, trigger := "", ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "FILE":
			file, trigger = byLoaded[f[1]], ""
			answers[file] = map[string][][]int64{}
		case len(f) >= 1 && f[0] == "ERR":
			t.Fatalf("Quartz refuses %s: %s", file, sc.Text())
		case len(f) == 2 && f[0] == "TRIGGER" && file != "":
			trigger = f[1]
		case len(f) >= 2 && f[0] == "BASE" && trigger != "":
			var fires []int64
			for _, s := range f[2:] {
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					t.Fatalf("Quartz XML oracle answered %q", sc.Text())
				}
				fires = append(fires, v)
			}
			answers[file][trigger] = append(answers[file][trigger], fires)
		default:
			t.Fatalf("Quartz XML oracle answered %q", sc.Text())
		}
	}
	if len(answers) != len(files) {
		t.Fatalf("Quartz XML oracle answered for %d of %d files", len(answers), len(files))
	}
	return answers
}

// compareFires says where jobdrop's fires differ from Quartz's, "" when
// they agree.
func compareFires(got, want []int64) string {
	for i := range max(len(got), len(want)) {
		at := func(fires []int64) string {
			if i >= len(fires) {
				return "none"
			}
			return task.Time(fires[i]).Format(time.RFC3339Nano)
		}
		if at(got) != at(want) {
			return fmt.Sprintf("fire %d: jobdrop %s, Quartz %s", i+1, at(got), at(want))
		}
	}
	return ""
}

// TestQuartzXMLMatchesRealQuartz loads the sample and the test files with
// Quartz 2.3 itself and compares the next 20 fires of every trigger,
// from several base times, with those of the task jobdrop converts it to.
func TestQuartzXMLMatchesRealQuartz(t *testing.T) {
	var bases []int64
	for _, b := range quartzXMLBases {
		tm, _ := time.Parse(time.RFC3339, b)
		bases = append(bases, tm.UnixMilli())
	}
	cases := []struct {
		file string
		opts Options
	}{
		{filepath.Join("..", "samples", "quartz_jobs.xml"), Options{Defaults: Defaults{Topic: "batch-jobs"}}},
		// Bare times in UTC, the zone the oracle's JVM reads them in.
		{filepath.Join("testdata", "quartz", "folder.xml"), Options{Defaults: Defaults{Host: "acme", Topic: "jobs"}}},
	}
	var files []string
	for _, tc := range cases {
		files = append(files, tc.file)
	}
	// A trigger without start-time starts when Quartz loads it: jobdrop's
	// task is accepted at that moment too.
	accepted := time.Now().UnixMilli()
	start := time.Now()
	quartz := askQuartzXML(t, files, bases)
	t.Logf("Quartz loaded %d files in %v", len(files), time.Since(start).Round(time.Millisecond))
	compared, fires := 0, 0
	for _, tc := range cases {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			want := quartz[tc.file]
			defs := map[string]task.Definition{}
			err := QuartzXML{}.Convert(context.Background(), tc.file, tc.opts, func(r Row) error {
				if r.Err != nil {
					t.Fatalf("row %d: %v", r.Line, r.Err)
				}
				defs[r.Def.Data["quartz.trigger"]] = r.Def
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(defs) != len(want) {
				t.Errorf("jobdrop made %d tasks, Quartz holds %d triggers", len(defs), len(want))
			}
			mismatches := 0
			for trigger, answers := range want {
				d, ok := defs[trigger]
				if !ok {
					t.Errorf("no task for Quartz's trigger %s", trigger)
					continue
				}
				for i, base := range bases {
					got := d.NextFires(d.Anchor(accepted), base, quartzXMLFires)
					compared++
					fires += len(answers[i])
					if diff := compareFires(got, answers[i]); diff != "" {
						mismatches++
						t.Errorf("%s from %s: %s", trigger, task.Time(base).Format(time.RFC3339), diff)
					}
				}
			}
			t.Logf("%d triggers, %d questions, %d mismatches", len(want), len(want)*len(bases), mismatches)

			t.Run("a wrong expectation is reported", func(t *testing.T) {
				for trigger, answers := range want {
					d := defs[trigger]
					for i, base := range bases {
						if len(answers[i]) < 2 {
							continue
						}
						got := d.NextFires(d.Anchor(accepted), base, quartzXMLFires)
						wrong := append([]int64{}, answers[i]...)
						wrong[1] += 1000
						if compareFires(got, wrong) == "" {
							t.Errorf("%s: a second fire moved by a second went unnoticed", trigger)
						}
						if compareFires(got, wrong[:len(wrong)-1]) == "" {
							t.Errorf("%s: a missing fire went unnoticed", trigger)
						}
						return
					}
				}
				t.Fatal("no answer with two fires to plant a wrong one in")
			})
		})
	}
	t.Logf("%d questions, %d fires from Quartz compared", compared, fires)
	if fires < 500 {
		t.Errorf("only %d fires compared, want at least 500", fires)
	}
}
