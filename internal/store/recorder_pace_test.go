package store

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/pace"
)

// TestRecorderGivesWayToLateFires: while the node's scheduler fires late,
// the records read wait to be stored, at most
// MaxWait at a time; a scheduler that turns late while records are being
// stored has the recorder wait before the next record, with nothing
// committed meanwhile.
func TestRecorderGivesWayToLateFires(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxWait time.Duration
		onTime  bool // the scheduler is on time again once the recorder waits
		// lateFrom is the look from which the scheduler fires late:
		// 1, from the start; 2, once the first record is stored.
		lateFrom int64
	}{
		{name: "stores once the scheduler is on time", maxWait: time.Hour, onTime: true, lateFrom: 1},
		{name: "late all along: stores after max wait", maxWait: 50 * time.Millisecond, lateFrom: 1},
		{name: "late from the second record: waits there", maxWait: time.Hour, onTime: true, lateFrom: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			st := openStore(t, tempDB(t))
			var late atomic.Int64
			late.Store(int64(time.Hour))
			var looks atomic.Int64
			waiting := make(chan struct{})
			rec, err := NewRecorder(st, RecorderConfig{
				ClientOpts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)},
				Topics:     testTopics,
				Late: func() time.Duration {
					n := looks.Add(1)
					if n == tc.lateFrom+1 { // asked again once late: waiting
						close(waiting)
					}
					if n < tc.lateFrom {
						return 0
					}
					return time.Duration(late.Load())
				},
				Pacing: pace.Pacing{RecorderLateness: 20 * time.Millisecond, MaxWait: tc.maxWait},
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- rec.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			produceFixture(t, c)
			if tc.onTime {
				select {
				case <-waiting:
				case <-time.After(waitLimit):
					t.Fatal("the recorder never looked how late the scheduler fires")
				}
				if got, err := st.Offsets(context.Background()); err != nil || len(got) != 0 {
					t.Fatalf("stored while the scheduler fires late: offsets %v, %v", got, err)
				}
				late.Store(0)
			}
			waitCaughtUp(t, rec, st, c)
			if looks.Load() < tc.lateFrom+1 {
				t.Errorf("the recorder looked %d times how late the scheduler fires, want it to wait", looks.Load())
			}
		})
	}
}
