package task

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/adhocore/gronx"
)

// TestCronNextSteadyAgreesWithTheSearchAcrossChanges checks the one-step
// answer far from changes of offset against the search that handles
// them, for entries of every kind, in zones with and without daylight
// saving (half-hour offsets, a southern summer, a zone that changed by a
// whole day), at random times over two years and at every hour of the
// edge of the margin around each of their changes.
func TestCronNextSteadyAgreesWithTheSearchAcrossChanges(t *testing.T) {
	exprs := []string{"* * * * *", "*/5 * * * *", "0 * * * *", "30 2 * * *", "0,30 2 * * *", "15 1 * * *",
		"*/30 1 * * *", "0 9 31 * *", "0 0 29 2 *", "0 8 * * 1-5", "*/20 * * * * *", "@daily", "@hourly"}
	frequent := map[string]bool{"* * * * *": true, "*/5 * * * *": true, "*/20 * * * * *": true}
	zones := []string{"UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Pacific/Apia"}
	rng := rand.New(rand.NewPCG(1, 2))
	from := time.Date(2011, 6, 1, 0, 0, 0, 0, time.UTC)
	var afters []time.Time
	for range 6 {
		afters = append(afters, from.Add(time.Duration(rng.Int64N(int64(2*365*24*time.Hour)))).Truncate(time.Second))
	}
	answered := 0
	for _, zone := range zones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		times := append([]time.Time(nil), afters...)
		random := len(times)
		// Every hour around the edge of the margin before and after each
		// change of the two years: the steady path answers from one side
		// of it.
		for at := from; at.Before(from.Add(2 * 365 * 24 * time.Hour)); {
			_, end := at.In(loc).ZoneBounds()
			if end.IsZero() {
				break
			}
			edge := int(steadyMargin / time.Hour)
			for h := edge - 2; h <= edge+2; h++ {
				times = append(times, end.Add(time.Duration(h)*time.Hour+17*time.Minute), end.Add(-time.Duration(h)*time.Hour+17*time.Minute))
			}
			at = end
		}
		for _, expr := range exprs {
			for i, after := range times {
				if frequent[expr] && (i >= random || i >= 2) {
					// These take the search across changes long (it weighs
					// every matching time of six hours): twice each, far
					// from changes; near them, the entries of fixed times
					// and of every hour weigh the changes.
					continue
				}
				next, ok, sure := cronNextSteady(expr, loc, after)
				if !sure {
					continue
				}
				answered++
				want, wantOK := cronNextAcrossChanges(expr, loc, after)
				if ok != wantOK || !next.Equal(want) {
					t.Errorf("%q in %s after %s: %s %v, the search across changes says %s %v", expr, zone, after, next, ok, want, wantOK)
				}
			}
		}
	}
	if answered == 0 {
		t.Fatal("the steady path never answered")
	}
}

// BenchmarkCronNext times the next fire of unix entries in UTC, far from
// any change of offset.
func BenchmarkCronNext(b *testing.B) {
	from := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	for _, expr := range []string{"* * * * *", "0 * * * *", "30 2 * * *"} {
		b.Run(expr, func(b *testing.B) {
			at := from
			for b.Loop() {
				next, ok := cronNext(expr, time.UTC, at)
				if !ok {
					b.Fatal("no next fire")
				}
				at = next
			}
		})
	}
}

// TestCronWithSecondsFiresAcrossChanges: entries with a seconds field
// that follow the wall clock, in zones with daylight saving, fire at the
// first second after any moment whose wall time matches, next to a
// change too (a skipped hour has no such second, a repeated one has
// two), as stepping through the seconds one by one says. The search
// across changes found no fire for these: it stops after 10,000 matching
// times, under the three hours it looks back.
func TestCronWithSecondsFiresAcrossChanges(t *testing.T) {
	g := gronx.New()
	answered := 0
	for _, zone := range []string{"Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for at, n := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), 0; n < 2; n++ {
			_, change := at.In(loc).ZoneBounds()
			at = change
			for _, d := range []time.Duration{-40 * time.Hour, -time.Hour, -16 * time.Second, -time.Second, 0, 14 * time.Second, time.Hour} {
				for _, expr := range []string{"* * * * * *", "*/15 * * * * *", "30 */10 * * * *"} {
					after := change.Add(d)
					got, ok := cronNext(expr, loc, after)
					want := after.Truncate(time.Second)
					for {
						want = want.Add(time.Second)
						if due, _ := g.IsDue(expr, naive(want.In(loc))); due {
							break
						}
					}
					if !ok || !got.Equal(want) {
						t.Errorf("%s in %s after %s: %s (%v), want %s", expr, zone, after.In(loc).Format(time.RFC3339),
							got.In(loc).Format(time.RFC3339), ok, want.In(loc).Format(time.RFC3339))
					}
					answered++
				}
			}
		}
	}
	t.Logf("%d answers agree", answered)
}
