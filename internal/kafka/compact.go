package kafka

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The embedded broker's own cleaner (kfake's) is left off, for what it
// does to a compacted topic such as the state topic:
//
//   - It compacts past the last stable offset: a committed record that
//     only a record of a transaction still open supersedes is dropped, and
//     when that transaction then aborts (the process killed during a
//     large state commit, say), the key's committed value is gone.
//   - It rewrites a partition by deleting its segment files, then writing
//     new ones: a kill in between loses every record of the partition.
//   - It runs only in a process that created or reconfigured a compacted
//     topic: restarted from its data, the broker never compacted again,
//     and the state topic, which every restore reads whole, grew forever.
//
// The Broker compacts on a schedule of its own instead. Each round runs
// while the broker handles no client request (in a control function of
// the broker, which holds its request loop), so that what it checks still
// holds when it compacts: it compacts only when no partition of a
// compacted topic holds records of an open transaction (its last stable
// offset is its end), and else tries again a second later. Before
// compacting it keeps the partitions' files as they are, as hard links in
// a backup folder that doubles as the mark of a compaction under way; the
// next start after a kill finds the mark and puts the files back.

const (
	// defaultCompactionInterval is EmbeddedConfig.CompactionInterval's
	// default.
	defaultCompactionInterval = 10 * time.Minute
	// compactionRetry is the wait after a round that found a
	// transaction open.
	compactionRetry = time.Second
	// compactionBackup, inside the broker's folder, holds the files of
	// the compacted topics' partitions as they were before the
	// compaction under way, a folder per partition; it exists only while
	// one is. The backup is made under compactionPartial and renamed
	// into place whole; once the compaction is done it is renamed to
	// compactionDone, then removed.
	compactionBackup  = "compaction-backup"
	compactionPartial = "compaction-backup.partial"
	compactionDone    = "compaction-backup.done"
)

// compaction is what one compaction round did.
type compaction struct {
	// deferred names a partition holding records of an open transaction,
	// for which nothing was compacted.
	deferred string
	// partitions counts the partitions of compacted topics compacted.
	partitions int
	// before and after are their sizes.
	before, after int64
}

// compactEvery compacts every interval until the broker closes, and a
// second later again after a round that had to wait for a transaction.
func (b *Broker) compactEvery(interval time.Duration, log *slog.Logger) {
	defer close(b.compactDone)
	wait := interval
	for {
		t := time.NewTimer(wait)
		select {
		case <-b.compactStop:
			t.Stop()
			return
		case <-t.C:
		}
		start := time.Now()
		c, err := b.compact()
		switch {
		case errors.Is(err, errBrokerClosed):
			return
		case err != nil:
			log.Error("compaction failed; the topics are as they were", "err", err, "delay_ms", interval.Milliseconds())
			wait = interval
		case c.deferred != "":
			log.Debug("compaction waits for an open transaction", "partition", c.deferred)
			wait = compactionRetry
		default:
			log.Info("topics compacted", "partitions", c.partitions, "bytes_before", c.before, "bytes_after", c.after,
				"duration_ms", time.Since(start).Milliseconds())
			wait = interval
		}
	}
}

var errBrokerClosed = errors.New("embedded broker closed")

// compactResult is what a compaction round's control function answers.
type compactResult struct {
	c   compaction
	err error
}

// compact runs one compaction round, in a control function of the broker
// that a request of the Broker's own sets off.
func (b *Broker) compact() (compaction, error) {
	select {
	case <-b.compacted: // of a round whose request failed
	default:
	}
	if !b.armed.Swap(true) { // else still armed by a round whose request failed
		b.cluster.ControlKey(int16(kmsg.ApiVersions), func(kmsg.Request) (kmsg.Response, error, bool) {
			b.cluster.DropControl()
			b.armed.Store(false)
			b.compactMu.Lock()
			defer b.compactMu.Unlock()
			r := compactResult{err: errBrokerClosed}
			if !b.closing.Load() {
				r.c, r.err = b.compactHeld()
			}
			select {
			case b.compacted <- r:
			default:
			}
			return nil, nil, false // then the request is answered as usual
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-b.compactStop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, b.client); err != nil {
		if b.closing.Load() {
			return compaction{}, errBrokerClosed
		}
		return compaction{}, fmt.Errorf("set a compaction off: %w", err)
	}
	r := <-b.compacted
	return r.c, r.err
}

// compactHeld compacts, unless a transaction is open on a compacted
// topic, keeping a backup of the files it rewrites until it is done. It
// runs while the broker handles no client request: nothing is written
// meanwhile.
func (b *Broker) compactHeld() (compaction, error) {
	var c compaction
	parts, err := b.compactedPartitions()
	if err != nil {
		return c, err
	}
	for _, p := range parts {
		info := b.cluster.PartitionInfo(p.topic, p.partition)
		if info == nil {
			continue
		}
		if info.LastStableOffset < info.HighWatermark {
			c.deferred = fmt.Sprintf("%s/%d", p.topic, p.partition)
			return c, nil
		}
		c.partitions++
		c.before += info.NumBytes
	}
	if err := backupPartitions(b.dir, parts); err != nil {
		_ = os.RemoveAll(filepath.Join(b.dir, compactionPartial))
		return c, fmt.Errorf("keep the partitions' files before compacting them: %w", err)
	}
	b.cluster.Compact()
	for _, p := range parts {
		if info := b.cluster.PartitionInfo(p.topic, p.partition); info != nil {
			c.after += info.NumBytes
		}
	}
	return c, dropBackup(b.dir)
}

// partitionDir is a partition's folder in the broker's data.
type partitionDir struct {
	topic     string
	partition int32
	name      string // its folder under partitions/
}

// compactedPartitions lists the partitions holding data of the topics
// whose cleanup.policy is compact.
func (b *Broker) compactedPartitions() ([]partitionDir, error) {
	entries, err := os.ReadDir(filepath.Join(b.dir, "partitions"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	compacted := map[string]bool{}
	var out []partitionDir
	for _, e := range entries {
		i := strings.LastIndexByte(e.Name(), '-')
		if !e.IsDir() || i < 0 {
			continue
		}
		topic, err := url.PathUnescape(e.Name()[:i])
		p, perr := strconv.ParseInt(e.Name()[i+1:], 10, 32)
		if err != nil || perr != nil {
			continue
		}
		is, ok := compacted[topic]
		if !ok {
			info := b.cluster.TopicInfo(topic)
			if info != nil {
				if v := info.Configs["cleanup.policy"]; v != nil {
					is = strings.Contains(*v, "compact")
				}
			}
			compacted[topic] = is
		}
		if is {
			out = append(out, partitionDir{topic: topic, partition: int32(p), name: e.Name()})
		}
	}
	return out, nil
}

// backupPartitions links the files of parts into a backup folder, and
// moves it into place whole: from then on a start finds the mark of a
// compaction under way.
func backupPartitions(dir string, parts []partitionDir) error {
	partial := filepath.Join(dir, compactionPartial)
	if err := os.RemoveAll(partial); err != nil {
		return err
	}
	for _, p := range parts {
		if err := linkFiles(filepath.Join(dir, "partitions", p.name), filepath.Join(partial, p.name)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(partial, 0o755); err != nil {
		return err
	}
	if err := os.Rename(partial, filepath.Join(dir, compactionBackup)); err != nil {
		return err
	}
	return syncDir(dir)
}

// dropBackup removes the backup of a compaction that is done.
func dropBackup(dir string) error {
	done := filepath.Join(dir, compactionDone)
	if err := os.Rename(filepath.Join(dir, compactionBackup), done); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return os.RemoveAll(done)
}

// undoCutCompaction puts back, before the broker loads its data, the
// partitions' files as they were before a compaction that a stop cut off,
// and clears what a cut off backup or removal left. It reports the
// partitions it put back.
func undoCutCompaction(dir string) ([]string, error) {
	for _, name := range []string{compactionPartial, compactionDone} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	backup := filepath.Join(dir, compactionBackup)
	entries, err := os.ReadDir(backup)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var restored []string
	for _, e := range entries {
		live := filepath.Join(dir, "partitions", e.Name())
		if err := removeFiles(live); err != nil {
			return restored, err
		}
		if err := linkFiles(filepath.Join(backup, e.Name()), live); err != nil {
			return restored, err
		}
		restored = append(restored, e.Name())
	}
	return restored, dropBackup(dir)
}

// linkFiles hard-links every file of from into to, which it creates.
func linkFiles(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := os.Link(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return syncDir(to)
}

// removeFiles removes the files of dir, which need not exist.
func removeFiles(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// compactionOff is the broker configuration that keeps kfake's own
// cleaner from ever running: a hundred years between rounds.
var compactionOff = map[string]string{"log.cleaner.backoff.ms": strconv.FormatInt((100 * 365 * 24 * time.Hour).Milliseconds(), 10)}
