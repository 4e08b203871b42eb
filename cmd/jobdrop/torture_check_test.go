package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// taskView is what the readers are compared on.
type taskView struct {
	paused   bool
	data     string // the data's "v"
	nextFire int64
}

func (v taskView) String() string {
	return fmt.Sprintf("paused=%t v=%q nextFire=%d", v.paused, v.data, v.nextFire)
}

// agree returns once the state topic, the engine and the console agree
// task by task with each other and with what was done, and fails the test
// when they still do not after three minutes.
func (tt *tortured) agree() {
	tt.t.Helper()
	var diffs []string
	var bad int
	defer func() {
		if tt.t.Failed() {
			tt.logTransactions()
			tt.t.Logf("%d tasks disagree; the first: \n%s", bad, strings.Join(diffs, "\n"))
			if tt.cluster != nil {
				if g := tt.cluster.GroupInfo("jobdrop-scheduler"); g != nil {
					for _, m := range g.Members {
						tt.t.Logf("group member %s (%s): %v", m.MemberID, m.ClientHost, m.Assignment)
					}
				}
			}
		}
	}()
	kafkatest.Eventually(tt.t, 3*time.Minute, "the state topic, the engine and the console to agree", func() bool {
		begin := time.Now()
		diffs, bad = tt.compare()
		tt.compareTook = append(tt.compareTook, time.Since(begin))
		return bad == 0
	})
	if tt.restarted {
		tt.agreeAfter = append(tt.agreeAfter, time.Since(tt.started))
		tt.restarted = false
	}
	tt.checks++
}

// compare reads the three and says where they disagree.
func (tt *tortured) compare() (diffs []string, bad int) {
	state := tt.view.catchUp()
	engine, ok := tt.engineTasks()
	if !ok {
		return []string{"the engine's task count cannot be read"}, 1
	}
	var sum storetype.Summary
	if err := getJSON(tt.console+"/api/summary", &sum); err != nil {
		return []string{err.Error()}, 1
	}
	console, err := tt.consoleTasks()
	if err != nil {
		return []string{err.Error()}, 1
	}
	add := func(key, format string, args ...any) {
		bad++
		if len(diffs) < 20 {
			diffs = append(diffs, key+": "+fmt.Sprintf(format, args...))
		}
	}
	if engine != len(state) {
		add("engine", "holds %d tasks, the state topic %d", engine, len(state))
	}
	if sum.TasksActive+sum.TasksPaused != len(state) {
		add("console", "/api/summary counts %d active and %d paused tasks, the state topic %d", sum.TasksActive, sum.TasksPaused, len(state))
	}
	// What was done.
	want := map[string]func(taskView) bool{}
	for i := range ticks {
		want[fmt.Sprintf("%s/t%02d", hostTick, i)] = func(v taskView) bool { return !v.paused }
	}
	for i := range *tortureBulk {
		want[hostBulk+"/"+bulkName(i)] = func(v taskView) bool { return tt.bulkCut || v.paused == tt.bulkPaused }
	}
	last := strconv.Itoa(tt.files - 1)
	for i, live := range tt.big {
		if live && tt.files > 0 {
			want[hostBig+"/"+bigName(i)] = func(v taskView) bool { return !v.paused && v.data == last }
		}
	}
	keys := map[string]bool{}
	for k := range state {
		keys[k] = true
	}
	for k := range console {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	for k := range keys {
		s, inState := state[k]
		c, inConsole := console[k]
		w, wanted := want[k]
		host, _, _ := strings.Cut(k, "/")
		switch {
		case !inState && !inConsole:
			add(k, "lost: in neither the state topic nor the console")
		case !inState:
			add(k, "on the console (%s), not in the state topic", c)
		case !inConsole:
			add(k, "in the state topic (%s), not on the console", s)
		case s.paused != c.paused || s.data != c.data || host != hostTick && s.nextFire != c.nextFire:
			add(k, "state topic %s, console %s", s, c)
		case wanted && !w(s):
			what := "active"
			switch host {
			case hostBulk:
				what = fmt.Sprintf("paused=%t, as the last bulk action left it", tt.bulkPaused)
			case hostBig:
				what = fmt.Sprintf("active with the data of the last file, v=%q", last)
			}
			add(k, "state topic and console %s, want %s", s, what)
		case !wanted && host != hostOnce:
			add(k, "a task no one created or one deleted: %s", s)
		}
	}
	tt.checked += len(keys)
	return diffs, bad
}

// engineTasks is how many tasks the engine says it holds.
func (tt *tortured) engineTasks() (int, bool) {
	resp, err := http.Get(tt.console + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false
	}
	m := activeTasksLine.FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(m[1]), 64)
	return int(f), err == nil
}

// bigName and bulkName name task i of hostBig and hostBulk.
func bigName(i int) string  { return fmt.Sprintf("b%06d", i) }
func bulkName(i int) string { return fmt.Sprintf("u%06d", i) }

// nextLink is the URL of a Link header's rel="next".
var nextLink = regexp.MustCompile(`<([^>]+)>; rel="next"`)

// consoleTasks lists the console's live tasks (active or paused), a
// thousand a page, following each page's link to the next.
func (tt *tortured) consoleTasks() (map[string]taskView, error) {
	out := map[string]taskView{}
	total := -1
	first := url.Values{"status": {storetype.TaskLive}, "sort": {storetype.TaskSortKey}, "limit": {"1000"}}
	for page := "/api/tasks?" + first.Encode(); page != ""; {
		resp, err := http.Get(tt.console + page)
		if err != nil {
			return nil, err
		}
		var tasks []storetype.Task
		err = json.NewDecoder(resp.Body).Decode(&tasks)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			return nil, fmt.Errorf("GET %s: %s %v", page, resp.Status, err)
		}
		if n, err := strconv.Atoi(resp.Header.Get("X-Total-Count")); err == nil && total < 0 {
			total = n
		}
		for _, t := range tasks {
			v := taskView{paused: t.Paused}
			if t.NextFire != nil {
				v.nextFire = t.NextFire.UnixMilli()
			}
			var d struct {
				Data map[string]string `json:"data"`
			}
			if t.Definition != "" && json.Unmarshal([]byte(t.Definition), &d) == nil {
				v.data = d.Data["v"]
			}
			out[t.Key] = v
		}
		page = ""
		if m := nextLink.FindStringSubmatch(resp.Header.Get("Link")); m != nil {
			page = m[1]
		}
	}
	if total != len(out) {
		return nil, fmt.Errorf("/api/tasks: X-Total-Count %d, %d tasks listed page by page", total, len(out))
	}
	return out, nil
}

// wholeTopicAgrees reads the state topic again from its start and checks
// it holds what the reader following it holds: the brokers lost or
// changed nothing committed, across the kills and the restarts.
func (tt *tortured) wholeTopicAgrees() {
	tt.t.Helper()
	follow := tt.view.catchUp()
	fresh := newStateView(tt.t, tt.brokers).catchUp()
	bad := 0
	for k, v := range follow {
		if w, ok := fresh[k]; !ok || w != v {
			bad++
			if bad <= 10 {
				tt.t.Errorf("%s: followed %s; read again from the start: %s (present %t)", k, v, w, ok)
			}
		}
	}
	for k, w := range fresh {
		if _, ok := follow[k]; !ok {
			bad++
			if bad <= 10 {
				tt.t.Errorf("%s: read again from the start %s, not in what was followed", k, w)
			}
		}
	}
	if bad > 0 {
		tt.t.Fatalf("the state topic read from its start differs from what a reader following it saw, for %d tasks", bad)
	}
}

// occurrences reads the target topics, read_committed, once every
// occurrence due by now should have fired: each exactly once.
func (tt *tortured) occurrences() (lost, dups, due int) {
	tt.t.Helper()
	end := time.Now().Add(-time.Second)
	perTick := int(end.Sub(tt.tickStart)/time.Second) + 1
	count := func() bool {
		fired := map[string]int{}
		at := map[string]bool{}
		for _, topic := range []string{"torture-ticks", "torture-once"} {
			kafkatest.EachCommitted(tt.t, tt.brokers, topic, func(r *kgo.Record) {
				var f record.Fired
				if err := json.Unmarshal(r.Value, &f); err != nil {
					tt.t.Errorf("%s: %v", kafkatest.Describe(r), err)
					return
				}
				fired[f.FireID]++
				at[f.Host+"/"+f.Name+"@"+strconv.FormatInt(f.ScheduledAt, 10)] = true
			})
		}
		lost, dups, due = 0, 0, 0
		for i := range ticks {
			for k := range perTick {
				due++
				if !at[fmt.Sprintf("%s/t%02d@%d", hostTick, i, tt.tickStart.Add(time.Duration(k)*time.Second).UnixMilli())] {
					lost++
				}
			}
		}
		for key, ms := range tt.once {
			if ms <= end.UnixMilli() {
				due++
				if !at[key+"@"+strconv.FormatInt(ms, 10)] {
					lost++
				}
			}
		}
		for _, n := range fired {
			dups += n - 1
		}
		return lost == 0
	}
	var last int
	defer func() {
		if tt.t.Failed() {
			tt.t.Logf("%d occurrences not fired", last)
		}
	}()
	kafkatest.Eventually(tt.t, 2*time.Minute, "every occurrence due to have fired", func() bool {
		ok := count()
		last = lost
		return ok
	})
	return lost, dups, due
}

// stateView follows the state topic as a read_committed reader does: the
// last value of every key, tombstones removing it.
type stateView struct {
	t       *testing.T
	brokers []string
	topic   string
	next    map[int32]int64
	live    map[string]taskView
}

func newStateView(t *testing.T, brokers []string) *stateView {
	return &stateView{t: t, brokers: brokers, topic: record.Topics{}.WithDefaults().State,
		next: map[int32]int64{}, live: map[string]taskView{}}
}

// catchUp reads every partition up to its last stable offset at the call
// and returns the tasks live then, keyed host/name; the map is the view's
// own, to read until the next call.
func (v *stateView) catchUp() map[string]taskView {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm := kadm.NewClient(kafkatest.Client(v.t, v.brokers))
	ends, err := adm.ListCommittedOffsets(ctx, v.topic)
	if err != nil {
		v.t.Fatalf("read %s: %v", v.topic, err)
	}
	pending := map[int32]int64{}
	from := map[string]map[int32]kgo.Offset{v.topic: {}}
	ends.Each(func(o kadm.ListedOffset) {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			return
		}
		if o.Err != nil {
			v.t.Fatalf("read %s/%d: %v", v.topic, o.Partition, o.Err)
		}
		if o.Offset > v.next[o.Partition] {
			pending[o.Partition] = o.Offset
			from[v.topic][o.Partition] = kgo.NewOffset().At(v.next[o.Partition])
		}
	})
	if len(pending) > 0 {
		// Transaction markers come through, so that a partition's
		// position reaches its last stable offset.
		cons := kafkatest.Client(v.t, v.brokers, kgo.ConsumePartitions(from), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		defer cons.Close()
		for len(pending) > 0 {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				v.t.Fatalf("read %s: partitions %v not read to their end", v.topic, pending)
			}
			fs.EachError(func(_ string, p int32, err error) { v.t.Fatalf("read %s/%d: %v", v.topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				end, ok := pending[r.Partition]
				if !ok || r.Offset >= end {
					return
				}
				v.next[r.Partition] = r.Offset + 1
				if r.Offset+1 >= end {
					delete(pending, r.Partition)
				}
				if r.Attrs.IsControl() || !strings.Contains(string(r.Key), "/") {
					return // a marker, or the engine's own records
				}
				if r.Value == nil {
					delete(v.live, string(r.Key))
					return
				}
				var st record.State
				if err := json.Unmarshal(r.Value, &st); err != nil {
					v.t.Errorf("%s: %v", kafkatest.Describe(r), err)
					return
				}
				v.live[string(r.Key)] = taskView{paused: st.Definition.Paused(), data: st.Definition.Data["v"], nextFire: st.NextFire}
			})
		}
	}
	return v.live
}

// logTransactions logs, for a disagreement, what could hold a
// read_committed reader back: each of jobdrop's topics' end and last
// stable offsets where they differ, and the transactions the brokers
// know of.
func (tt *tortured) logTransactions() {
	adm := kadm.NewClient(kafkatest.Client(tt.t, tt.brokers))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics := record.Topics{}.WithDefaults()
	for _, topic := range []string{topics.State, topics.Input, topics.Status, topics.Audit, topics.Executions} {
		ends, err := adm.ListEndOffsets(ctx, topic)
		stable, serr := adm.ListCommittedOffsets(ctx, topic)
		if err != nil || serr != nil {
			tt.t.Logf("offsets of %s: %v %v", topic, err, serr)
			continue
		}
		ends.Each(func(o kadm.ListedOffset) {
			if s, _ := stable.Lookup(topic, o.Partition); s.Offset != o.Offset {
				tt.t.Logf("%s/%d: end offset %d, last stable offset %d", topic, o.Partition, o.Offset, s.Offset)
			}
		})
	}
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		tt.t.Logf("transactions: %v", err)
		return
	}
	described, err := adm.DescribeTransactions(ctx, listed.TransactionalIDs()...)
	if err != nil {
		tt.t.Logf("transactions: %v", err)
	}
	for _, x := range described.Sorted() {
		tt.t.Logf("transaction %s: %s, producer %d epoch %d, begun %d, partitions %v", x.TxnID, x.State, x.ProducerID, x.ProducerEpoch, x.StartTimestamp, x.Topics)
	}
}
