package injector

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/jobdrop/jobdrop/internal/pace"
)

// paceRows is how many rows a file goes between two looks at the
// scheduler: looking costs next to nothing, and a thousand rows take a few
// milliseconds to convert or produce.
const paceRows = 1_000

// A pacer makes a file give way to the scheduler when it fires late. A
// flood of files (a whole estate exported at once) would otherwise take
// the CPU, the brokers and the scheduler's own transactions, which must
// apply every command injected, from the fires due meanwhile. Before each
// file, and every paceRows rows of the check pass of a file checked
// whole (a file of a sync folder, or one whose rows follow tasks), the
// injector looks how late the scheduler fires (Config.Late);
// while it is later than Lateness, the file waits, at most MaxWait at each
// look, so that files always make headway however late the scheduler
// stays.
//
// A file never waits while its transaction is open: every read_committed
// reader of the input partitions, the scheduler first, would wait with
// it, and the brokers abort a transaction open too long. Any other file
// is converted inside its transaction (its rows are produced as they are
// converted), so it waits only before it starts.
type pacer struct {
	p      pace.Pacing
	late   func() time.Duration // nil: no pacing (nor with p.Lateness zero)
	clock  clockwork.Clock
	onWait func(time.Duration)

	rows int
}

// pacer returns the pacer of one file. Its waits are on the real clock,
// as the recorder's and the console's are: they leave the CPU to the
// fires, which a clock that only moves when told (a test's) would never
// let end.
func (in *Injector) pacer() *pacer {
	return &pacer{p: in.cfg.Pacing, late: in.cfg.Late, clock: clockwork.NewRealClock(), onWait: in.cfg.OnPaced}
}

// row counts a row of the file, and waits every paceRows rows while the
// scheduler is late.
func (p *pacer) row(ctx context.Context) {
	if p == nil {
		return
	}
	if p.rows++; p.rows >= paceRows {
		p.rows = 0
		p.wait(ctx)
	}
}

// wait waits while the scheduler is later than p.Lateness, for at most
// p.MaxWait, or until ctx is done.
func (p *pacer) wait(ctx context.Context) {
	if p == nil {
		return
	}
	if d := pace.Wait(ctx, p.clock, p.late, p.p.Lateness, p.p.MaxWait); d > 0 && p.onWait != nil {
		p.onWait(d)
	}
}
