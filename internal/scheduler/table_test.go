package scheduler

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

func testTable(t *testing.T) *table {
	t.Helper()
	sp, err := openSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sp.close)
	return newTable(sp)
}

// TestTableFindsTasksWhoseKeysShareAHash: with every key hashed alike, the
// table still tells tasks apart by key, through sets, removals and reuse of
// slots, and fires them in time order.
func TestTableFindsTasksWhoseKeysShareAHash(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func(string) uint32
	}{
		{"distinct hashes", nil},
		{"one hash for all", func(string) uint32 { return 42 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := testTable(t)
			if tc.hash != nil {
				tb.hash = tc.hash
			}
			want := map[string]string{} // key → data
			set := func(name string, at int64) {
				d := task.Definition{Host: "h", Name: name, Topic: "jobs", Start: task.Ptr(at)}
				data := fmt.Sprintf(`{"n":"%s@%d"}`, name, at)
				st := record.State{Anchor: at, NextFire: at}
				i, err := tb.set(d.Key(), &d, &st, []byte(data))
				if err != nil {
					t.Fatal(err)
				}
				tb.schedule(i)
				want[d.Key()] = data
			}
			for n := range 50 {
				set(fmt.Sprint("t", n), int64(1000-n))
			}
			for n := 0; n < 50; n += 3 { // replace a third
				set(fmt.Sprint("t", n), int64(2000+n))
			}
			for n := 1; n < 50; n += 3 { // remove a third
				key := task.Key("h", fmt.Sprint("t", n))
				i, ok, err := tb.find(key)
				if err != nil || !ok {
					t.Fatalf("find %s: %v %v", key, ok, err)
				}
				tb.remove(i, key)
				delete(want, key)
			}
			for n := range 10 { // reuse the emptied slots
				set(fmt.Sprint("u", n), int64(500+n))
			}
			if tb.n != len(want) {
				t.Fatalf("table holds %d tasks, want %d", tb.n, len(want))
			}
			for key, data := range want {
				i, ok, err := tb.find(key)
				if err != nil || !ok {
					t.Fatalf("find %s: %v %v", key, ok, err)
				}
				k, d, err := tb.read(i)
				if err != nil || string(k) != key || string(d) != data {
					t.Fatalf("read %s = %q %q %v, want %q", key, k, d, err, data)
				}
			}
			if _, ok, _ := tb.find(task.Key("h", "t1")); ok {
				t.Fatal("a removed task is found")
			}
			// The fire order gives every task once, soonest first.
			var last int64
			seen := 0
			for {
				i, at, ok := tb.next()
				if !ok {
					break
				}
				if at < last {
					t.Fatalf("fire order went back from %d to %d", last, at)
				}
				last = at
				tb.unschedule(i)
				seen++
			}
			if seen != len(want) {
				t.Fatalf("fire order held %d tasks, want %d", seen, len(want))
			}
		})
	}
}

// TestStateRecordsReadBackWhole: every field of a state record survives
// encodeState and decodeState.
func TestStateRecordsReadBackWhole(t *testing.T) {
	for name, d := range map[string]task.Definition{
		"frequency": {Host: "acme", Name: "billing", Action: task.Update, Topic: "jobs", Start: task.Ptr(int64(1_700_000_000_000)),
			Frequency: &task.Frequency{TimeUnit: task.Minutes, Time: 5}, End: task.Ptr(int64(1_800_000_000_000)),
			Misfire: task.FireAll, Active: task.Ptr(false), Timeout: 60_000},
		"cron": {Host: "acme", Name: "nightly \"é\" <b>", Action: task.Insert, Topic: "jobs", Cron: "0 30 2 * * MON-FRI",
			Timezone: "Europe/Paris", Window: &task.Window{From: "22:00", To: "06:00", Days: []string{"MON", "TUE"}},
			Active: task.Ptr(true)},
		"one-shot": {Host: "h", Name: "n", Topic: "t"},
	} {
		t.Run(name, func(t *testing.T) {
			st := record.State{Definition: d, Anchor: 1_700_000_000_000, NextFire: 1_700_000_300_000, FireCount: 7,
				LastFire: 1_700_000_000_000, Source: record.Source{Batch: "b", File: "jobs.csv", Row: 3, Actor: "watcher"},
				UpdatedAt: 1_700_000_000_123}
			for _, data := range []string{"", `{"cmd":"run \"x\"","env":"prod"}`} {
				var raw []byte
				if data != "" {
					raw = []byte(data)
				}
				got, gotData, err := decodeState(encodeState(st, raw))
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, st) || string(gotData) != data {
					t.Fatalf("read back %+v %q\nwant      %+v %q", got, gotData, st, data)
				}
			}
		})
	}
}

// TestEncodeWritesWhatEncodingJSONWrites: the records the engine writes
// are byte for byte what encoding/json would write.
func TestEncodeWritesWhatEncodingJSONWrites(t *testing.T) {
	d := task.Definition{Host: "a<b>&c", Name: "n\u2028é\"\\", Topic: "jobs", Frequency: &task.Frequency{TimeUnit: task.Hours, Time: 2},
		Window: &task.Window{From: "08:00", To: "18:00", Days: []string{"MON"}}, Active: task.Ptr(false), Data: map[string]string{"z": "1", "a": "<2>"}}
	data := json.RawMessage(`{"a":"<2>","z":"1"}`)
	for name, v := range map[string]any{
		"fired":     firedWire{Fired: record.Fired{Host: d.Host, Name: d.Name, ScheduledAt: 1, FiredAt: 2, FireID: "f", Triggered: true}, Data: data},
		"execution": record.Execution{FireID: "f", Host: d.Host, Name: d.Name, Topic: "jobs", Partition: 3, Offset: 9, Timeout: 5},
		"state":     stateWire{State: record.State{Definition: d, Anchor: 1, NextFire: 2}, Definition: defWire{Definition: d, Data: data}},
		"status":    record.Status{FireID: "f", Status: record.StatusFailed, Message: "topic <x> & y", Worker: "scheduler", At: 1},
		"audit":     record.Audit{ID: "i", At: 1, Actor: "a&b", Action: "task.created", Object: d.Key(), Outcome: "ok"},
		"data":      d.Data,
	} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := encode(v); string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// FuzzHandEncoders: the event and execution of every fire, written by
// hand, are byte for byte what encoding/json writes for them.
func FuzzHandEncoders(f *testing.F) {
	f.Add("a<b>&c", "n\u2028é\"\\", "f", "", "", int64(1), int64(2), 0, false, "jobs", int64(0), "<2>")
	f.Add("h", "n", "h/n@1", "h/p@0", "h/q@0", int64(-1), int64(1<<60), 3, true, "", int64(5000), "")
	f.Add("\xff", "\x01", "", "r", "\t", int64(0), int64(0), 2, false, "t", int64(-3), "\x7f")
	f.Fuzz(func(t *testing.T, host, name, fireID, run, after string, scheduled, fired int64, attempt int, triggered bool, topic string, timeout int64, job string) {
		var afters []string
		if after != "" {
			afters = []string{after, run}
		}
		var data json.RawMessage
		if job != "" {
			data = encode(map[string]string{"job": job})
		}
		ev := record.Fired{Host: host, Name: name, ScheduledAt: scheduled, FiredAt: fired, FireID: fireID,
			Triggered: triggered, Attempt: attempt, Run: run, After: afters}
		want, err := json.Marshal(firedWire{Fired: ev, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeFired(nil, &ev, data); string(got) != string(want) {
			t.Fatalf("event:\n got %s\nwant %s", got, want)
		} else if len(got) > firedSize(&ev, data) {
			t.Fatalf("event of %d bytes, firedSize says at most %d", len(got), firedSize(&ev, data))
		}
		x := record.Execution{FireID: fireID, Host: host, Name: name, Topic: topic, Partition: int32(attempt), Offset: scheduled,
			ScheduledAt: scheduled, FiredAt: fired, Batch: job, Timeout: timeout, Collapsed: attempt * 2, Attempt: attempt, Run: run, After: afters}
		if want, err = json.Marshal(x); err != nil {
			t.Fatal(err)
		}
		if got := encodeExecution(nil, &x); string(got) != string(want) {
			t.Fatalf("execution:\n got %s\nwant %s", got, want)
		} else if len(got) > executionSize(&x) {
			t.Fatalf("execution of %d bytes, executionSize says at most %d", len(got), executionSize(&x))
		}
	})
}
