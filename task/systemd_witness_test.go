package task

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// systemdFires is how many fires are asked of each expression.
const systemdFires = 20

// compareWithSystemd says how jobdrop's systemd dialect differs from
// systemd's answer to q, or "" when it agrees: both refuse, or both
// accept and give the same fires after want.base.
func compareWithSystemd(q systemdQuery, want systemdAnswer) string {
	d := Definition{Host: "h", Name: "n", Action: Insert, Topic: "t", Cron: q.expr, CronDialect: DialectSystemd, Timezone: q.zone}
	var refused string
	for _, fe := range FieldErrors(d.Validate()) {
		refused = fe.Error()
	}
	switch {
	case want.refused && refused == "":
		return "systemd refuses it, jobdrop accepts it"
	case !want.refused && refused != "":
		return "systemd accepts it, jobdrop refuses it: " + refused
	case want.refused:
		return ""
	}
	got := d.NextFires(0, want.base.UnixMilli(), systemdFires)
	loc := time.UTC
	if specs, err := parseSystemd(q.expr); err == nil && len(specs) == 1 && specs[0].loc != nil {
		loc = specs[0].loc
	} else if l := Location(q.zone); l != nil {
		loc = l
	}
	for i := range max(len(got), len(want.fires)) {
		at := func(t time.Time, ok bool) string {
			switch {
			case !ok && want.gaveUp:
				return "none (systemd gives up)"
			case !ok:
				return "none"
			}
			s := t.UTC().Format(time.RFC3339)
			if loc != time.UTC {
				s += " (" + t.In(loc).Format("2006-01-02 15:04:05 MST") + ")"
			}
			return s
		}
		var g, w time.Time
		if i < len(got) {
			g = Time(got[i])
		}
		if i < len(want.fires) {
			w = want.fires[i]
		}
		if !g.Equal(w) {
			return fmt.Sprintf("fire %d: systemd %s, jobdrop %s", i+1, at(w, i < len(want.fires)), at(g, i < len(got)))
		}
	}
	return ""
}

// mergeSystemdAnswers is the answer to several expressions read as one:
// refused if any is, else the earliest fires of them all, once each.
func mergeSystemdAnswers(parts []systemdAnswer) systemdAnswer {
	var m systemdAnswer
	for _, a := range parts {
		if a.refused {
			return systemdAnswer{refused: true, base: a.base}
		}
		m.base = a.base
		m.fires = append(m.fires, a.fires...)
	}
	slices.SortFunc(m.fires, time.Time.Compare)
	m.fires = slices.CompactFunc(m.fires, time.Time.Equal)
	m.fires = m.fires[:min(len(m.fires), systemdFires)]
	return m
}

// systemdLocalZones are the local time zones expressions without a zone
// of their own are asked in, besides UTC.
var systemdLocalZones = []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}

// systemdChangeZones and systemdChangeYears say where the fixed base
// times are: three hours before each change of these zones' clocks in
// these years, so the nights of the changes are compared whatever the
// day the test runs (the hand-picked expressions name nights of 2027).
// 2038 is past the last change the zone files list one by one: there
// the rule at their end says when the clocks change.
var (
	systemdChangeZones = []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham"}
	systemdChangeYears = []int{2027, 2031, 2038}
)

// clockChanges are the instants loc's offset changes in year, as Go's
// zone database says.
func clockChanges(loc *time.Location, year int) []time.Time {
	var out []time.Time
	start := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
	_, was := start.In(loc).Zone()
	for t := start.Add(time.Hour); t.Year() == year; t = t.Add(time.Hour) {
		if _, off := t.In(loc).Zone(); off != was {
			at := t.Add(-time.Hour)
			for _, o := at.In(loc).Zone(); o == was; _, o = at.In(loc).Zone() {
				at = at.Add(time.Minute)
			}
			out = append(out, at)
			was = off
		}
	}
	return out
}

// systemdChangeBase is a fixed base time, before a change of zone's clock.
type systemdChangeBase struct {
	zone   string
	change time.Time
}

func (b systemdChangeBase) at() time.Time { return b.change.Add(-3 * time.Hour) }

func systemdChangeBases(t *testing.T) []systemdChangeBase {
	var bases []systemdChangeBase
	for _, zone := range systemdChangeZones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, y := range systemdChangeYears {
			changes := clockChanges(loc, y)
			if len(changes) != 2 {
				t.Fatalf("%s changes its clock %d times in %d, want 2", zone, len(changes), y)
			}
			for _, c := range changes {
				bases = append(bases, systemdChangeBase{zone, c})
			}
		}
	}
	return bases
}

// TestSystemdDialectMatchesRealSystemd compares jobdrop's systemd dialect
// with systemd 252 itself (systemd-analyze calendar on Debian 12): the
// next 20 fires of hand-picked and generated expressions, from now, with
// the local zone UTC and, for expressions without a zone of their own,
// three zones with daylight-saving changes; and from fixed base times,
// three hours before each change of the clocks of Berlin, New York, Lord
// Howe and Chatham in 2027, 2031 and 2038, the expressions without a zone
// in that zone and those that name it. An expression systemd refuses must
// be refused too.
func TestSystemdDialectMatchesRealSystemd(t *testing.T) {
	requireSystemdAnalyze(t)
	start := time.Now()
	now := time.Unix(start.Unix(), 0)
	seen := map[string]bool{}
	fresh := func(list []string) []string { // list without repeats
		var out []string
		for _, e := range list {
			if !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
		return out
	}
	exprs := fresh(systemdHandPicked)
	handPicked := len(exprs)
	exprs = append(exprs, fresh(systemdGenerated(252, 400))...)

	// From now: every expression with TZ=UTC, the whole-second ones, and
	// the parts of the joined ones; those without a zone of their own
	// again in the local zones.
	var parts []string
	for _, ps := range systemdCombined {
		parts = append(parts, ps...)
	}
	first := askSystemd(t, []systemdJob{{"UTC", now, exprs}, {"UTC", now, systemdWholeSeconds}, {"UTC", now, parts}})
	utc, whole := first[0], first[1]
	partAnswers := map[string]systemdAnswer{}
	for i, p := range parts {
		partAnswers[p] = first[2][i]
	}
	var local []string
	named := map[string][]string{} // accepted expressions by the zone they name
	for i, e := range exprs {
		specs, err := parseSystemd(e)
		switch {
		case err != nil || utc[i].refused:
		case specs[0].loc == nil:
			local = append(local, e)
		default:
			named[specs[0].loc.String()] = append(named[specs[0].loc.String()], e)
		}
	}
	jobs := []systemdJob{}
	for _, zone := range systemdLocalZones {
		jobs = append(jobs, systemdJob{zone, now, local})
	}
	// From the fixed base times.
	bases := systemdChangeBases(t)
	for _, b := range bases {
		jobs = append(jobs, systemdJob{b.zone, b.at(), local}, systemdJob{"UTC", b.at(), named[b.zone]})
	}
	answered := askSystemd(t, jobs)
	asked := time.Since(start)

	var qs []systemdQuery
	var answers []systemdAnswer
	for i, e := range exprs {
		qs = append(qs, systemdQuery{zone: "UTC", expr: e, parts: []string{e}})
		answers = append(answers, utc[i])
	}
	for _, ps := range systemdCombined {
		var as []systemdAnswer
		for _, p := range ps {
			as = append(as, partAnswers[p])
		}
		qs = append(qs, systemdQuery{zone: "UTC", expr: strings.Join(ps, "; "), parts: ps})
		answers = append(answers, mergeSystemdAnswers(as))
	}
	fromNow := len(qs)
	for k, j := range jobs {
		for i, e := range j.exprs {
			qs = append(qs, systemdQuery{zone: j.zone, expr: e, parts: []string{e}})
			answers = append(answers, answered[k][i])
		}
		if k == len(systemdLocalZones)-1 {
			fromNow = len(qs)
		}
	}

	for i, e := range systemdWholeSeconds {
		if whole[i].refused {
			t.Errorf("%q: systemd refuses it; systemdWholeSeconds lists what it takes", e)
		}
		if SystemdCalendarProblem(e) == "" {
			t.Errorf("%q: jobdrop accepts a second with a fraction", e)
		}
	}
	diffs := make([]string, len(qs))
	slots := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i := range qs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			diffs[i] = compareWithSystemd(qs[i], answers[i])
		})
	}
	wg.Wait()
	mismatches, fires, fixedFires, gaveUp := 0, 0, 0, 0
	compared := map[string]bool{}
	refusedHand, refusedGenerated := 0, 0
	for i, q := range qs {
		if diffs[i] != "" {
			mismatches++
			if mismatches <= 30 {
				t.Errorf("%q with TZ=%s from %s: %s", q.expr, q.zone, answers[i].base.UTC().Format(time.RFC3339), diffs[i])
			}
			continue
		}
		if answers[i].refused {
			if i < len(exprs) {
				if i < handPicked {
					refusedHand++
				} else {
					refusedGenerated++
				}
			}
			continue
		}
		compared[q.expr] = true
		fires += len(answers[i].fires)
		if i >= fromNow {
			fixedFires += len(answers[i].fires)
		}
		if answers[i].gaveUp {
			gaveUp++
		}
	}
	var years []string
	for _, y := range systemdChangeYears {
		years = append(years, strconv.Itoa(y))
	}
	t.Logf("%d expressions (%d hand-picked, %d generated, %d joined by \";\"), from now with TZ=UTC and %d of them with TZ=%s; "+
		"from %d fixed base times, 3 hours before each change of the clocks of %s in %s, the %d without a zone in that zone "+
		"and those naming it: %d questions (%d from the fixed base times), systemd answered in %v",
		len(exprs)+len(systemdCombined), handPicked, len(exprs)-handPicked, len(systemdCombined), len(local),
		strings.Join(systemdLocalZones, ", "), len(bases), strings.Join(systemdChangeZones, ", "), strings.Join(years, ", "), len(local),
		len(qs), len(qs)-fromNow, asked.Round(time.Millisecond))
	t.Logf("%d expressions accepted by both and compared, %d fires agreed (%d from the fixed base times; %d questions where "+
		"systemd gave up and jobdrop stopped at the same fire); %d hand-picked and %d generated refused by both; %d mismatches",
		len(compared), fires, fixedFires, gaveUp, refusedHand, refusedGenerated, mismatches)
	if len(compared) < 150 {
		t.Errorf("only %d expressions accepted by systemd were compared, want at least 150", len(compared))
	}
	if refusedHand < 20 {
		t.Errorf("only %d hand-picked expressions were refused by both, want at least 20", refusedHand)
	}

	t.Run("a wrong expectation is reported", func(t *testing.T) {
		for i, q := range qs {
			if len(answers[i].fires) < 2 {
				continue
			}
			wrong := answers[i]
			wrong.fires = slices.Clone(wrong.fires)
			wrong.fires[1] = wrong.fires[1].Add(time.Second)
			if compareWithSystemd(q, wrong) == "" {
				t.Errorf("%q: a second fire moved by a second went unnoticed", q.expr)
			}
			wrong.fires = wrong.fires[:1]
			if compareWithSystemd(q, wrong) == "" {
				t.Errorf("%q: fires systemd lacks went unnoticed", q.expr)
			}
			if compareWithSystemd(q, systemdAnswer{refused: true}) == "" {
				t.Errorf("%q: a refusal went unnoticed", q.expr)
			}
			return
		}
		t.Fatal("no answer with two fires to plant a wrong one in")
	})
}
