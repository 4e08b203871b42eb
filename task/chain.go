package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Outcome is what a chained task waits for of each of its predecessors.
type Outcome string

// The outcomes a chained task may wait for.
const (
	// OnSuccess releases the task once every predecessor's run succeeded;
	// a predecessor's failure holds the chain. The default.
	OnSuccess Outcome = "success"
	// OnFailure releases the task once every predecessor's run failed: an
	// error handler. A success releases nothing and holds nothing.
	OnFailure Outcome = "failure"
	// OnDone releases the task once every predecessor's run ended, however.
	OnDone Outcome = "done"
)

// ParseOutcome reads an outcome in any case; empty is OnSuccess.
func ParseOutcome(s string) (Outcome, error) {
	switch o := Outcome(strings.ToLower(strings.TrimSpace(s))); o {
	case "":
		return OnSuccess, nil
	case OnSuccess, OnFailure, OnDone:
		return o, nil
	}
	return "", fmt.Errorf("unknown outcome %q (want success, failure or done)", s)
}

// Accepts reports whether a predecessor's run that ended in status
// (SUCCESS or FAILED) counts toward releasing a task waiting for o.
func (o Outcome) Accepts(status string) bool {
	switch o {
	case OnFailure:
		return status == "FAILED"
	case OnDone:
		return status == "SUCCESS" || status == "FAILED"
	}
	return status == "SUCCESS"
}

// Holds reports whether a predecessor's run that ended in status breaks
// the chain of a task waiting for o: it then waits for an operator (or a
// new run of the predecessor) instead of being released. Only a failure
// does, and only for OnSuccess: an error handler whose predecessor
// succeeded simply has nothing to do.
func (o Outcome) Holds(status string) bool {
	return (o == "" || o == OnSuccess) && status == "FAILED"
}

// MaxPredecessors bounds the tasks one task may follow.
const MaxPredecessors = 64

// MaxChainDelay bounds a chained task's delay and a retry's waits.
const MaxChainDelay = 7 * 24 * time.Hour

// Retry says how a run of a task whose execution failed is fired again.
// Each attempt is an execution of its own, with its own fire id; together
// they are one run, which ends with the first success or the last
// failure.
type Retry struct {
	// Attempts is how many times one run is fired at most, the first
	// included: 3 fires it again twice after failures.
	Attempts int `json:"attempts"`
	// Delay, in milliseconds, is the wait between a failure and the next
	// attempt. Zero means a minute.
	Delay int64 `json:"delay,omitempty"`
	// Multiplier grows each later wait: 2 doubles it after every failure.
	// Zero means 1 (equal waits).
	Multiplier float64 `json:"multiplier,omitempty"`
	// MaxDelay, in milliseconds, bounds the waits. Zero: no bound but
	// MaxChainDelay.
	MaxDelay int64 `json:"maxDelay,omitempty"`
	// OnOverdue also counts an execution with no final status past the
	// task's timeout as failed: it is fired again at once.
	OnOverdue bool `json:"onOverdue,omitempty"`
}

// DefaultRetryDelay is a retry's wait when it names none.
const DefaultRetryDelay = time.Minute

// MaxAttempts bounds Retry.Attempts.
const MaxAttempts = 100

// first is the wait after the first failure.
func (r Retry) first() time.Duration {
	if r.Delay <= 0 {
		return DefaultRetryDelay
	}
	return time.Duration(r.Delay) * time.Millisecond
}

// Wait is the wait after the failure of attempt n (1 for the first) and
// before attempt n+1.
func (r Retry) Wait(n int) time.Duration {
	first := r.first()
	mult := r.Multiplier
	if mult < 1 {
		mult = 1
	}
	limit := MaxChainDelay
	if r.MaxDelay > 0 {
		limit = min(limit, time.Duration(r.MaxDelay)*time.Millisecond)
	}
	w := float64(first) * math.Pow(mult, float64(max(n, 1)-1))
	if w >= float64(limit) || math.IsInf(w, 0) || math.IsNaN(w) {
		return limit
	}
	return time.Duration(w)
}

// String says the policy in a few words: "3 attempts, 10m apart",
// "5 attempts, 1m apart ×2 up to 30m, also when overdue".
func (r Retry) String() string {
	s := fmt.Sprintf("%d attempts, %s apart", r.Attempts, FormatDelay(r.Wait(1).Milliseconds()))
	if r.Multiplier > 1 {
		s += " ×" + strconv.FormatFloat(r.Multiplier, 'f', -1, 64)
		if r.MaxDelay > 0 {
			s += " up to " + FormatDelay(r.MaxDelay)
		}
	}
	if r.OnOverdue {
		s += ", also when overdue"
	}
	return s
}

// retryForm says how a retry is written in a cell.
const retryForm = `ATTEMPTS [every DELAY] [backoff FACTOR] [max DELAY] [overdue], such as "3 every 10m" or ` +
	`"5 every 1m backoff 2 max 30m overdue", or a JSON object {"attempts": 3, "delay": 600000}`

// ParseRetry reads a retry policy as a cell of a job list writes it:
// "3", "3 every 10m", "5 every 1m backoff 2 max 30m overdue", or the JSON
// object of Retry. Empty is no policy (nil).
func ParseRetry(s string) (*Retry, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if strings.HasPrefix(s, "{") {
		var r Retry
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("must be %s", retryForm)
		}
		return &r, nil
	}
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return unicode.IsSpace(r) || r == ',' })
	if len(words) == 0 {
		return nil, fmt.Errorf("must be %s", retryForm)
	}
	n, err := strconv.Atoi(words[0])
	if err != nil {
		return nil, fmt.Errorf("must be %s", retryForm)
	}
	r := &Retry{Attempts: n}
	seen := map[string]bool{}
	for i := 1; i < len(words); i++ {
		w := words[i]
		if seen[w] {
			return nil, fmt.Errorf("says %q twice; must be %s", w, retryForm)
		}
		seen[w] = true
		if w == "overdue" {
			r.OnOverdue = true
			continue
		}
		if w != "every" && w != "max" && w != "backoff" {
			return nil, fmt.Errorf("unknown word %q; must be %s", w, retryForm)
		}
		if i+1 >= len(words) {
			return nil, fmt.Errorf("%q needs a value; must be %s", w, retryForm)
		}
		v := words[i+1]
		i++
		switch w {
		case "every":
			if r.Delay, err = ParseDelay(v); err != nil {
				return nil, fmt.Errorf("every: %w", err)
			}
		case "max":
			if r.MaxDelay, err = ParseDelay(v); err != nil {
				return nil, fmt.Errorf("max: %w", err)
			}
		case "backoff":
			if r.Multiplier, err = strconv.ParseFloat(v, 64); err != nil {
				return nil, fmt.Errorf("backoff %q must be a number such as 2", v)
			}
		}
	}
	return r, nil
}

// ParseDelay reads a duration as a cell writes it, "90s", "10m", "1h30m",
// "2d" (days of 24 hours), into milliseconds.
func ParseDelay(s string) (int64, error) {
	s = strings.TrimSpace(s)
	const want = "must be a duration such as 90s, 10m, 1h30m or 1d"
	if s == "" {
		return 0, errors.New(want)
	}
	days := int64(0)
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n < 0 || n > 365 {
			return 0, fmt.Errorf("%q %s", s, want)
		}
		days, s = n, s[i+1:]
	}
	var d time.Duration
	if s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d < 0 {
			return 0, fmt.Errorf("%q %s", s, want)
		}
	}
	return (time.Duration(days)*24*time.Hour + d).Milliseconds(), nil
}

// FormatDelay writes milliseconds as ParseDelay reads them: "10m",
// "1h30m", "2d", "1.5s".
func FormatDelay(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	s := ""
	if days := d / (24 * time.Hour); days > 0 {
		s = strconv.FormatInt(int64(days), 10) + "d"
		d -= days * 24 * time.Hour
		if d == 0 {
			return s
		}
	}
	t := d.String() // "10m0s", "1h0m0s", "1.5s"
	if strings.HasSuffix(t, "m0s") {
		t = strings.TrimSuffix(t, "0s")
	}
	if strings.HasSuffix(t, "h0m") {
		t = strings.TrimSuffix(t, "0m")
	}
	return s + t
}

// ParseAfter reads the predecessors a cell names: names separated by
// commas (empty ones skipped), or a JSON array of names, each a task of the same host, or of
// another written host/name.
func ParseAfter(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if !strings.HasPrefix(s, "[") {
		var out []string
		for _, n := range strings.Split(s, ",") {
			if n = strings.TrimSpace(n); n != "" {
				out = append(out, n)
			}
		}
		return out, nil
	}
	var names []string
	if err := json.Unmarshal([]byte(s), &names); err != nil {
		return nil, errors.New(`must be task names separated by commas, or a JSON array of names such as ["extract", "load"]`)
	}
	for i, n := range names {
		if names[i] = strings.TrimSpace(n); names[i] == "" {
			return nil, errors.New("names an empty task; remove the empty name")
		}
	}
	return names, nil
}

// Chained reports whether the task follows other tasks.
func (d *Definition) Chained() bool { return len(d.After) > 0 }

// ChainOnly reports whether the task fires only when its predecessors
// release it: it follows others and has no schedule of its own.
func (d *Definition) ChainOnly() bool { return d.Chained() && !d.Repeats() && d.Message == nil }

// Predecessors are the keys of the tasks d follows: a name alone is a
// task of d's host; "host/name" one of another host.
func (d *Definition) Predecessors() []string {
	keys := make([]string, 0, len(d.After))
	for _, a := range d.After {
		keys = append(keys, d.PredecessorKey(a))
	}
	return keys
}

// PredecessorKey is the key of the predecessor d names as a.
func (d *Definition) PredecessorKey(a string) string {
	if strings.Contains(a, "/") {
		return a
	}
	return Key(d.Host, a)
}

// Waits is the outcome d waits for: its On, or OnSuccess.
func (d *Definition) Waits() Outcome {
	if d.On == "" {
		return OnSuccess
	}
	return d.On
}

// validateChain checks after, on, delay and retry.
func (d *Definition) validateChain(bad func(field, value, reason string)) {
	var own string
	if len(d.After) > 0 {
		own = d.Key()
	}
	seen := map[string]bool{}
	for _, a := range d.After {
		key := d.PredecessorKey(a)
		host, name, _ := SplitKey(key)
		switch {
		case strings.TrimSpace(a) != a || a == "":
			bad("after", a, "must name tasks without surrounding spaces")
		case strings.IndexFunc(a, unicode.IsControl) >= 0:
			bad("after", a, "must not contain control characters")
		case host == "" || name == "":
			bad("after", a, "must be a task name, or host/name for a task of another host")
		case len(host) > MaxNameLen || len(name) > MaxNameLen:
			bad("after", a[:32]+"…", fmt.Sprintf("names a host or task longer than %d bytes", MaxNameLen))
		case key == own:
			bad("after", a, "names the task itself")
		case seen[key]:
			bad("after", a, "names the same task twice")
		}
		seen[key] = true
	}
	if len(d.After) > MaxPredecessors {
		bad("after", strconv.Itoa(len(d.After))+" tasks", fmt.Sprintf("may name at most %d tasks", MaxPredecessors))
	}
	switch d.On {
	case "", OnSuccess, OnFailure, OnDone:
	default:
		bad("on", string(d.On), "must be success, failure or done")
	}
	if d.On != "" && !d.Chained() {
		bad("on", string(d.On), "needs after: the tasks whose outcome it waits for")
	}
	switch {
	case d.Delay < 0 || d.Delay > MaxChainDelay.Milliseconds():
		bad("delay", FormatDelay(d.Delay), "must be between 0 and "+FormatDelay(MaxChainDelay.Milliseconds()))
	case d.Delay > 0 && !d.Chained():
		bad("delay", FormatDelay(d.Delay), "needs after: it is the wait between the predecessors' outcome and the fire")
	}
	if d.Chained() && d.Message != nil {
		bad("after", "", "cannot be combined with a message schedule")
	}
	if d.ChainOnly() && d.End != nil {
		bad("end", fmt.Sprint(*d.End), "needs a schedule (frequency, cron or rrule): a task with after and no schedule fires whenever its predecessors release it")
	}
	if r := d.Retry; r != nil {
		switch {
		case r.Attempts < 1 || r.Attempts > MaxAttempts:
			bad("retry", strconv.Itoa(r.Attempts)+" attempts", fmt.Sprintf("must allow 1 to %d attempts, the first included", MaxAttempts))
		case r.Delay < 0 || r.Delay > MaxChainDelay.Milliseconds():
			bad("retry", "every "+FormatDelay(r.Delay), "must wait between 0 and "+FormatDelay(MaxChainDelay.Milliseconds()))
		case r.Multiplier != 0 && (r.Multiplier < 1 || r.Multiplier > 100 || math.IsNaN(r.Multiplier)):
			bad("retry", "backoff "+strconv.FormatFloat(r.Multiplier, 'g', -1, 64), "backoff must be a factor between 1 and 100")
		case r.MaxDelay < 0 || r.MaxDelay > MaxChainDelay.Milliseconds():
			bad("retry", "max "+FormatDelay(r.MaxDelay), "max must be between 0 and "+FormatDelay(MaxChainDelay.Milliseconds()))
		case r.MaxDelay > 0 && r.MaxDelay < r.first().Milliseconds():
			bad("retry", "max "+FormatDelay(r.MaxDelay), "max must not be below the first wait "+FormatDelay(r.first().Milliseconds()))
		case r.OnOverdue && d.Timeout <= 0:
			bad("retry", "overdue", "needs a timeout: an execution is overdue once its timeout has passed")
		}
		if d.Message != nil {
			bad("retry", "", "cannot be combined with a message schedule: no worker reports on its fires")
		}
	}
}

// chainWhen says how a chained task is released, for When: "after
// extract, load", "after extract (on failure), 10m later".
func (d *Definition) chainWhen() string {
	s := "after " + strings.Join(d.After, ", ")
	if o := d.Waits(); o != OnSuccess {
		s += " (on " + string(o) + ")"
	}
	if d.Delay > 0 {
		s += ", " + FormatDelay(d.Delay) + " later"
	}
	return s
}
