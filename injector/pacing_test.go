package injector

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/pace"
	"github.com/jobdrop/jobdrop/internal/record"
)

// TestFileWaitsWhileTheSchedulerIsLate injects a file while the scheduler
// says it fires 5s late: the file waits, nothing of it reaches the input
// topic, and once the scheduler is on time again the file goes in.
func TestFileWaitsWhileTheSchedulerIsLate(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	topics := record.Topics{}.WithDefaults()
	if err := kafka.EnsureTopics(context.Background(), kafkatest.Client(t, brokers), topics, 3, -1); err != nil {
		t.Fatal(err)
	}
	var looks atomic.Int64
	var onTime atomic.Bool
	var waited atomic.Int64
	in, err := New(Config{
		ClientOpts: kafka.ClientOpts(brokers, "test"), TransactionalID: "test-injector", Topics: topics,
		Pacing: pace.Pacing{Lateness: 250 * time.Millisecond, MaxWait: time.Hour},
		Late: func() time.Duration {
			looks.Add(1)
			if onTime.Load() {
				return 0
			}
			return 5 * time.Second
		},
		OnPaced: func(d time.Duration) { waited.Add(int64(d)) },
	}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)

	done := make(chan error, 1)
	go func() {
		_, err := in.Inject(context.Background(), File{Path: writeFile(t, "jobs.csv", "host,name,topic\nacme,a,jobs\n")},
			converters.CSV{}, converters.Options{})
		done <- err
	}()
	kafkatest.Eventually(t, 10*time.Second, "the file to look at the scheduler again and again", func() bool { return looks.Load() >= 5 })
	select {
	case err := <-done:
		t.Fatalf("the file went on while the scheduler was late: %v", err)
	default:
	}
	if n := len(kafkatest.Drain(t, brokers, topics.Input)); n != 0 {
		t.Fatalf("%d commands injected while the scheduler was late", n)
	}
	onTime.Store(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(kafkatest.Drain(t, brokers, topics.Input)); n != 1 {
		t.Errorf("%d commands injected once the scheduler was on time, want 1", n)
	}
	if waited.Load() == 0 {
		t.Error("OnPaced was told of no wait")
	}
}

// TestPacerWaits drives a file's pacer on a fake clock.
func TestPacerWaits(t *testing.T) {
	const maxWait = 100 * time.Millisecond
	for _, tc := range []struct {
		name string
		// lateness answers the pacer's n-th look (from 0).
		lateness func(n int) time.Duration
		// waits is how many times wait is called; want the waits
		// OnPaced is told of.
		waits int
		want  []time.Duration
	}{
		{name: "on time: no wait", lateness: func(int) time.Duration { return 10 * time.Millisecond },
			waits: 2},
		{name: "late until the 4th look", lateness: func(n int) time.Duration { return time.Duration(4-min(n, 4)) * time.Second },
			waits: 1, want: []time.Duration{30 * time.Millisecond}},
		{name: "late all along: each wait bounded", lateness: func(int) time.Duration { return time.Hour },
			waits: 3, want: []time.Duration{maxWait, maxWait, maxWait}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := clockwork.NewFakeClock()
			var mu sync.Mutex
			var got []time.Duration
			looks := 0
			p := &pacer{
				p: pace.Pacing{Lateness: 250 * time.Millisecond, MaxWait: maxWait}, clock: clock,
				late: func() time.Duration {
					mu.Lock()
					defer mu.Unlock()
					looks++
					return tc.lateness(looks - 1)
				},
				onWait: func(d time.Duration) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, d)
				},
			}
			for range tc.waits {
				// The pacer either returns or waits on the fake clock,
				// which moves when it waits and only then.
				done := make(chan struct{})
				returned := ctxDone(done)
				go func() { p.wait(context.Background()); close(done) }()
				for clock.BlockUntilContext(returned, 1) == nil {
					clock.Advance(pace.Poll)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("waits %v, want %v", got, tc.want)
			}
		})
	}
}

// ctxDone is a context done when done is closed.
func ctxDone(done <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-done; cancel() }()
	return ctx
}

// TestPacingIsValidated names the field a bad value is in.
func TestPacingIsValidated(t *testing.T) {
	for _, tc := range []struct {
		p    pace.Pacing
		want string
	}{
		{pace.Pacing{Lateness: -time.Second}, "lateness: -1s is negative"},
		{pace.Pacing{MaxWait: -time.Second}, "max_wait: -1s is negative"},
	} {
		_, err := New(Config{TransactionalID: "x", Pacing: tc.p, ClientOpts: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}}, nil,
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.p, err, tc.want)
		}
	}
}

// TestLargeFileWaitsOnlyOutsideItsTransaction injects a large file while
// the scheduler stays late: the file waits before it starts, never while
// its transaction is open (its rows are produced as they are converted),
// and goes in whole.
func TestLargeFileWaitsOnlyOutsideItsTransaction(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	topics := record.Topics{}.WithDefaults()
	if err := kafka.EnsureTopics(context.Background(), kafkatest.Client(t, brokers), topics, 3, -1); err != nil {
		t.Fatal(err)
	}
	var waits atomic.Int64
	in, err := New(Config{
		ClientOpts: kafka.ClientOpts(brokers, "test"), TransactionalID: "test-injector", Topics: topics,
		Pacing:  pace.Pacing{Lateness: 250 * time.Millisecond, MaxWait: 5 * time.Millisecond},
		Late:    func() time.Duration { return time.Hour },
		OnPaced: func(time.Duration) { waits.Add(1) },
	}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	const rows = bufferRows + 5_000
	var b strings.Builder
	b.WriteString("host,name,topic\n")
	for i := range rows {
		fmt.Fprintf(&b, "acme,job-%06d,jobs\n", i)
	}
	res, err := in.Inject(context.Background(), File{Path: writeFile(t, "big.csv", b.String())}, converters.CSV{}, converters.Options{})
	if err != nil || res.Batch.Rows != rows {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := waits.Load(); got != 1 {
		t.Errorf("%d waits, want 1: before the file, none while its transaction is open", got)
	}
	if n := len(kafkatest.Drain(t, brokers, topics.Input)); n != rows {
		t.Errorf("%d commands, want %d", n, rows)
	}
}
