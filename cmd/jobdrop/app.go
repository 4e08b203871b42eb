package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/arrival"
	// Aliased: the package's tests hold a var named command.
	commandwriter "github.com/jobdrop/jobdrop/internal/command"
	"github.com/jobdrop/jobdrop/internal/intake"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/metrics"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/scheduler"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/watcher"
	"github.com/jobdrop/jobdrop/web"
	"github.com/jobdrop/jobdrop/web/auth"
)

// hooks let tests drive a run: its clock, and where it listens.
type hooks struct {
	// clock is the clock of every part but the watcher (see run): fire
	// times, timestamps, deadlines; nil is the real clock.
	clock clockwork.Clock
	// started receives the addresses once everything listens.
	started func(started)
}

type started struct {
	brokers []string
	console string // base URL
	// routes are the patterns the console serves (web.Server.Routes).
	routes []string
	// messageAdmin is the base URL of kafka-message-scheduler's admin
	// REST, when on, and messageRoutes the patterns it serves.
	messageAdmin  string
	messageRoutes []string
}

// dbFile is the SQLite file inside the data dir.
const dbFile = "jobdrop.db"

// run runs jobdrop until ctx is done, marking the run in the data dir
// while it is on, so that the next start can tell it did not stop
// cleanly.
func run(ctx context.Context, cfg Config, log *slog.Logger, h hooks) error {
	if h.clock == nil {
		h.clock = clockwork.NewRealClock()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if err := waitWritable(ctx, cfg.DataDir, log); err != nil {
		return nil // shut down while waiting
	}
	unclean, err := markRunning(cfg.DataDir, h.clock.Now())
	if err != nil {
		log.Error("cannot mark the run in the data dir: should it not stop cleanly, the next start cannot say so", "err", err)
	}
	err = runNode(ctx, cfg, log, h, unclean)
	// Not reached when the run panics: that is no clean stop either.
	if merr := markStopped(cfg.DataDir); merr != nil {
		log.Error("cannot remove the run's mark from the data dir: the next start will take this stop for an unclean one", "err", merr)
	}
	return err
}

// runNode wires every part of jobdrop and runs them until ctx is done.
// unclean lists the starts of the runs before that did not stop cleanly,
// for the audit trail.
func runNode(ctx context.Context, cfg Config, log *slog.Logger, h hooks, unclean []int64) error {
	brokers := cfg.Kafka.Brokers
	if len(brokers) == 0 {
		b, err := kafka.StartEmbedded(filepath.Join(cfg.DataDir, "kafka"), cfg.Kafka.Embedded, log.With("component", "broker"))
		if err != nil {
			return fmt.Errorf("%w (kafka.embedded.listen, or JOBDROP_KAFKA_EMBEDDED_LISTEN, says where it listens)", err)
		}
		defer b.Close()
		brokers = b.Addrs()
		log.Info("embedded broker started", "listen", brokers[0], "data", filepath.Join(cfg.DataDir, "kafka"))
	}
	base, err := cfg.Kafka.Options(brokers)
	if err != nil {
		return err
	}
	met := metrics.New()
	// Every Kafka client of the process reports to the metrics.
	base = append(base, kgo.WithHooks(met.KafkaClients()))
	admin, err := kgo.NewClient(base...)
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := ensureTopics(ctx, cfg, brokers, log.With("component", "broker")); err != nil {
		return err
	}
	codec, schemas, err := openSchemaRegistry(ctx, cfg, base, log)
	if err != nil {
		return err
	}
	if schemas != nil {
		defer schemas.Close()
	}

	st, err := store.Open(filepath.Join(cfg.DataDir, dbFile))
	if err != nil {
		return err
	}
	defer st.Close()
	eng, err := scheduler.New(scheduler.Config{
		ClientOpts:     base,
		Topics:         cfg.Topics,
		Node:           cfg.Node,
		Group:          cfg.Scheduler.Group,
		SessionTimeout: cfg.Scheduler.SessionTimeout,
		MaxFiresPerTxn: cfg.Scheduler.MaxFiresPerTxn,
		FireAhead:      cfg.Scheduler.FireAhead,
		MaxFiresAhead:  cfg.Scheduler.MaxFiresAhead,
		// kafka.transaction_timeout, when set, is also in base.
		TransactionTimeout: cfg.Kafka.TransactionTimeout,
		DataDir:            filepath.Join(cfg.DataDir, "scheduler"),
		Targets:            cfg.Kafka.Targets(admin),
		Clock:              h.clock,
		OnCommit:           countFires(met, h.clock),
		Refused:            cfg.Scheduler.Refused,
		OnRefused:          met.FireRefused,
		Avro:               codec,
		ScheduleTopics:     cfg.MessageScheduler.Topics,
	}, log)
	if err != nil {
		return err
	}
	// Work that gives way to the fires waits out a whole burst written
	// ahead (see pace.Pacing.Ahead).
	cfg.Pacing.Ahead = eng.Ahead()
	rec, err := store.NewRecorder(st, store.RecorderConfig{ClientOpts: base, Topics: cfg.Topics, Observe: countRecorded(met),
		MaxLogBytes: cfg.Executions.LogMaxBytes,
		// The console's database gives way to the fires too.
		Late: eng.Pressure, Pacing: cfg.Pacing}, log)
	if err != nil {
		return err
	}
	met.ObserveSchedulerLateness(eng.Lateness)
	inj, err := injector.New(injector.Config{
		ClientOpts:      base,
		TransactionalID: "jobdrop-injector-" + cfg.Node,
		Topics:          cfg.Topics,
		Clock:           h.clock,
		OnFile:          countFile(met),
		Sources:         wholeStore{st, rec},
		// Files give way to the fires of this node's scheduler.
		Pacing:  cfg.Pacing,
		Late:    eng.Urgency,
		OnPaced: met.Paced,
	}, wholeStore{st, rec}, log)
	if err != nil {
		return err
	}
	defer inj.Close()
	// The console's, the API's and the sweeper's writes go through a
	// producer of their own, so they never wait behind a file. Its id
	// starts with "jobdrop-inject", which the prefixed ACL the
	// operations guide asks for covers, and no node name can make the
	// injector's id (jobdrop-injector-NODE) or jobdrop inject's
	// (jobdrop-inject-NODE) equal to it.
	cmds, err := commandwriter.New(commandwriter.Config{
		ClientOpts:      base,
		TransactionalID: "jobdrop-injector.commands-" + cfg.Node,
		Topics:          cfg.Topics,
		Clock:           h.clock,
	})
	if err != nil {
		return err
	}
	defer cmds.Close()
	notices, err := arrival.New(arrival.Config{ClientOpts: base, Topics: cfg.Topics, Clock: h.clock})
	if err != nil {
		return err
	}
	defer notices.Close()
	met.ObserveActiveTasks(eng.ActiveTasks)
	met.ObservePausedByFaultPolicy(eng.PausedByFaultPolicy)
	var folders []watcher.Folder
	for _, f := range cfg.Watch {
		folders = append(folders, watcher.Folder{
			Dir: f.Dir, Poll: f.Poll, PollInterval: f.PollInterval, MinAge: f.MinAge, DoneMarker: f.DoneMarker,
		})
	}
	pipe, err := intake.New(intake.Config{Injector: inj, Notices: notices, Folder: intakeFolder(cfg.Watch, newRegistry()),
		Node: cfg.Node, Refused: countRefused(met)}, log)
	if err != nil {
		return err
	}
	// The watcher waits for files on the real clock, even where a test's
	// fake h.clock drives the fires: a test drops a file and waits for it.
	// What judges the folders and settles held files reads that clock too,
	// as their times are compared with the watcher's.
	files := clockwork.NewRealClock()
	wat, err := watcher.New(watcher.Config{
		Folders:       folders,
		StableChecks:  cfg.Watcher.StableChecks,
		CheckInterval: cfg.Watcher.CheckInterval,
		Rescan:        cfg.Watcher.Rescan,
		Clock:         files,
	}, pipe, log)
	if err != nil {
		return err
	}
	watched := newFolderWatch(cfg.Watcher, wat.Status, files)
	met.ObserveFolders(watched.gauges)
	met.ObserveHeldFiles(func() int {
		held, _ := st.HeldBatches(context.Background())
		return len(held)
	})
	ready := newReadiness(cfg, admin, eng, rec, watched)
	sweeper, err := newSweeper(cfg, st, rec, cmds, ready, h.clock, log)
	if err != nil {
		return err
	}
	wc := consoleConfig(cfg, inj, cmds, rec, h.clock)
	// The dashboard's computations give way to the fires, as the
	// recorder does.
	wc.Late, wc.Pacing = eng.Pressure, cfg.Pacing
	wc.Metrics, wc.Ready, wc.Notice = met.Handler(), ready.checks, consoleNotice(rec, st, watched)
	wc.Reviewer = pipe.Reviewer(st.BatchByID, files)
	wc.Queues = watched.queues
	wc.Uploader = pipe
	if schemas != nil {
		wc.SchemaRegistry = schemas.Routes()
	}
	console, err := web.New(wc, st, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Console.Listen)
	if err != nil {
		return fmt.Errorf("console: %w (console.listen, or JOBDROP_CONSOLE_LISTEN, says where it listens)", err)
	}
	// Its timeouts; Shutdown ends open pages' live-update streams, which
	// last until told to end.
	srv := console.HTTPServer()
	url := "http://" + ln.Addr().String()
	log.Info("console listening", "url", url)
	msLn, err := listenMessageAdmin(cfg.MessageScheduler)
	if err != nil {
		_ = ln.Close()
		return err
	}
	if h.started != nil {
		h.started(started{brokers: brokers, console: url, routes: console.Routes(), messageAdmin: addrURL(msLn),
			messageRoutes: messageAdminRoutes(msLn)})
	}

	g, ctx := errgroup.WithContext(ctx)
	if err := startMessageScheduler(ctx, g, cfg, base, brokers, admin, st, msLn, h.clock, log); err != nil {
		_ = ln.Close()
		return err
	}
	g.Go(func() error { return rec.Run(ctx) })
	g.Go(func() error { return sweeper.Run(ctx) })
	g.Go(func() error { return eng.Run(ctx) })
	// The dashboard's timeline of the next 24 hours and its charts of the
	// last hours, computed in the background.
	g.Go(func() error { return console.Run(ctx) })
	serve(ctx, g, srv, ln, "console")
	g.Go(func() error {
		if err := auditUnclean(ctx, cmds, cfg.DataDir, cfg.Node, unclean, h.clock.Now()); err != nil && ctx.Err() == nil {
			log.Error("unclean stop not audited; the next start tries again", "err", err)
		}
		// A file this node was killed in the middle of left its
		// transaction open, and the recorder could read nothing past it
		// until the brokers' timeout.
		if err := inj.Fence(ctx); err != nil && ctx.Err() == nil {
			log.Error("the injector's last transaction not fenced; the brokers abort it at its timeout", "err", err)
		}
		// Files are deduplicated against the batches recorded so far: first
		// let the recorder catch up with everything committed before us.
		if err := startedAudit(ctx, cmds, rec, cfg.Node, h.clock.Now()); err != nil {
			return err
		}
		if err := auditConfig(ctx, cmds, cfg, h.clock.Now()); err != nil && ctx.Err() == nil {
			log.Error("configuration change not audited", "err", err)
		}
		ready.caughtUp.Store(true)
		return wat.Run(ctx)
	})
	err = g.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	if err == nil {
		log.Info("jobdrop stopped")
	}
	return err
}

// serve runs srv on ln in g until ctx is done, then shuts it down, giving
// open requests 5s; what names it in errors.
func serve(ctx context.Context, g *errgroup.Group, srv *http.Server, ln net.Listener, what string) {
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shut)
	})
}

// ensureTopics checks the connection and jobdrop's topics, creating them
// when allowed, saying clearly when Kafka cannot be reached: a refused
// login or certificate is said at once, silence after 30s.
func ensureTopics(ctx context.Context, cfg Config, brokers []string, log *slog.Logger) error {
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := kafka.Prepare(tctx, cfg.Kafka, brokers, cfg.Topics, log)
	var refused *kafka.ConnError
	if err != nil && tctx.Err() != nil && ctx.Err() == nil && !errors.As(err, &refused) {
		return fmt.Errorf("kafka at %v did not answer within 30s: %w", brokers, err)
	}
	return err
}

// startedAudit records this node's start in the audit trail and waits until
// the recorder has stored it, which means everything committed before is
// stored too.
func startedAudit(ctx context.Context, w auditor, rec *store.Recorder, node string, now time.Time) error {
	a := nodeEvent(node, record.ActionNodeStarted, "", now)
	if err := w.Audit(ctx, a); err != nil {
		return fmt.Errorf("audit start: %w", err)
	}
	return rec.WaitAudit(ctx, a.ID)
}

// consoleConfig wires the console: writes through cmds, dry runs of
// sync files through the injector, live updates from the recorder,
// uploads into the first watched folder.
func consoleConfig(cfg Config, inj *injector.Injector, cmds *commandwriter.Writer, rec *store.Recorder, clock clockwork.Clock) web.Config {
	wc := web.Config{
		Topics:        cfg.Topics,
		Commander:     cmds,
		Anonymous:     len(cfg.Console.Users) == 0,
		SecureCookies: cfg.Console.SecureCookies,
		Changes:       rec.Applied,
		Clock:         clock,
	}
	wc.Hosts, wc.TrustedProxies = cfg.Console.hostNames(), cfg.Console.proxies()
	wc.Timeouts = web.Timeouts(cfg.Console.Timeouts)
	wc.NameProblem = watcher.NameProblem
	for _, u := range cfg.Console.Users {
		role, _ := auth.ParseRole(u.Role) // validated with the config
		wc.Users = append(wc.Users, auth.User{Name: u.Name, PasswordHash: u.PasswordHash, Role: role})
	}
	for _, f := range cfg.Watch {
		wc.Folders = append(wc.Folders, f.Dir)
	}
	if len(cfg.Watch) > 0 {
		folder := cfg.Watch[0]
		wc.UploadDir = folder.Dir
		reg := newRegistry()
		wc.Preview = func(ctx context.Context, name, path string, emit func(int, task.Definition, error) error) error {
			conv, err := converterFor(reg, folder, name)
			if err != nil {
				return err
			}
			check := injector.NewRowCheck(name, cfg.Topics)
			chains := injector.NewChainCheck(name)
			err = conv.Convert(ctx, path, folder.Options, func(r converters.Row) error {
				if r.Err == nil {
					r.Err = check.Check(r)
				}
				chains.Row(&r, r.Err == nil)
				return emit(r.Line, r.Def, r.Err)
			})
			if err != nil {
				return err
			}
			// The chains are known once every row is: their problems are
			// the file's. Those with the running tasks are the Differ's.
			probs, err := chains.Check(ctx, nil, false)
			if lines := probs.Lines(); err == nil && len(lines) > 0 {
				err = errors.New(strings.Join(lines, "\n"))
			}
			return err
		}
		wc.Differ = func(ctx context.Context, dir, name, path string) (record.Diff, []string, error) {
			into := folder
			if dir != "" {
				var err error
				if into, err = folderFor(cfg, dir, path); err != nil {
					return record.Diff{}, nil, err
				}
			}
			conv, err := converterFor(reg, into, name)
			if err != nil {
				return record.Diff{}, nil, err
			}
			file := into.file(path, name, filepath.Clean(into.Dir))
			file.Sync = into.sync(conv)
			return inj.Diff(ctx, file, conv, into.Options)
		}
	}
	return wc
}
