package injector

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jobdrop/jobdrop/task"
)

// encodingCases are definitions whose JSON appendDefinition must write
// byte for byte as encoding/json does.
func encodingCases() []task.Definition {
	start, end, no, yes := int64(1772348400000), int64(-5), false, true
	return []task.Definition{
		{},
		{Host: "acme", Name: "job-1", Action: task.Insert, Topic: "jobs"},
		{Host: "acme", Name: "job-1", Action: task.Insert, Topic: "jobs",
			Frequency: &task.Frequency{TimeUnit: task.Minutes, Time: 5}, Start: &start,
			Data: map[string]string{"command": "/opt/run.sh", "b": "2", "a": "1", "": "empty key"}},
		{Host: "h", Name: "n", Data: map[string]string{}},
		{Host: `<a href="x">&amp;</a>`, Name: "tab\there\nnew\rline\b\f\x00\x1f\x7f", Topic: "\\back\"slash",
			Data: map[string]string{"\u2028": "\u2029", "é": "日本語", "bad": "\xff\xfe ok \xc3"}},
		{Host: "h", Name: "n", Cron: "0 8 * * MON-FRI", CronDialect: task.DialectUnix, Rrule: "FREQ=DAILY",
			Timezone: "Europe/Paris", End: &end, Misfire: task.Misfire("SKIP"), Active: &no, Timeout: 60_000},
		{Host: "h", Name: "n", Active: &yes, Timeout: -1, Frequency: &task.Frequency{TimeUnit: "DAYS", Time: -2147483648}},
		{Host: "h", Name: "n", Window: &task.Window{From: "08:00", To: "18:00", Days: []string{"MON"}}},
		{Host: "h", Name: "n", Message: &task.Message{Key: []byte("k"), Value: []byte("v")}},
		{Host: "h", Name: "report", After: []string{"transform", "other/<load>", "é\u2028"}, On: task.OnFailure, Delay: 600_000},
		{Host: "h", Name: "n", After: []string{}, Delay: -1},
		{Host: "h", Name: "n", Timeout: 5, Retry: &task.Retry{Attempts: 3, Delay: 1000, Multiplier: 1.5, OnOverdue: true}},
	}
}

func TestAppendDefinitionIsEncodingJSON(t *testing.T) {
	for _, d := range encodingCases() {
		want, err := json.Marshal(&d)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendDefinition(nil, &d); !bytes.Equal(got, want) {
			t.Errorf("appendDefinition:\n got %s\nwant %s", got, want)
		}
	}
}

// TestAppendDefinitionRandom compares the two encodings over random text:
// every byte value, multi-byte runes, invalid sequences, many data keys.
func TestAppendDefinitionRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "Z", "0", " ", "\"", "\\", "<", ">", "&", "\u2028", "\u2029", "é", "日", "😀", "\xff", "\xc3", "\xe2\x80", "\x00", "\n", "\t", "\x7f", "/"}
	text := func() string {
		var b strings.Builder
		for range r.IntN(12) {
			if r.IntN(4) == 0 {
				b.WriteByte(byte(r.IntN(256)))
			} else {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
		}
		return b.String()
	}
	for range 20_000 {
		d := task.Definition{Host: text(), Name: text(), Action: task.Action(text()), Topic: text(), Cron: text(), Timezone: text()}
		if r.IntN(2) == 0 {
			d.Frequency = &task.Frequency{TimeUnit: task.TimeUnit(text()), Time: r.Int32() - r.Int32()}
		}
		if r.IntN(2) == 0 {
			s := r.Int64() - r.Int64()
			d.Start, d.End = &s, &s
		}
		if n := r.IntN(12); n > 0 {
			d.Data = map[string]string{}
			for range n {
				d.Data[text()] = text()
			}
		}
		want, _ := json.Marshal(&d)
		if got := appendDefinition(nil, &d); !bytes.Equal(got, want) {
			t.Fatalf("appendDefinition(%#v):\n got %s\nwant %s", d, got, want)
		}
	}
}

func BenchmarkEncodeCommand(b *testing.B) {
	start := int64(1772348400000)
	d := task.Definition{Host: "acme", Name: "job-0000042", Action: task.Insert, Topic: "batch-jobs",
		Frequency: &task.Frequency{TimeUnit: task.Minutes, Time: 43}, Start: &start,
		Data: map[string]string{"command": "/opt/jobs/run-0000042.sh"}}
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(&d)
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendDefinition(buf[:0], &d)
		}
	})
}
