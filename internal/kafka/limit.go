package kafka

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// MaxBatchBytes is the largest batch jobdrop's producers send, and so the
// largest record they take: franz-go refuses a larger one before sending
// it.
const MaxBatchBytes = 1 << 20

// RecordLimit is the largest record the brokers take on some topics, and
// the setting that says so, for a row error that names it.
type RecordLimit struct {
	Bytes int
	// Source names the setting: "max.message.bytes of topic
	// light-scheduler", or the producer's own limit.
	Source string
}

// DefaultRecordLimit is the limit assumed when the brokers cannot be
// asked: the producers' own.
var DefaultRecordLimit = RecordLimit{Bytes: MaxBatchBytes, Source: "the largest batch jobdrop's producers send"}

// RecordLimitOf asks the brokers for the max.message.bytes of topics (each
// topic's own, or the broker default it inherits) and returns the
// smallest, or the producers' own limit when that is smaller.
func RecordLimitOf(ctx context.Context, adm *kadm.Client, topics ...string) (RecordLimit, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return DefaultRecordLimit, fmt.Errorf("describe topic configs: %w", err)
	}
	limit := DefaultRecordLimit
	for _, t := range topics {
		rc, err := rcs.On(t, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			return DefaultRecordLimit, fmt.Errorf("topic %s: %w", t, err)
		}
		for _, c := range rc.Configs {
			if c.Key != "max.message.bytes" || c.Value == nil {
				continue
			}
			if n, err := strconv.Atoi(*c.Value); err == nil && n > 0 && n < limit.Bytes {
				limit = RecordLimit{Bytes: n, Source: "max.message.bytes of topic " + t}
			}
		}
	}
	return limit, nil
}
