package task

import (
	"strings"
	"testing"
	"time"
)

func TestParseRetry(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    *Retry
		wantErr string
	}{
		{in: "", want: nil},
		{in: "3", want: &Retry{Attempts: 3}},
		{in: "3 every 10m", want: &Retry{Attempts: 3, Delay: 600_000}},
		{in: " 5 EVERY 1m, backoff 2, max 30m, overdue ", want: &Retry{Attempts: 5, Delay: 60_000, Multiplier: 2, MaxDelay: 1_800_000, OnOverdue: true}},
		{in: "2 every 1d12h", want: &Retry{Attempts: 2, Delay: 36 * 3_600_000}},
		{in: `{"attempts": 4, "delay": 1500, "onOverdue": true}`, want: &Retry{Attempts: 4, Delay: 1500, OnOverdue: true}},
		{in: "three", wantErr: "must be ATTEMPTS"},
		{in: " , ,", wantErr: "must be ATTEMPTS"},
		{in: "3 every", wantErr: `"every" needs a value`},
		{in: "3 every ten", wantErr: "every: \"ten\" must be a duration"},
		{in: "3 backoff x", wantErr: `backoff "x" must be a number`},
		{in: "3 every 1m every 2m", wantErr: `says "every" twice`},
		{in: "3 sometimes", wantErr: `unknown word "sometimes"`},
		{in: `{"attempts": 3, "tries": 2}`, wantErr: "must be ATTEMPTS"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRetry(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseRetry(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("ParseRetry(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestRetryWaits(t *testing.T) {
	r := Retry{Attempts: 6, Delay: 60_000, Multiplier: 2, MaxDelay: 5 * 60_000}
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, r.Wait(n))
	}
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
	if w := (Retry{Attempts: 2}).Wait(1); w != DefaultRetryDelay {
		t.Errorf("no delay given: waits %s, want %s", w, DefaultRetryDelay)
	}
	if w := (Retry{Attempts: 100, Delay: 1000, Multiplier: 100}).Wait(99); w != MaxChainDelay {
		t.Errorf("huge backoff: waits %s, want the bound %s", w, MaxChainDelay)
	}
	if s := r.String(); s != "6 attempts, 1m apart ×2 up to 5m" {
		t.Errorf("String = %q", s)
	}
}

func TestDelayRoundTrips(t *testing.T) {
	for _, s := range []string{"90s", "10m", "1h30m", "1h", "2d", "1d6h", "1.5s", "250ms"} {
		ms, err := ParseDelay(s)
		if err != nil {
			t.Fatalf("ParseDelay(%q): %v", s, err)
		}
		back, err := ParseDelay(FormatDelay(ms))
		if err != nil || back != ms {
			t.Errorf("%q → %d ms → %q → %d ms, %v", s, ms, FormatDelay(ms), back, err)
		}
	}
	for _, s := range []string{"", "10", "-5m", "soon", "400d"} {
		if _, err := ParseDelay(s); err == nil {
			t.Errorf("ParseDelay(%q) took it", s)
		}
	}
}

func TestParseAfter(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "",
		"extract":                 "extract",
		" extract , load":         "extract|load",
		`["a, b", "other/x"]`:     "a, b|other/x",
		"globex/nightly, extract": "globex/nightly|extract",
		"extract,,load,":          "extract|load",
		`["extract", " "]`:        "error: empty task",
		"[1,2]":                   "error: JSON array of names",
	} {
		names, err := ParseAfter(in)
		got := strings.Join(names, "|")
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, want) && !strings.Contains(got, strings.TrimPrefix(want, "error: ")) {
			t.Errorf("ParseAfter(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChainValidation(t *testing.T) {
	base := func() Definition { return Definition{Host: "acme", Name: "report", Action: Insert, Topic: "jobs"} }
	for _, tc := range []struct {
		name   string
		change func(*Definition)
		field  string // "" when valid
		reason string
	}{
		{name: "chain only", change: func(d *Definition) { d.After = []string{"transform", "load"} }},
		{name: "gate on a schedule", change: func(d *Definition) { d.After = []string{"load"}; d.Cron = "0 7 * * *" }},
		{name: "other host", change: func(d *Definition) { d.After = []string{"globex/nightly"}; d.On = OnDone; d.Delay = 600_000 }},
		{name: "retry alone", change: func(d *Definition) { d.Retry = &Retry{Attempts: 3, Delay: 1000} }},
		{name: "itself", change: func(d *Definition) { d.After = []string{"report"} }, field: "after", reason: "names the task itself"},
		{name: "itself by key", change: func(d *Definition) { d.After = []string{"acme/report"} }, field: "after", reason: "itself"},
		{name: "twice", change: func(d *Definition) { d.After = []string{"load", "acme/load"} }, field: "after", reason: "same task twice"},
		{name: "empty host", change: func(d *Definition) { d.After = []string{"/load"} }, field: "after", reason: "host/name"},
		{name: "on without after", change: func(d *Definition) { d.On = OnFailure }, field: "on", reason: "needs after"},
		{name: "unknown on", change: func(d *Definition) { d.After = []string{"x"}; d.On = "finished" }, field: "on", reason: "success, failure or done"},
		{name: "delay without after", change: func(d *Definition) { d.Delay = 1000 }, field: "delay", reason: "needs after"},
		{name: "end without schedule", change: func(d *Definition) { d.After = []string{"x"}; d.End = Ptr(int64(1)) }, field: "end", reason: "needs a schedule"},
		{name: "no attempts", change: func(d *Definition) { d.Retry = &Retry{} }, field: "retry", reason: "1 to 100 attempts"},
		{name: "overdue without timeout", change: func(d *Definition) { d.Retry = &Retry{Attempts: 2, OnOverdue: true} },
			field: "retry", reason: "needs a timeout"},
		{name: "max below delay", change: func(d *Definition) { d.Retry = &Retry{Attempts: 2, Delay: 60_000, MaxDelay: 1000} },
			field: "retry", reason: "not be below the first wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := base()
			tc.change(&d)
			errs := FieldErrors(d.Validate())
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("valid definition refused: %v", d.Validate())
				}
				return
			}
			for _, e := range errs {
				if e.Field == tc.field && strings.Contains(e.Reason, tc.reason) {
					return
				}
			}
			t.Fatalf("errors %v, want %s: …%s…", d.Validate(), tc.field, tc.reason)
		})
	}
}

func TestChainOnlyTaskHasNoTimeOfItsOwn(t *testing.T) {
	d := Definition{Host: "acme", Name: "report", Action: Insert, Topic: "jobs", After: []string{"load"}}
	if _, ok := d.NextFire(0, -1); ok {
		t.Error("a chain-only task has a fire time of its own")
	}
	if f := d.Fires(time.Now().UnixMilli(), 3); len(f) != 0 {
		t.Errorf("preview of a chain-only task: %v", f)
	}
	if got := d.When(); got != "after load" {
		t.Errorf("When = %q", got)
	}
	d.After, d.On, d.Delay = []string{"transform", "load"}, OnFailure, 600_000
	if got := d.When(); got != "after transform, load (on failure), 10m later" {
		t.Errorf("When = %q", got)
	}
	d.Cron = "0 7 * * *"
	if got := d.When(); got != "cron 0 7 * * *, after transform, load (on failure), 10m later" {
		t.Errorf("When = %q", got)
	}
	if _, ok := d.NextFire(0, 0); !ok {
		t.Error("a gated task lost its own schedule")
	}
}
