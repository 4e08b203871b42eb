package msgsched

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

func testConverter(grace time.Duration) converter {
	return converter{input: "light-scheduler", audit: "light-scheduler-audit", history: "history", grace: grace,
		clock: clockwork.NewFakeClockAt(time.Unix(1_700_000_000, 0))}
}

func schedule(key, value string, arrived time.Time, headers ...string) *kgo.Record {
	rec := &kgo.Record{Topic: "schedules", Partition: 2, Offset: 41, Key: []byte(key), Timestamp: arrived}
	if value != "" {
		rec.Value = []byte(value)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: headers[i], Value: []byte(headers[i+1])})
	}
	return rec
}

func scheduled(key, value string, epoch int64, arrived time.Time) *kgo.Record {
	return schedule(key, value, arrived,
		"customer-header", "dummy",
		record.HeaderScheduleEpoch, itoa(epoch),
		record.HeaderScheduleTargetTopic, "online-videos",
		record.HeaderScheduleTargetKey, "vid1")
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func command(t *testing.T, rec *kgo.Record) task.Definition {
	t.Helper()
	if rec.Topic != "light-scheduler" {
		t.Fatalf("record to %s, want the input topic", rec.Topic)
	}
	var d task.Definition
	if err := json.Unmarshal(rec.Value, &d); err != nil {
		t.Fatal(err)
	}
	if string(rec.Key) != d.Key() {
		t.Fatalf("command key %q for task %q", rec.Key, d.Key())
	}
	return d
}

func TestScheduleBecomesOneShotTaskFiringItsRecord(t *testing.T) {
	arrived := time.Unix(1607918336, 0)
	out := testConverter(0).convert(scheduled("vid1/online", `"video 1"`, 1893456000, arrived))
	if len(out) != 1 {
		t.Fatalf("%d records, want 1 command", len(out))
	}
	d := command(t, out[0])
	if d.Host != "schedules" || d.Name != "vid1%2Fonline" || d.Action != task.Insert || d.Topic != "online-videos" ||
		d.Start == nil || *d.Start != 1893456000_000 || d.Frequency != nil {
		t.Fatalf("command %+v", d)
	}
	m := d.Message
	if m == nil || string(m.Key) != "vid1" || string(m.Value) != `"video 1"` || m.History != "history" ||
		m.From.Topic != "schedules" || m.From.Partition != 2 || string(m.From.Key) != "vid1/online" ||
		m.From.Timestamp != arrived.UnixMilli() {
		t.Fatalf("message %+v", m)
	}
	if len(m.Headers) != 1 || m.Headers[0].Key != "customer-header" || string(m.Headers[0].Value) != "dummy" {
		t.Fatalf("headers kept %+v, want only the schedule's own", m.Headers)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTombstoneDeletesTheSchedule(t *testing.T) {
	out := testConverter(0).convert(schedule("vid1", "", time.Now()))
	if len(out) != 1 {
		t.Fatalf("%d records, want 1 command", len(out))
	}
	if d := command(t, out[0]); d.Action != task.Delete || d.Key() != "schedules/vid1" {
		t.Fatalf("command %+v, want DELETE schedules/vid1", d)
	}
	// The tombstones jobdrop writes itself, once fired or dropped, change
	// nothing when read back.
	for _, h := range []string{record.HeaderFireID, HeaderDropped} {
		if out := testConverter(0).convert(schedule("vid1", "", time.Now(), h, "x")); len(out) != 0 {
			t.Fatalf("own tombstone (%s) gave %d records", h, len(out))
		}
	}
}

func TestScheduleArrivingPastDueFiresWithinGraceElseIsDropped(t *testing.T) {
	epoch := int64(1_800_000_000)
	arrived := time.Unix(epoch, 0).Add(3 * time.Second)
	if out := testConverter(5 * time.Second).convert(scheduled("k", "v", epoch, arrived)); len(out) != 1 || command(t, out[0]).Action != task.Insert {
		t.Fatalf("3 s late with a grace of 5 s: %d records, want the command", len(out))
	}
	out := testConverter(time.Second).convert(scheduled("k", "v", epoch, arrived))
	if len(out) != 3 {
		t.Fatalf("3 s late with a grace of 1 s: %d records, want delete, tombstone, audit", len(out))
	}
	if d := command(t, out[0]); d.Action != task.Delete {
		t.Fatalf("first record %+v, want the DELETE of any earlier version", d)
	}
	if tomb := out[1]; tomb.Topic != "schedules" || tomb.Partition != 2 || string(tomb.Key) != "k" || tomb.Value != nil {
		t.Fatalf("tombstone %+v, want one on schedules partition 2", tomb)
	}
	var a record.Audit
	if err := json.Unmarshal(out[2].Value, &a); err != nil || a.Action != record.ActionScheduleDropped ||
		!strings.Contains(a.Detail, "3s before it arrived") || !strings.Contains(a.Detail, "schedules partition 2 offset 41") {
		t.Fatalf("audit %+v (%v)", a, err)
	}
}

func TestRecordThatIsNoScheduleIsRejectedByName(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		rec  *kgo.Record
		want string
	}{
		{schedule("k", "v", now), "header scheduler-epoch, scheduler-target-topic, scheduler-target-key missing"},
		{schedule("k", "v", now, record.HeaderScheduleEpoch, "tomorrow", record.HeaderScheduleTargetTopic, "t",
			record.HeaderScheduleTargetKey, "x"), `scheduler-epoch "tomorrow": want the fire time in whole seconds`},
		{schedule("k", "v", now, record.HeaderScheduleEpoch, "4102444800", record.HeaderScheduleTargetTopic, "no topic",
			record.HeaderScheduleTargetKey, "x"), "must be a Kafka topic name"},
		{schedule("", "v", now), "has no key"},
	} {
		out := testConverter(0).convert(c.rec)
		if len(out) != 1 || out[0].Topic != "light-scheduler-audit" {
			t.Fatalf("%d records, want one audit event", len(out))
		}
		var a record.Audit
		if err := json.Unmarshal(out[0].Value, &a); err != nil || a.Action != record.ActionScheduleRejected ||
			!strings.Contains(a.Detail, c.want) || !strings.Contains(a.Detail, "schedules partition 2 offset 41") {
			t.Errorf("audit %+v (%v), want a rejection saying %q", a, err, c.want)
		}
	}
}

func TestEscapeNameKeepsKeysApart(t *testing.T) {
	seen := map[string]string{}
	for _, k := range []string{"a/b", "a%2Fb", "a\x00b", "a\xffb", "plain-key.1", "é"} {
		n := task.EscapeName([]byte(k))
		if prev, dup := seen[n]; dup {
			t.Fatalf("keys %q and %q share the name %q", prev, k, n)
		}
		seen[n] = k
		d := task.Definition{Host: "h", Name: n, Action: task.Delete}
		if err := d.Validate(); err != nil {
			t.Errorf("key %q → name %q: %v", k, n, err)
		}
	}
	if n := task.EscapeName([]byte("plain-key.1")); n != "plain-key.1" {
		t.Fatalf("plain key escaped to %q", n)
	}
}

func TestHostileScheduleIsRejectedBriefly(t *testing.T) {
	now := time.Now()
	huge := string(make([]byte, 300_000)) // a key as large as a record
	out := testConverter(0).convert(schedule(huge, "v", now))
	if len(out) != 1 || out[0].Topic != "light-scheduler-audit" {
		t.Fatalf("%d records, want one audit event", len(out))
	}
	if n := len(out[0].Value); n > 2048 {
		t.Fatalf("the audit event of a 300,000-byte key is %d bytes: it would be refused as the key is", n)
	}
	if !strings.Contains(string(out[0].Value), "(300000 bytes)") {
		t.Errorf("audit %s does not say the key's length", out[0].Value)
	}
	// A fire time past the year 9999 has no RFC 3339 form: refused by name.
	out = testConverter(0).convert(schedule("far", "v", now, record.HeaderScheduleEpoch, "253402300800",
		record.HeaderScheduleTargetTopic, "t", record.HeaderScheduleTargetKey, "x"))
	var a record.Audit
	if len(out) != 1 || json.Unmarshal(out[0].Value, &a) != nil || a.Action != record.ActionScheduleRejected ||
		!strings.Contains(a.Detail, `scheduler-epoch "253402300800"`) {
		t.Fatalf("epoch in the year 10000: %+v", a)
	}
	// A key of spaces is the key's fault, not the target topic's.
	out = testConverter(0).convert(scheduled("   ", "v", 4102444800, now))
	if len(out) != 1 || json.Unmarshal(out[0].Value, &a) != nil || !strings.Contains(a.Detail, "key: is required") {
		t.Fatalf("blank key: %+v", a)
	}
}
