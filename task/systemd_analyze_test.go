package task

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// systemdAnalyze is where Debian's systemd package puts systemd-analyze.
const systemdAnalyze = "/usr/bin/systemd-analyze"

// systemdAnswer is what systemd-analyze said of one expression: refused,
// or its fires after base (fewer than asked when there are no more:
// "never").
type systemdAnswer struct {
	refused bool
	fires   []time.Time
	base    time.Time
	// gaveUp says systemd gave up after the fires (at most 19): its
	// search found no next one in a thousand rounds.
	gaveUp bool
}

// systemdJob is one question to systemd: the next fires of exprs with
// TZ=zone, counted from base.
type systemdJob struct {
	zone  string
	base  time.Time
	exprs []string
}

// requireSystemdAnalyze skips the test when systemd-analyze is missing,
// and fails it on CI. systemd-analyze must take --base-time, which
// systemd 244 brought: every systemd of Debian 12 (252) has it.
func requireSystemdAnalyze(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(systemdAnalyze); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(systemdAnalyze + " is missing; the CI image is Debian 12 with systemd 252")
		}
		t.Skip(systemdAnalyze + " is missing")
	}
	base := time.Date(2027, 3, 27, 12, 0, 0, 0, time.UTC)
	a, err := systemdCalendar("UTC", base, 1, []string{"daily"})
	if err != nil || len(a[0].fires) != 1 || !a[0].fires[0].Equal(base.Add(12*time.Hour)) {
		t.Fatalf("systemd-analyze calendar --base-time=@%d daily: want %s (%+v, %v); --base-time came with systemd 244",
			base.Unix(), base.Add(12*time.Hour), a, err)
	}
}

// askSystemd asks systemd the jobs' questions and returns its answers to
// each job's expressions, in their order: each run of systemd-analyze on
// up to 80 expressions, as many runs at a time as there are CPUs.
func askSystemd(t *testing.T, jobs []systemdJob) [][]systemdAnswer {
	t.Helper()
	type run struct {
		job, at int
		exprs   []string
	}
	var runs []run
	answers := make([][]systemdAnswer, len(jobs))
	for i, j := range jobs {
		answers[i] = make([]systemdAnswer, len(j.exprs))
		for at := 0; at < len(j.exprs); at += 80 {
			runs = append(runs, run{i, at, j.exprs[at:min(at+80, len(j.exprs))]})
		}
	}
	errs := make([]error, len(runs))
	slots := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			j := jobs[r.job]
			as, err := systemdCalendar(j.zone, j.base, systemdFires, r.exprs)
			for k := 0; err == nil && k < len(as); k++ {
				if as[k].gaveUp {
					as[k], err = systemdUntilGivingUp(j.zone, j.base, r.exprs[k])
				}
			}
			copy(answers[r.job][r.at:], as)
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return answers
}

// systemdUntilGivingUp is the answer to expr, which systemd gave up on
// (gaveUp): systemd-analyze prints nothing of an expression when it gives
// up at any of its fires, so this asks for fewer until it has the fires
// before the one systemd cannot find.
func systemdUntilGivingUp(zone string, base time.Time, expr string) (systemdAnswer, error) {
	best := systemdAnswer{base: base, gaveUp: true}
	for ok, failed := 0, systemdFires; failed-ok > 1; {
		n := (ok + failed) / 2
		as, err := systemdCalendar(zone, base, n, []string{expr})
		switch {
		case err != nil:
			return best, err
		case as[0].gaveUp:
			failed = n
		default:
			ok, best = n, as[0]
			best.gaveUp = true
		}
	}
	return best, nil
}

// systemdCalendar runs systemd-analyze calendar --iterations=n
// --base-time=base on exprs with TZ=zone, all in one run.
func systemdCalendar(zone string, base time.Time, n int, exprs []string) ([]systemdAnswer, error) {
	env := []string{"TZ=" + zone, "LC_ALL=C", "SYSTEMD_COLORS=0", "SYSTEMD_PAGER=cat"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "TZ" && k != "LC_ALL" && !strings.HasPrefix(k, "SYSTEMD_") {
			env = append(env, kv)
		}
	}
	args := append([]string{"calendar", "--iterations=" + strconv.Itoa(n), "--base-time=@" + strconv.FormatInt(base.Unix(), 10), "--"}, exprs...)
	cmd := exec.Command(systemdAnalyze, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("systemd-analyze: %v", err)
	}
	blocks, err := parseSystemdAnalyze(stdout.String())
	if err != nil {
		return nil, fmt.Errorf("systemd-analyze with TZ=%s: %v", zone, err)
	}
	var answers []systemdAnswer
	for _, e := range exprs {
		switch {
		case len(blocks) > 0 && blocks[0].original == strings.TrimSpace(e):
			answers = append(answers, systemdAnswer{fires: blocks[0].fires, base: base})
			blocks = blocks[1:]
		case strings.Contains(stderr.String(), "Failed to parse calendar specification '"+e+"'"):
			answers = append(answers, systemdAnswer{refused: true, base: base})
		case strings.Contains(stderr.String(), "Failed to determine next elapse for '"+e+"'"):
			// systemd gave up ("Infinite loop in calendar
			// calculation") at one of the fires: a timer with the
			// expression stops there.
			answers = append(answers, systemdAnswer{base: base, gaveUp: true})
		default:
			return nil, fmt.Errorf("systemd-analyze with TZ=%s said nothing of %q:\n%s\n%s", zone, e, stdout.String(), stderr.String())
		}
	}
	if len(blocks) > 0 {
		return nil, fmt.Errorf("systemd-analyze answered %q, which it was not asked", blocks[0].original)
	}
	return answers, nil
}

// systemdBlock is systemd-analyze's answer to one expression.
type systemdBlock struct {
	original   string
	normalized bool // the Normalized form line was read
	fires      []time.Time
}

// parseSystemdAnalyze reads the output of systemd-analyze calendar: per
// expression, "Original form: ...", then "Next elapse: ..." ("never" when
// none) and "Iter. #n: ...", each followed by "(in UTC): ..." when the
// local zone is not UTC, and "From now: ...".
func parseSystemdAnalyze(out string) ([]systemdBlock, error) {
	var blocks []systemdBlock
	var utc []bool // whether each fire of the last block was read in UTC
	for _, line := range strings.Split(out, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		// A block starts with "Original form", which systemd leaves out
		// when the expression is already in its normalized form.
		if key == "Original form" || key == "Normalized form" && (len(blocks) == 0 || blocks[len(blocks)-1].normalized) {
			blocks = append(blocks, systemdBlock{original: strings.TrimSpace(val)})
			utc = nil
		}
		if len(blocks) == 0 {
			return nil, fmt.Errorf("%q before any Original form", line)
		}
		b := &blocks[len(blocks)-1]
		switch {
		case key == "Next elapse" && val == "never":
		case key == "Next elapse" || strings.HasPrefix(key, "Iter. #"):
			at, inUTC, err := parseSystemdTime(val)
			if err != nil {
				return nil, err
			}
			b.fires = append(b.fires, at)
			utc = append(utc, inUTC)
		case key == "(in UTC)":
			at, inUTC, err := parseSystemdTime(val)
			if err != nil || !inUTC || len(b.fires) == 0 {
				return nil, fmt.Errorf("%q: want a UTC time after a fire (%v)", line, err)
			}
			b.fires[len(b.fires)-1], utc[len(utc)-1] = at, true
		case key == "Original form", key == "From now":
		case key == "Normalized form":
			b.normalized = true
		default:
			return nil, fmt.Errorf("%q is not understood", line)
		}
		if len(utc) > 1 && !utc[len(utc)-2] {
			return nil, fmt.Errorf("%q: the fire before has no time in UTC", b.original)
		}
	}
	if len(utc) > 0 && !utc[len(utc)-1] {
		return nil, fmt.Errorf("%q: its last fire has no time in UTC", blocks[len(blocks)-1].original)
	}
	return blocks, nil
}

// parseSystemdTime reads "Sun 2027-10-31 00:30:00 UTC" as a wall time,
// and whether its zone is UTC.
func parseSystemdTime(s string) (time.Time, bool, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return time.Time{}, false, fmt.Errorf("time %q: want weekday, date, time and zone", s)
	}
	at, err := time.Parse("2006-01-02 15:04:05", f[1]+" "+f[2])
	return at, f[3] == "UTC", err
}

// systemdQuery is one question to systemd and jobdrop alike: the next
// fires of expr with the local time zone zone. parts are the expressions
// systemd is asked, more than one when jobdrop's expr joins them with ";".
type systemdQuery struct {
	zone, expr string
	parts      []string
}
