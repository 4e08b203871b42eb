package injector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/pace"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/retry"
)

// Config configures an Injector.
type Config struct {
	// ClientOpts reach the brokers.
	ClientOpts []kgo.Opt
	// TransactionalID identifies this injector's producer. It must be stable
	// across restarts of one instance and differ between instances.
	// Required.
	TransactionalID string
	// Topics names jobdrop's topics.
	Topics record.Topics
	// Actor is who the audit trail says injected files. Defaults to
	// "watcher".
	Actor string
	// MaxErrors bounds the row errors kept for a rejected file's report.
	// Defaults to 1000.
	MaxErrors int
	// Clock is the clock of audit timestamps. Defaults to the real
	// clock. (The waits of Pacing are on the real clock.)
	Clock clockwork.Clock
	// Sources answers the files of sync folders (File.Sync), and the
	// chains of every file (the predecessors its rows name outside it),
	// with the tasks that run now. Without it files of sync folders are
	// refused, and the predecessors outside a file are not checked: they
	// may name tasks created later, or elsewhere, so the file is injected
	// with its links, and its batch's warnings name each one unchecked.
	// The predecessors within a file, and its own cycles, are checked
	// either way.
	Sources Sources
	// OnFile, if set, is told what became of every file Inject handled,
	// except those interrupted by ctx (they are handled again at the next
	// start) and those failed with ErrUnavailable (they are handled
	// again once Kafka takes them). It runs on Inject's goroutine and
	// must be quick.
	OnFile func(FileDone)
	// Pacing makes files wait while the scheduler fires late, as Late
	// says. Without Late files never wait.
	Pacing pace.Pacing
	// Late says how late the scheduler fires now
	// (scheduler.Engine.Lateness).
	Late func() time.Duration
	// OnPaced, if set, is told of every wait Pacing imposed, however
	// short. It runs on Inject's goroutine and must be quick.
	OnPaced func(time.Duration)
}

// Batches answers whether a batch id was already injected.
type Batches interface {
	BatchInjected(ctx context.Context, id string) (bool, error)
}

// Injector injects files. It is safe for concurrent use; files are injected
// one at a time, since one transactional producer serves them all.
type Injector struct {
	cfg     Config
	batches Batches
	log     *slog.Logger

	mu    sync.Mutex // owns cl: one transaction at a time
	cl    *kgo.Client
	began bool // cl has begun a transaction: it is too late to Fence
	// large says cl writes the commands in batches of up to
	// kafka.MaxBatchBytes, not smallBatchBytes (see largeBatches).
	large    bool
	injected map[string]bool // batch ids committed by this process

	// admin asks the brokers about topics and their limits, outside the
	// file's transaction.
	admin *kgo.Client
	// progress is the Progress of the file being injected, told of each
	// record the brokers acknowledge.
	progress progressHook
}

// progressHook passes the brokers' acknowledgements of the transactional
// producer's records on to the file being injected.
type progressHook struct{ fn atomic.Pointer[func()] }

var _ kgo.HookProduceRecordUnbuffered = (*progressHook)(nil)

// OnProduceRecordUnbuffered implements kgo.HookProduceRecordUnbuffered.
func (h *progressHook) OnProduceRecordUnbuffered(_ *kgo.Record, err error) {
	if fn := h.fn.Load(); fn != nil && err == nil {
		(*fn)()
	}
}

// follow makes the acknowledgements of the records from now on progress
// of f, until the returned function is called.
func (h *progressHook) follow(f File) (stop func()) {
	if f.Progress == nil {
		return func() {}
	}
	h.fn.Store(&f.Progress)
	return func() { h.fn.Store(nil) }
}

var _ Batches = (*Injector)(nil)

// New connects a transactional producer.
func New(cfg Config, batches Batches, log *slog.Logger) (*Injector, error) {
	if cfg.TransactionalID == "" {
		return nil, errors.New("injector: TransactionalID is required")
	}
	cfg.Topics = cfg.Topics.WithDefaults()
	if cfg.Actor == "" {
		cfg.Actor = "watcher"
	}
	if cfg.MaxErrors == 0 {
		cfg.MaxErrors = 1000
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if err := cfg.Pacing.Validate(); err != nil {
		return nil, fmt.Errorf("injector: Pacing.%w", err)
	}
	cfg.Pacing = cfg.Pacing.WithDefaults()
	in := &Injector{cfg: cfg, log: log.With("component", "injector"), injected: map[string]bool{}}
	cl, err := kgo.NewClient(in.producerOpts(false)...)
	if err != nil {
		return nil, fmt.Errorf("injector: %w", err)
	}
	admin, err := kgo.NewClient(cfg.ClientOpts...)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("injector: %w", err)
	}
	in.batches, in.cl, in.admin = batches, cl, admin
	return in, nil
}

// smallBatchBytes bounds the batches of commands the injector writes
// until a file holds a task too large for one (largeBatches). Batches of
// 64 KiB keep a large file's records flowing: the producer has one
// request in flight, and a request of a few small batches is written,
// compressed and answered while the next rows are encoded. Batches of
// 1 MiB, which the largest task needs, make requests of many megabytes
// the encoding waits for (a drop of 1,000,000 rows: 1.9 cores busy
// against 1.8, and 40 MiB less memory; docs/benchmarks.md).
const smallBatchBytes = 64 << 10

// smallBatchRecord is the largest command the small batches take, sized
// as RowCheck sizes its task plus the folder and actor its headers hold,
// with room for a batch's own framing.
const smallBatchRecord = smallBatchBytes - 1<<10

// producerOpts are the options of the transactional producer: its
// batches of commands are of up to smallBatchBytes, or of up to
// kafka.MaxBatchBytes when large; the other topics' are of up to
// kafka.MaxBatchBytes.
func (in *Injector) producerOpts(large bool) []kgo.Opt {
	input := in.cfg.Topics.Input
	return append(append([]kgo.Opt{
		kgo.WithHooks(&in.progress),
		// A large file may take minutes to produce.
		kgo.TransactionTimeout(txnTimeout),
		kgo.ProducerBatchMaxBytesFn(func(topic string) int32 {
			if topic == input && !large {
				return smallBatchBytes
			}
			return kafka.MaxBatchBytes
		}),
		kgo.MaxBufferedRecords(20_000),
	}, in.cfg.ClientOpts...), kafka.TxnOpts(in.cfg.TransactionalID)...)
}

// largeBatches makes the producer write commands in batches of up to
// kafka.MaxBatchBytes from now on, for a file holding a command of
// largest bytes (see smallBatchRecord) that small batches cannot take; it does
// nothing for a smaller task, or when they are large already. The
// producer is made anew with the same transactional id, between two
// transactions.
func (in *Injector) largeBatches(largest int) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.large || largest <= smallBatchRecord {
		return nil
	}
	if in.cl == nil {
		return errClosed
	}
	cl, err := kgo.NewClient(in.producerOpts(true)...)
	if err != nil {
		return err
	}
	in.cl.Close()
	in.cl, in.large = cl, true
	in.log.Info("commands now written in batches of up to 1 MiB, for a task too large for 64 KiB", "bytes", largest)
	return nil
}

// txnTimeout is how long the brokers give one of the injector's
// transactions before they abort it.
const txnTimeout = 5 * time.Minute

// fenceFor bounds how long Fence asks the brokers.
const fenceFor = 30 * time.Second

// Fence ends the transaction a previous run of this injector left open,
// killed between a file's first record and its commit: the brokers abort
// it now, not once its timeout of 5 minutes has run out. Until then a
// read_committed reader, the recorder first, reads nothing past its first
// record on any partition it wrote. A node calls Fence as it starts,
// before it waits for what was committed before it. Brokers that cannot
// be reached, or keep answering that the transaction is still ending, are
// asked again for at most 30 seconds. Once this injector has begun a
// transaction of its own, which fenced the previous run already, Fence
// does nothing.
func (in *Injector) Fence(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.began || in.cl == nil {
		return nil
	}
	id := in.cfg.TransactionalID
	// Bounded: the mutex it holds is the one files and the console's
	// releases of held files wait for; past the bound the brokers' own
	// timeout ends the transaction.
	p := retry.Policy{Backoff: retry.Backoff{First: 50 * time.Millisecond, Max: 2 * time.Second}, Elapsed: fenceFor,
		Log: in.log, Msg: "cannot fence the injector's last transaction; retrying", QuietRepeats: true}
	return retry.Do(ctx, p, func() error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = int32(txnTimeout / time.Millisecond)
		resp, err := req.RequestWith(ctx, in.admin)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		var refused *kerr.Error
		if errors.As(err, &refused) && !refused.Retriable && refused != kerr.ConcurrentTransactions {
			return retry.Permanent(fmt.Errorf("fence the transactions of %s: %w", id, err))
		}
		return err
	})
}

// Close releases the producers. It is safe to call more than once.
func (in *Injector) Close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cl != nil {
		in.cl.Close()
		in.admin.Close()
		in.cl = nil
	}
}

// BatchInjected reports whether this process committed the batch, or the
// store of earlier injections says it was.
func (in *Injector) BatchInjected(ctx context.Context, id string) (bool, error) {
	in.mu.Lock()
	done := in.injected[id]
	in.mu.Unlock()
	if done || in.batches == nil {
		return done, nil
	}
	return in.batches.BatchInjected(ctx, id)
}

// transact runs fill inside one transaction and commits it, or aborts it
// when fill or any produce fails. fill writes a few records it can write
// again (an audit event, a barrier): a commit the client turned into an
// abort is tried again on a new client, up to three times.
func (in *Injector) transact(ctx context.Context, fill func(produce func(*kgo.Record)) error) error {
	return in.transactFile(ctx, File{}, 3, fill)
}

// transactFile is transact for the records of file f, each the brokers
// acknowledge being progress of f, in as many attempts. A file's own
// transaction takes one: its fill reads the file. When the client turns
// its commit into an abort, nothing of the file was written, and it is
// tried again, as when the brokers are down, on a new client.
func (in *Injector) transactFile(ctx context.Context, f File, attempts int, fill func(produce func(*kgo.Record)) error) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cl == nil {
		return errClosed
	}
	defer in.progress.follow(f)()
	in.began = true
	return kafka.TransactRenewing(ctx, &in.cl, attempts, fill)
}
