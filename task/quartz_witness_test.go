package task

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// quartzJar is where Debian's libquartz2-java puts Quartz 2.3.
const quartzJar = "/usr/share/java/quartz2.jar"

// quartzHandPicked cover every special character of Quartz (? L W LW L-n
// L-nW nL n#k / , - names, years), wrapping ranges, leap days and the
// hours daylight-saving changes skip or repeat.
var quartzHandPicked = []string{
	"0 0 12 ? * 2-6", "0 0 12 ? * MON-FRI", "0 15 10 ? * 6#3", "0 15 10 ? * 6L", "0 15 10 L * ?",
	"0 15 10 L-2 * ?", "0 0 8 LW * ?", "0 0 8 15W * ?", "0 0 8 1W * ?", "0 0 8 31W * ?",
	"0 30 2 * * ?", "0 30 * * * ?", "0 */20 2 * * ?", "0 0 2 ? * SUN", "0 0/30 1-3 * * ?",
	"0 0 3 * * ?", "0 59 1 * * ?", "0 0 1 * * ?", "30 30 2 ? * *", "0 0 0 29 2 ?",
	"0 0 0 29 FEB ? 2028-2040", "0 0 12 1 1 ? 2027/3", "0 0 22-2 * * ?", "0 0 12 ? * FRI-MON",
	"0 0 12 ? * L", "0 0 12 ? * 1L", "0 0 12 ? * 2#5", "0 0 12 ? * 7#1", "0 0 12 L-30 * ?",
	"0 0 12 L-0 * ?", "0 0 12 1-5,L * ?", "0 15 10 ? JAN-MAR,OCT MON,WED,FRI", "*/10 * * * * ?",
	"0 0 0 ? * * 2026,2028", "0 0 12 */7 * ?", "0 0 12 5/10 * ?", "0 0 12 ? * 2/2", "0 0 12 ? * */3",
	"0 0 */5 * * ?", "0 10/25 */3 * * ?", "15-45/10 0 0 * * ?", "0 0 12 ? 2/5 *", "0 0 12 ? */4 THU",
	"0 0 0 1 * ? *", "0 0 2 ? * 1#2", "0 30 1 ? * 1#1", "0 0 12 LW FEB ?", "0 0 12 30W * ?", "0 0 12 2W * ?",
	"0 0 12 ? * 6#5", "0 0 12 ? * THUL", "0 0 12 ? * FRI#2", "0 0 12 L * ? 2100", "0 0 12 29 2 ? 2096-2104",
	"0 0 0 ? * mon-fri", "0 0 12 ? jan-dec sat", "0 0 2,3 * * ?", "0 0-59/15 2 * * ?", "0 0 2-3 * * ?",
	"0 0 0 1 1 ?", "0 0 0 31 12 ?", "59 59 23 L 12 ?", "0 0 12 ? * 1-7", "0 0 12 ? * SUN,SAT",
	"0 0 12 L-15 * ?", "0 0 12 L-3 2 ?", "0 0 12 ? * 2L", "0 0 12 ? * 7L", "0 0 12 ? * 3#4",
	"0 0 0/6 ? * *", "0 45 2 ? * 7", "0 0 * * * ?", "0 0 0 * * ?", "0 30 2 ? * 1", "0 0 2 L * ?",
	"0 30 1 * * ?", "0 30 0 * * ?", "0 0 4 * * ?", "0 15 2 ? * *", "*/30 59 1 * * ?", "0 59 2 * * ?",
	"0 0 12 L-3W * ?", "0 0 12 L-1W * ?", "0 0 12 L-10W * ?", "0 0 9 1,15W * ?", "0 0 9 ? * 5#3,2",
	"0 0 12 1 1 ? 2150", "0 0 0 30 2 ?", "0 0 12 ? * 0", "0 0 12 ? * 8", "0 0 12 * * *", "0 0 12 ? * ?",
	"0 0 12 ? APR-10 *", "0 0 24 * * ?", "0 60 * * * ?", "0 0 12 32 * ?", "0 0 12 ? * 2#6", "0 0 12 L-31 * ?",
	"0 0 12 ? 13 *", "0 0 12 * * ? 2030-2027", "0 0 12", "0 10,35 1,2 * * ?", "0 50,55 3 * * ?", "0 0/15 3 ? * SUN",
}

// quartzGenerated makes n expressions from a fixed seed, so the test is the
// same at every run: random fields in every form Quartz reads (values,
// names, ranges that may wrap, steps, lists, L, W, LW, L-n, nL, n#k, years),
// leaning to the hours 1 to 3, where daylight-saving changes fall.
func quartzGenerated(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]string, 0, n)
	for len(out) < n {
		f := make([]string, 6)
		for k := range 6 {
			f[k] = randomQuartzField(r, k)
		}
		if r.IntN(2) == 0 {
			f[3] = "?"
		} else {
			f[5] = "?"
		}
		if r.IntN(4) == 0 {
			f = append(f, randomQuartzField(r, 6))
		}
		out = append(out, strings.Join(f, " "))
	}
	return out
}

func randomQuartzField(r *rand.Rand, kind int) string {
	lo, hi := []int{0, 0, 0, 1, 1, 1, 2026}[kind], []int{59, 59, 23, 31, 12, 7, 2035}[kind]
	months := []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	days := []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
	num := func() int {
		if kind == 2 && r.IntN(2) == 0 {
			return 1 + r.IntN(3) // the hours of daylight-saving changes
		}
		return lo + r.IntN(hi-lo+1)
	}
	val := func() string { // a number or, where the field has them, a name
		v := num()
		switch {
		case kind == 4 && r.IntN(3) == 0:
			return months[v-1]
		case kind == 5 && r.IntN(3) == 0:
			return days[v-1]
		}
		return strconv.Itoa(v)
	}
	step := func(size int) string { return strconv.Itoa(1 + r.IntN(max(1, size))) }
	atom := func() string {
		switch r.IntN(6) {
		case 0, 1:
			return val()
		case 2:
			return val() + "-" + val()
		case 3:
			return strconv.Itoa(num()) + "/" + step((hi-lo)/2)
		case 4:
			return "*/" + step((hi-lo)/2)
		default:
			a := lo + r.IntN(hi-lo+1)
			return fmt.Sprintf("%d-%d/%s", a, a+r.IntN(hi-a+1), step((hi-lo)/3))
		}
	}
	switch kind {
	case 0:
		switch r.IntN(6) {
		case 0:
			return atom()
		case 1:
			return "*/" + strconv.Itoa(10+r.IntN(20))
		default:
			return strconv.Itoa(r.IntN(60))
		}
	case 3:
		switch r.IntN(9) {
		case 0:
			return "L"
		case 1:
			return fmt.Sprintf("L-%d", r.IntN(31))
		case 2:
			return fmt.Sprintf("%dW", 1+r.IntN(31))
		case 3:
			return "LW"
		case 4:
			return "*"
		}
	case 5:
		switch r.IntN(8) {
		case 0:
			return val() + "L"
		case 1:
			return fmt.Sprintf("%s#%d", val(), 1+r.IntN(5))
		case 2:
			return "L"
		case 3:
			return "*"
		}
	case 4, 6:
		if r.IntN(2) == 0 {
			return "*"
		}
	}
	if r.IntN(4) == 0 {
		parts := []string{atom()}
		for range 1 + r.IntN(2) {
			parts = append(parts, atom())
		}
		return strings.Join(parts, ",")
	}
	if kind != 1 && r.IntN(3) == 0 {
		return "*"
	}
	return atom()
}

// quartzBases are the base times each zone is asked from: a few hours
// before its daylight-saving changes, both ways, and before 29 February.
var quartzBases = map[string][]string{
	"UTC":                 {"2028-02-27T12:00:00Z", "2026-12-31T20:00:00Z"},
	"Europe/Paris":        {"2026-03-28T22:00:00Z", "2026-10-24T22:30:00Z", "2028-02-28T20:00:00Z"},
	"America/New_York":    {"2026-03-08T04:00:00Z", "2026-11-01T03:30:00Z", "2028-02-28T23:00:00Z"},
	"Australia/Sydney":    {"2026-04-04T13:00:00Z", "2026-10-03T13:30:00Z", "2028-02-28T10:00:00Z"},
	"Asia/Kolkata":        {"2028-02-28T17:00:00Z", "2026-06-30T18:00:00Z"},
	"Pacific/Auckland":    {"2026-04-04T09:00:00Z", "2026-09-26T09:30:00Z"},
	"Pacific/Chatham":     {"2026-04-04T09:00:00Z", "2026-09-26T09:30:00Z"},
	"Australia/Lord_Howe": {"2026-04-04T10:00:00Z", "2026-10-03T10:30:00Z"},
}

// quartzZones are the zones asked about, in order: UTC, both hemispheres,
// a half-hour offset, two zones more than 12 hours ahead of UTC in their
// summer (Chatham 13:45, its changes at a quarter to the hour, so part
// of an hour is skipped), and a change of half an hour (Lord Howe).
var quartzZones = []string{"UTC", "Europe/Paris", "America/New_York", "Australia/Sydney", "Asia/Kolkata",
	"Pacific/Auckland", "Pacific/Chatham", "Australia/Lord_Howe"}

// quartzQuery is one question to Quartz and jobdrop alike: the next fires
// of expr in zone from base.
type quartzQuery struct {
	zone, expr string
	base       int64
}

// quartzAnswer is what Quartz said: refused (err set), or the fires.
type quartzAnswer struct {
	err   string
	fires []int64
}

const quartzFires = 20

func quartzQueries(exprs []string) []quartzQuery {
	var qs []quartzQuery
	for _, e := range exprs {
		for _, zone := range quartzZones {
			for _, b := range quartzBases[zone] {
				qs = append(qs, quartzQuery{zone: zone, expr: e, base: ms(b)})
			}
		}
	}
	return qs
}

// askQuartz runs every query through one JVM. It skips the test when java
// or the jar is missing, and fails it on CI, which installs both.
func askQuartz(t *testing.T, qs []quartzQuery) (answers []quartzAnswer, maxYear int) {
	t.Helper()
	java, err := exec.LookPath("java")
	if _, jerr := os.Stat(quartzJar); err != nil || jerr != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("java or " + quartzJar + " is missing; .ci/run installs default-jdk-headless and libquartz2-java")
		}
		t.Skip("java or " + quartzJar + " is missing")
	}
	var in strings.Builder
	for _, q := range qs {
		fmt.Fprintf(&in, "%s\t%d\t%d\t%s\n", q.zone, q.base, quartzFires, q.expr)
	}
	cmd := exec.Command(java, "-cp", quartzJar, filepath.Join("testdata", "quartz", "Oracle.java"))
	cmd.Stdin = strings.NewReader(in.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Quartz oracle: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		t.Fatal("Quartz oracle printed nothing")
	}
	if _, err := fmt.Sscanf(sc.Text(), "MAX_YEAR %d", &maxYear); err != nil {
		t.Fatalf("Quartz oracle's first line %q: %v", sc.Text(), err)
	}
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "ERR"); ok {
			answers = append(answers, quartzAnswer{err: strings.TrimSpace(rest)})
			continue
		}
		var a quartzAnswer
		for _, f := range strings.Fields(strings.TrimPrefix(line, "OK")) {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatalf("Quartz oracle answered %q", line)
			}
			a.fires = append(a.fires, v)
		}
		answers = append(answers, a)
	}
	if len(answers) != len(qs) {
		t.Fatalf("Quartz oracle answered %d of %d questions", len(answers), len(qs))
	}
	return answers, maxYear
}

// compareWithQuartz says how jobdrop's quartz dialect differs from
// Quartz's answer to q, or "" when it agrees: both refuse, or both accept
// and give the same fires. Quartz stops looking after maxYear (100 years
// after the JVM's own year); jobdrop goes on, so fires past it are not
// compared.
func compareWithQuartz(q quartzQuery, want quartzAnswer, maxYear int) string {
	d := Definition{Host: "h", Name: "n", Action: Insert, Topic: "t", Cron: q.expr, CronDialect: DialectQuartz, Timezone: q.zone}
	var refused string
	for _, fe := range FieldErrors(d.Validate()) {
		refused = fe.Error()
	}
	switch {
	case want.err != "" && refused == "":
		return "Quartz refuses it (" + want.err + "), jobdrop accepts it"
	case want.err == "" && refused != "":
		return "Quartz accepts it, jobdrop refuses it: " + refused
	case want.err != "":
		return ""
	}
	loc, _ := time.LoadLocation(q.zone)
	var got []int64
	for _, f := range d.NextFires(0, q.base, quartzFires) {
		if Time(f).In(loc).Year() > maxYear {
			break
		}
		got = append(got, f)
	}
	for i := range max(len(got), len(want.fires)) {
		at := func(fires []int64) string {
			if i >= len(fires) {
				return "none"
			}
			return Time(fires[i]).In(loc).Format(time.RFC3339)
		}
		if at(got) != at(want.fires) {
			return fmt.Sprintf("fire %d: jobdrop %s, Quartz %s", i+1, at(got), at(want.fires))
		}
	}
	return ""
}

// TestQuartzDialectMatchesRealQuartz compares jobdrop's quartz dialect
// with Quartz 2.3 itself (Debian's libquartz2-java on Java 17): the next
// 20 fires of hand-picked and generated expressions, in five time zones,
// from just before daylight-saving changes in both hemispheres and before
// 29 February; an expression Quartz refuses must be refused too.
func TestQuartzDialectMatchesRealQuartz(t *testing.T) {
	exprs := append(append([]string{}, quartzHandPicked...), quartzGenerated(12, 320)...)
	qs := quartzQueries(exprs)
	start := time.Now()
	answers, maxYear := askQuartz(t, qs)
	t.Logf("Quartz answered %d questions in %v", len(qs), time.Since(start).Round(time.Millisecond))

	accepted := map[string]bool{}
	mismatches := 0
	for i, q := range qs {
		if answers[i].err == "" {
			accepted[q.expr] = true
		}
		if diff := compareWithQuartz(q, answers[i], maxYear); diff != "" {
			mismatches++
			if mismatches <= 20 {
				t.Errorf("%q in %s from %s: %s", q.expr, q.zone, Time(q.base).Format(time.RFC3339), diff)
			}
		}
	}
	t.Logf("%d expressions (%d accepted by Quartz), %d questions, %d mismatches", len(exprs), len(accepted), len(qs), mismatches)
	if len(accepted) < 300 {
		t.Errorf("only %d expressions accepted by Quartz were compared, want at least 300", len(accepted))
	}

	t.Run("a wrong expectation is reported", func(t *testing.T) {
		for i, q := range qs {
			if len(answers[i].fires) < 2 {
				continue
			}
			wrong := quartzAnswer{fires: append([]int64{}, answers[i].fires...)}
			wrong.fires[1] += 1000
			if compareWithQuartz(q, wrong, maxYear) == "" {
				t.Errorf("%q: a second fire moved by a second went unnoticed", q.expr)
			}
			if compareWithQuartz(q, quartzAnswer{err: "refused"}, maxYear) == "" {
				t.Errorf("%q: a refusal went unnoticed", q.expr)
			}
			return
		}
		t.Fatal("no answer with two fires to plant a wrong one in")
	})
}
