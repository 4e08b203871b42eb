package injector

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/chain"
	"github.com/jobdrop/jobdrop/internal/command"
	"github.com/jobdrop/jobdrop/internal/diff"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/suggestion"
	"github.com/jobdrop/jobdrop/task"
)

// ChainCheck checks what no row of a file can be checked for alone: each
// predecessor a row names (after) is a task the file defines or one that
// runs now, and no chain closes a cycle. Give it every row in file order
// (Row), then Check it. The injector checks every file with chains
// through it, and the dry runs (`jobdrop convert`, the console's upload
// preview) do the same, so that a dry run passes only what a drop would
// inject.
type ChainCheck struct {
	file string
	seed maphash.Seed
	// defined are the valid rows that define a task (not DELETE,
	// TRIGGER, RELEASE or SKIP), deleted the valid DELETE rows, invalid
	// the others, each by the key it names.
	defined, deleted, invalid keySet
	// rows are the valid rows that follow tasks, in file order; byKey
	// finds them.
	rows  []chainRow
	byKey map[string]int
	// names are keys of the tasks the file defines, for "did you mean".
	names []string
	// out are the keys of the rows Check left out.
	out map[string]bool
}

// chainRow is a valid row of the file that follows tasks.
type chainRow struct {
	line  int
	key   string
	after []string // as the row writes them
	preds []string // their keys
}

// maxSuggestNames bounds the task names a file's "did you mean" looks
// through, and maxSuggestions the problems it is asked for: each is an
// edit distance to every name.
const (
	maxSuggestNames = 10_000
	maxSuggestions  = 50
)

// NewChainCheck starts the chain checks of file.
func NewChainCheck(file string) *ChainCheck {
	return &ChainCheck{file: file, seed: maphash.MakeSeed(), byKey: map[string]int{}}
}

// Row adds row r of the file; valid says it passed every check of its own
// (its converter's and RowCheck's).
func (c *ChainCheck) Row(r *converters.Row, valid bool) {
	d := &r.Def
	if d.Host == "" || d.Name == "" {
		return
	}
	// The key's hash as maphash.String(c.seed, d.Key()) has it, without
	// making the key: a file may hold millions of rows.
	var mh maphash.Hash
	mh.SetSeed(c.seed)
	mh.WriteString(d.Host)
	mh.WriteByte('/')
	mh.WriteString(d.Name)
	h := mh.Sum64()
	switch {
	case !valid:
		c.invalid.add(h, r.Line)
	case d.Action == task.Delete:
		c.deleted.add(h, r.Line)
	case d.Action.KeyOnly():
		// TRIGGER, RELEASE, SKIP: they act on a task, define none.
	default:
		c.defined.add(h, r.Line)
		if len(c.names) < maxSuggestNames {
			c.names = append(c.names, d.Key())
		}
		if d.Chained() {
			key := d.Key()
			c.byKey[key] = len(c.rows)
			c.rows = append(c.rows, chainRow{line: r.Line, key: key, after: d.After, preds: d.Predecessors()})
		}
	}
}

// Chained reports whether a valid row of the file follows tasks.
func (c *ChainCheck) Chained() bool { return len(c.rows) > 0 }

// ChainProblems are what Check found.
type ChainProblems struct {
	// Rows are the rows whose predecessors are not all there, one
	// problem per predecessor missing, in file order: each a
	// *converters.RowError of column after.
	Rows []*converters.RowError
	// Cycle is the first cycle the file's chains close, nil if none: it
	// rejects the file whole.
	Cycle *CycleError
	// Unchecked are the predecessors outside the file that Check could
	// not ask about, with no lookup: one line each, for warnings.
	Unchecked []string
}

// Lines are the rows' problems and the cycle's, one line each.
func (p ChainProblems) Lines() []string {
	var out []string
	for _, e := range p.Rows {
		out = append(out, e.Error())
	}
	if p.Cycle != nil {
		out = append(out, p.Cycle.Error())
	}
	return out
}

// CycleError is a chain that closes on itself: each of its tasks waits
// for itself, and none would ever fire. A file that would make one is
// rejected whole, whatever its policy.
type CycleError struct {
	File string
	// Keys are the tasks of the cycle in the order they run, the first
	// again at the end.
	Keys []string
	// Rows are the rows of the file's tasks in it, by key; the others run
	// already.
	Rows map[string]int
}

func (e *CycleError) Error() string {
	var where []string
	for _, key := range e.Keys[:len(e.Keys)-1] {
		if row, ok := e.Rows[key]; ok {
			where = append(where, fmt.Sprintf("%s at row %d", key, row))
		} else {
			where = append(where, key+" running")
		}
	}
	return fmt.Sprintf("%s: column after: the chains close a cycle, %s (%s): a task on a cycle waits for itself and never fires",
		e.File, chain.Path(e.Keys), strings.Join(where, ", "))
}

// Check checks the chains of the rows given so far. running answers
// which of some keys run now, and whom each follows: the predecessors
// outside the file. With running nil, those are left unchecked (listed in
// Unchecked), and only the cycles of the file's own chains are found.
// goodRows leaves out each row whose predecessors are not all there, and
// so then checks the rows that follow it as if it were not in the file;
// otherwise (the file is rejected whole) each problem is reported once,
// where it is. Its error is running's.
func (c *ChainCheck) Check(ctx context.Context, running chain.Lookup, goodRows bool) (ChainProblems, error) {
	// What runs, of the predecessors that need asking: first those the
	// file does not define; then, under the good-rows policy, those it
	// leaves out, as it finds them.
	live := map[string][]string{}
	asked := map[string]bool{}
	ask := func(keys []string) error {
		var news []string
		for _, k := range keys {
			if !asked[k] {
				asked[k] = true
				news = append(news, k)
			}
		}
		if running == nil || len(news) == 0 {
			return nil
		}
		slices.Sort(news)
		found, err := running(ctx, news)
		for k, preds := range found {
			live[k] = preds
		}
		return err
	}
	var outside []string
	for _, r := range c.rows {
		for _, p := range r.preds {
			if c.outside(p) {
				outside = append(outside, p)
			}
		}
	}
	if err := ask(outside); err != nil {
		return ChainProblems{}, err
	}
	var probs ChainProblems
	for {
		probs = ChainProblems{}
		c.out = map[string]bool{}
		var later []string // rows left out, whether they run not known yet
		suggested := 0
		for more := true; more; {
			more = false
			for _, r := range c.rows {
				if c.out[r.key] {
					continue
				}
				var errs []*converters.RowError
				for i, p := range r.preds {
					problem, unchecked := c.missing(p, live, asked, running != nil, goodRows)
					switch {
					case problem == leftOut:
						later = append(later, p)
					case unchecked:
						w := fmt.Sprintf("%s: row %d: column after: predecessor %s is not in the file and was not checked: no task store to ask whether it runs",
							c.file, r.line, p)
						if suggested < maxSuggestions {
							suggested++
							if s := c.suggest(r, r.after[i]); s != "" {
								w += "; did you mean " + s + "?"
							}
						}
						probs.Unchecked = append(probs.Unchecked, w)
					case problem != "":
						if problem == unknown && suggested < maxSuggestions {
							suggested++
							if s := c.suggest(r, r.after[i]); s != "" {
								problem += "; did you mean " + s + "?"
							}
						}
						errs = append(errs, &converters.RowError{File: c.file, Row: r.line, Column: "after", Value: r.after[i],
							Err: fmt.Errorf("predecessor %s %s", p, problem)})
					}
				}
				if len(errs) > 0 {
					c.out[r.key] = true
					probs.Rows = append(probs.Rows, errs...)
					more = goodRows
				}
			}
		}
		if len(later) == 0 {
			break
		}
		// Some rows follow a row left out that may run: ask, and check
		// again.
		if err := ask(later); err != nil {
			return probs, err
		}
	}
	slices.SortStableFunc(probs.Rows, func(a, b *converters.RowError) int { return a.Row - b.Row })

	// The cycles, through the running tasks the chains lead to. Under
	// the good-rows policy the rows left out are not part of them.
	g := chain.New()
	var from []string
	for _, r := range c.rows {
		if !goodRows || !c.out[r.key] {
			g.Set(r.key, r.preds)
			from = append(from, r.key)
		}
	}
	err := g.Load(ctx, func(ctx context.Context, keys []string) (map[string][]string, error) {
		var unknown []string
		for _, k := range keys {
			h := maphash.String(c.seed, k)
			_, defined := c.defined.get(h)
			_, deleted := c.deleted.get(h)
			if !(defined && !c.out[k]) && !deleted {
				// The file defines no task of k (a task it defines and
				// that follows none would have been Set), nor deletes it.
				unknown = append(unknown, k)
			}
		}
		if err := ask(unknown); err != nil {
			return nil, err
		}
		return live, nil
	})
	if err != nil {
		return probs, err
	}
	if keys := g.Cycle(from); keys != nil {
		e := &CycleError{File: c.file, Keys: keys, Rows: map[string]int{}}
		for _, k := range keys {
			if i, ok := c.byKey[k]; ok {
				e.Rows[k] = c.rows[i].line
			}
		}
		probs.Cycle = e
	}
	return probs, nil
}

// The problems of a predecessor that Check words: one that is nowhere,
// and a row left out (good-rows) that may run still.
const (
	unknown = "is neither in the file nor running"
	leftOut = "is left out"
)

// outside reports whether the file neither defines the task of key nor
// deletes it: whether it runs is asked.
func (c *ChainCheck) outside(key string) bool {
	h := maphash.String(c.seed, key)
	_, deleted := c.deleted.get(h)
	_, defined := c.defined.get(h)
	return !deleted && !defined
}

// missing says why the predecessor of key is not there, "" when it is:
// leftOut for a row of the file left out that may run, until asked.
// unchecked: it is not in the file, and with no lookup it cannot be told
// whether it runs.
func (c *ChainCheck) missing(key string, live map[string][]string, asked map[string]bool, lookup, goodRows bool) (problem string, unchecked bool) {
	h := maphash.String(c.seed, key)
	if _, ok := c.defined.get(h); ok && !(goodRows && c.out[key]) {
		return "", false
	}
	if row, ok := c.deleted.get(h); ok {
		return fmt.Sprintf("is deleted by row %d of the file", row), false
	}
	if _, runs := live[key]; runs {
		return "", false
	}
	row, invalid := c.invalid.get(h)
	i, out := c.byKey[key] // a row left out, under good-rows
	if out {
		row, invalid = c.rows[i].line, true
	}
	switch {
	case invalid && !goodRows:
		return fmt.Sprintf("is row %d of the file, which is invalid", row), false
	case !lookup:
		return "", true
	case out && !asked[key]:
		return leftOut, false
	case invalid:
		return fmt.Sprintf("is row %d of the file, which is invalid and left out, and it is not running", row), false
	}
	return unknown, false
}

// suggest is a name of the file close to the predecessor name that row r
// writes, in the form it writes it: a name alone for a task of its host.
func (c *ChainCheck) suggest(r chainRow, name string) string {
	host, _, _ := task.SplitKey(r.key)
	var candidates []string
	for _, k := range c.names {
		if k == r.key {
			continue
		}
		if !strings.Contains(name, "/") {
			h, n, _ := task.SplitKey(k)
			if h != host {
				continue
			}
			k = n
		}
		candidates = append(candidates, k)
	}
	return suggestion.Closest(name, candidates...)
}

// Edges calls fn with each predecessor and follower of the rows the last
// Check kept, in file order.
func (c *ChainCheck) Edges(fn func(pred, follower string)) {
	for _, r := range c.rows {
		if c.out[r.key] {
			continue
		}
		for _, p := range r.preds {
			fn(p, r.key)
		}
	}
}

// leftOut are the lines of the rows the last Check left out.
func (c *ChainCheck) leftOut() map[int]struct{} {
	lines := make(map[int]struct{}, len(c.out))
	for key := range c.out {
		lines[c.rows[c.byKey[key]].line] = struct{}{}
	}
	return lines
}

// produceLinks produces the link records of the rows the last Check
// kept, and returns how many.
func (in *Injector) produceLinks(chains *ChainCheck, produce func(*kgo.Record)) int {
	n := 0
	chains.Edges(func(pred, follower string) {
		produce(command.LinkRecord(in.cfg.Topics.Input, pred, follower, true))
		n++
	})
	return n
}

// checkChains checks the chains of f's rows, which check gave chains,
// and adds their problems to rej and skip: a row whose predecessors are
// not all there is invalid (under PolicyGoodRows it is left out, and so
// are the rows that follow it then), a cycle is the file's own problem.
// ready returns once the store answers for every command committed before
// the file. The predecessors outside the file are asked of the task store
// (Config.Sources), once ready; an injector without one leaves them
// unchecked, which the file's warnings say. Its error is the store's.
func (in *Injector) checkChains(ctx context.Context, f File, chains *ChainCheck, rej *RejectedError, skip map[int]struct{}, syncing *syncRows, ready func(context.Context) error) error {
	if !chains.Chained() {
		return nil
	}
	var running chain.Lookup
	if in.cfg.Sources != nil {
		waited := false
		running = func(ctx context.Context, keys []string) (map[string][]string, error) {
			if !waited {
				if err := ready(ctx); err != nil {
					return nil, err
				}
				waited = true
			}
			found := map[string][]string{}
			err := in.cfg.Sources.Tasks(ctx, keys, func(t diff.Current) error {
				if t.Live {
					found[t.Key] = t.Definition.Predecessors()
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("check the chains of %s: %w: %w", f.Name, ErrUnavailable, err)
			}
			return found, nil
		}
	}
	probs, err := chains.Check(ctx, running, f.Policy == PolicyGoodRows)
	if err != nil {
		return err
	}
	for _, e := range probs.Rows {
		rej.fail(e.Error(), in.cfg.MaxErrors)
	}
	out := chains.leftOut()
	for line := range out {
		skip[line] = struct{}{}
	}
	rej.Bad = len(skip)
	for _, w := range probs.Unchecked {
		if len(rej.Warnings) < record.MaxBatchErrors {
			rej.Warnings = append(rej.Warnings, w)
		}
	}
	if probs.Cycle != nil {
		rej.Err = probs.Cycle
	}
	if syncing != nil {
		syncing.leaveOut(out)
	}
	return nil
}
