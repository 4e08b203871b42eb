package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/arrival"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/watcher"
)

// injectFile injects one file through the watcher's path, against the
// configured brokers or the embedded broker of a running jobdrop.
func injectFile(ctx context.Context, cfg Config, path, dir string, log *slog.Logger, stdout, stderr io.Writer) error {
	if err := regularFile(path); err != nil {
		return err
	}
	folder, err := folderFor(cfg, dir, path)
	if err != nil {
		return err
	}
	conv, err := converterFor(newRegistry(), folder, path)
	if err != nil {
		return err
	}
	brokers := cfg.Kafka.Brokers
	if len(brokers) == 0 {
		brokers = []string{cfg.Kafka.Embedded.Listen}
	}
	opts, err := cfg.Kafka.Options(brokers)
	if err != nil {
		return err
	}
	if err := reachable(ctx, opts, brokers, len(cfg.Kafka.Brokers) == 0); err != nil {
		return err
	}
	// The running instance's database knows the batches injected before,
	// the tasks a file of a sync folder is compared with, and those the
	// rows of a file may follow (after). Without it, a predecessor outside
	// the file is not checked: the file's warnings name it.
	var batches injector.Batches
	var sources injector.Sources
	file := folder.file(path, "", filepath.Clean(folder.Dir))
	file.Sync = folder.sync(conv)
	if dbPath := filepath.Join(cfg.DataDir, dbFile); fileExists(dbPath) {
		st, err := store.Open(dbPath)
		if err != nil {
			return err
		}
		defer st.Close()
		batches, sources = st, wholeStore{st: st}
	} else if file.Sync != nil {
		return fmt.Errorf("%s: folder %s syncs its files, and a sync compares the file with the tasks that run, which the database of a node (%s) knows: run this beside a node (same data_dir), or drop the file into the folder",
			path, folder.Dir, filepath.Join(cfg.DataDir, dbFile))
	}
	inj, err := injector.New(injector.Config{
		ClientOpts:      opts,
		TransactionalID: "jobdrop-inject-" + cfg.Node,
		Topics:          cfg.Topics,
		Actor:           "cli",
		Sources:         sources,
	}, batches, log)
	if err != nil {
		return err
	}
	defer inj.Close()
	res, err := inj.Inject(ctx, file, conv, folder.Options)
	var held *injector.HeldError
	if errors.As(err, &held) {
		// Held as the watcher holds it: a copy waits in the folder's
		// held/ for an operator's Apply or Reject in the console.
		to, cerr := watcher.CopyHeld(folder.Dir, res.Batch.File, path, err.Error(), time.Now())
		if cerr != nil {
			return fmt.Errorf("%w; and it could not be copied into %s/: %w", err, watcher.HeldDir, cerr)
		}
		notices, err := arrival.New(arrival.Config{ClientOpts: opts, Topics: cfg.Topics})
		if err != nil {
			return err
		}
		defer notices.Close()
		done := make(chan error, 1)
		notices.Moved(ctx, "cli", res.Batch, to, func(err error) { done <- err })
		if err := <-done; err != nil {
			log.Warn("cannot record where the file went", "path", to, "err", err)
		}
		fmt.Fprintln(stderr, err)
		fmt.Fprintf(stdout, "%s: held for review, nothing injected: %s; a copy waits in %s: apply or reject it in the console\n", res.Batch.File, held.Diff.Held, to)
		return exitError(1)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError(1)
	}
	if res.Report != nil {
		fmt.Fprintln(stderr, res.Report)
	}
	for _, w := range res.Batch.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	fmt.Fprintf(stdout, "%s: %s, %d rows, %d rejected, batch %s\n", res.Batch.File, res.Outcome, res.Batch.Rows, res.Batch.Rejected, res.Batch.ID)
	if d := res.Batch.Diff; d != nil {
		fmt.Fprintf(stdout, "%s: sync: %d added, %d changed, %d removed, %d unchanged\n", res.Batch.File, d.Added, d.Changed, d.Removed, d.Unchanged)
	}
	return nil
}

// reachWithin bounds the wait for a broker to answer before a command
// gives up.
const reachWithin = 15 * time.Second

// reachable returns an error saying where jobdrop looked when no broker
// answers within reachWithin; embedded says the broker looked for is a
// running jobdrop's.
func reachable(ctx context.Context, opts []kgo.Opt, brokers []string, embedded bool) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, reachWithin)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		where := "kafka.brokers"
		if embedded {
			where = "the embedded broker of a running `jobdrop run`, at kafka.embedded.listen"
		}
		return fmt.Errorf("no Kafka broker answered at %s within %s (%s): %w", strings.Join(brokers, ","), reachWithin, where, err)
	}
	return nil
}

// regularFile refuses what the commands must not open: a named pipe would
// block until something writes to it, a folder or a device is no job list.
func regularFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
