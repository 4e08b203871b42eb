package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/jobdrop/jobdrop/internal/msgsched"
	"github.com/jobdrop/jobdrop/internal/store"
	"github.com/jobdrop/jobdrop/task"
)

// MessageSchedulerConfig turns on kafka-message-scheduler's protocol: the
// records of its schedule topics become one-shot tasks that fire the
// record they carry.
type MessageSchedulerConfig struct {
	// Topics are its schedule topics; empty: off.
	Topics []string `yaml:"topics"`
	// HistoryTopic gets a copy of each fired record; empty: none.
	HistoryTopic string `yaml:"history_topic"`
	// Grace is how late a schedule may arrive and still fire, at once;
	// one arriving later is dropped (tombstoned and audited).
	Grace time.Duration `yaml:"grace"`
	// Listen is where its admin REST (/info, /schedules, /liveness)
	// answers; empty: off.
	Listen string `yaml:"listen"`
}

func (c MessageSchedulerConfig) validate() error {
	var errs []error
	for i, t := range c.Topics {
		if !task.ValidTopic(t) {
			errs = append(errs, fmt.Errorf("message_scheduler.topics[%d]: %q: want a Kafka topic name", i, t))
		}
	}
	if c.HistoryTopic != "" && !task.ValidTopic(c.HistoryTopic) {
		errs = append(errs, fmt.Errorf("message_scheduler.history_topic: %q: want a Kafka topic name", c.HistoryTopic))
	}
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("message_scheduler.grace: %s must not be negative", c.Grace))
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			errs = append(errs, fmt.Errorf("message_scheduler.listen: %q: want host:port (127.0.0.1:8000)", c.Listen))
		}
	}
	if len(c.Topics) == 0 && (c.HistoryTopic != "" || c.Listen != "") {
		errs = append(errs, errors.New("message_scheduler: history_topic and listen need topics"))
	}
	return errors.Join(errs...)
}

// startMessageScheduler starts, in g, the bridge from the schedule topics
// and its admin REST, once the topics exist.
func startMessageScheduler(ctx context.Context, g *errgroup.Group, cfg Config, base []kgo.Opt, brokers []string, admin *kgo.Client,
	st *store.Store, ln net.Listener, clock clockwork.Clock, log *slog.Logger) error {
	c := cfg.MessageScheduler
	if len(c.Topics) == 0 {
		return nil
	}
	if ln != nil {
		// Closed by the server once it serves, or here if it never does.
		defer func() {
			if ln != nil {
				_ = ln.Close()
			}
		}()
	}
	log = log.With("component", "message-scheduler")
	schedules := cfg.Kafka.ScheduleTopics(admin)
	for _, t := range c.Topics {
		if err := schedules.Ensure(ctx, t); err != nil {
			return fmt.Errorf("message_scheduler.topics: %w", err)
		}
	}
	if c.HistoryTopic != "" {
		if err := cfg.Kafka.Targets(admin).Ensure(ctx, c.HistoryTopic); err != nil {
			return fmt.Errorf("message_scheduler.history_topic: %w", err)
		}
	}
	b := msgsched.New(msgsched.Config{ClientOpts: base, Topics: c.Topics, History: c.HistoryTopic, Grace: c.Grace,
		Records: cfg.Topics, Node: cfg.Node, SessionTimeout: cfg.Scheduler.SessionTimeout, Clock: clock, Log: log})
	g.Go(func() error { b.Run(ctx); return nil })
	if ln == nil {
		return nil
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 2 * time.Minute,
		Handler: msgsched.Admin(msgsched.AdminConfig{Topics: c.Topics, History: c.HistoryTopic, Brokers: brokers,
			Listen: ln.Addr().String(), Live: b.Live, Tasks: st})}
	log.Info("message scheduler admin listening", "url", "http://"+ln.Addr().String())
	serve(ctx, g, srv, ln, "message_scheduler.listen")
	ln = nil // served: closed by its server
	return nil
}

// listenMessageAdmin opens the admin REST's address; nil when it is off.
func listenMessageAdmin(c MessageSchedulerConfig) (net.Listener, error) {
	if len(c.Topics) == 0 || c.Listen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("message_scheduler.listen: %w (or JOBDROP_MESSAGE_SCHEDULER_LISTEN)", err)
	}
	return ln, nil
}

// addrURL is the base URL of what ln listens on; empty for none.
func addrURL(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return "http://" + ln.Addr().String()
}

// messageAdminRoutes are the patterns the admin REST on ln serves; none
// when it is off.
func messageAdminRoutes(ln net.Listener) []string {
	if ln == nil {
		return nil
	}
	return msgsched.AdminRoutes
}
