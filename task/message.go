package task

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Message is what a task fires when it came from a message schedule (a
// record of kafka-message-scheduler's protocol) rather than a job list: a
// Kafka record written as it was given, instead of jobdrop's fired event.
type Message struct {
	// Key and Value are the record's key and value as fired: the
	// schedule's target key and its own value, byte for byte.
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
	// Headers are the schedule's headers but its scheduling ones, in order.
	Headers []Header `json:"headers,omitempty"`
	// From is the schedule record: where its tombstone goes once fired.
	From Origin `json:"from"`
	// History, when set, is the topic a copy of the fired record goes to.
	History string `json:"history,omitempty"`
}

// Header is one Kafka record header.
type Header struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Origin is the record a message schedule was read from.
type Origin struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Key       []byte `json:"key"`
	// Timestamp is the record's, epoch milliseconds.
	Timestamp int64 `json:"timestamp"`
}

// ErrMessageFromSchedules refuses a message anywhere but on the commands
// the schedule topics' bridge writes: its tombstone goes where the message
// says, on a topic that names its partitions.
var ErrMessageFromSchedules = errors.New("set only by the schedule topics (message_scheduler.topics), not by files or the API")

// validateMessage checks the message of a definition: a one-shot task
// whose schedule record is known.
func (d *Definition) validateMessage(bad func(field, value, reason string)) {
	m := d.Message
	if d.Frequency != nil || d.Cron != "" || d.Rrule != "" {
		bad("message", "", "fires once: it cannot be combined with a frequency, a cron expression or a recurrence rule")
	}
	if len(d.Data) > 0 {
		bad("data", "", "cannot be combined with a message: the message is what fires")
	}
	if d.Start == nil {
		bad("start", "", "is required with a message")
	}
	if !ValidTopic(m.From.Topic) {
		bad("message.from.topic", m.From.Topic, "must be the Kafka topic the schedule was read from")
	}
	if m.From.Partition < 0 {
		bad("message.from.partition", fmt.Sprint(m.From.Partition), "must be a partition number")
	}
	if m.History != "" && !ValidTopic(m.History) {
		bad("message.history", m.History, "must be a Kafka topic name")
	}
}

// EscapeName turns a record key into a task name: the bytes a name may
// not hold ("/", "%", control characters, invalid UTF-8) are written
// %XX, as in a URL, so that two keys never share a name.
func EscapeName(key []byte) string {
	var b strings.Builder
	for len(key) > 0 {
		r, n := utf8.DecodeRune(key)
		if r == utf8.RuneError && n <= 1 || r == '/' || r == '%' || r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			for _, c := range key[:max(n, 1)] {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		} else {
			b.Write(key[:n])
		}
		key = key[max(n, 1):]
	}
	return b.String()
}
