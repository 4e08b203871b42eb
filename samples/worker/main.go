package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fired is an event jobdrop writes to a task's target topic.
type fired struct {
	Host        string            `json:"host"`
	Name        string            `json:"name"`
	Data        map[string]string `json:"data"`
	ScheduledAt int64             `json:"scheduledAt"`
	FiredAt     int64             `json:"firedAt"`
	FireID      string            `json:"fireId"`
	Triggered   bool              `json:"triggered"`
}

// status is a report on an execution: the value of a record on the status
// topic, keyed by fire id.
type status struct {
	FireID  string `json:"fireId"`
	Status  string `json:"status"` // RUNNING, SUCCESS or FAILED
	Message string `json:"message,omitempty"`
	Worker  string `json:"worker,omitempty"`
	At      int64  `json:"at"` // epoch milliseconds
}

type config struct {
	brokers     []string
	topic       string
	group       string
	statusTopic string
	report      string // kafka or http
	console     string
	user        string
	password    string
	name        string
	run         bool
	timeout     time.Duration
	fromStart   bool
}

func main() {
	var cfg config
	var brokers, passwordFile string
	flag.StringVar(&brokers, "brokers", "127.0.0.1:9092", "Kafka brokers, comma separated")
	flag.StringVar(&cfg.topic, "topic", "", "target topic to consume (required)")
	flag.StringVar(&cfg.group, "group", "jobdrop-worker", "consumer group: workers of one group share the events")
	flag.StringVar(&cfg.statusTopic, "status-topic", "light-scheduler-status", "jobdrop's status topic (-report kafka)")
	flag.StringVar(&cfg.report, "report", "kafka", "how to report: kafka (the status topic) or http (the console's API)")
	flag.StringVar(&cfg.console, "console", "http://127.0.0.1:8080", "the console's address (-report http)")
	flag.StringVar(&cfg.user, "user", "", "console user with the operator role (-report http)")
	flag.StringVar(&passwordFile, "password-file", "", "file holding that user's password (-report http)")
	flag.StringVar(&cfg.name, "name", "", "this worker's name in reports (default: host name)")
	flag.BoolVar(&cfg.run, "run", false, "run each event's data.command with sh -c (default: only log it)")
	flag.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "how long a command may run")
	from := flag.String("from", "end", "where a new group starts: end (only what fires from now on) or start (everything the topic holds)")
	flag.Parse()
	cfg.fromStart = *from == "start"
	if *from != "start" && *from != "end" {
		fmt.Fprintf(os.Stderr, "worker: -from %q: want start or end\n", *from)
		os.Exit(2)
	}
	cfg.brokers = strings.Split(brokers, ",")
	if cfg.name == "" {
		cfg.name, _ = os.Hostname()
	}
	if passwordFile != "" {
		b, err := os.ReadFile(passwordFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(2)
		}
		cfg.password = strings.TrimRight(string(b), "\r\n")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := work(ctx, cfg, log); err != nil {
		log.Error("worker stopped", "err", err)
		os.Exit(1)
	}
}

// work consumes the target topic until ctx is done.
func work(ctx context.Context, cfg config, log *slog.Logger) error {
	if cfg.topic == "" {
		return errors.New("-topic is required")
	}
	if cfg.report != "kafka" && cfg.report != "http" {
		return fmt.Errorf("-report %q: want kafka or http", cfg.report)
	}
	reset := kgo.NewOffset().AtEnd()
	if cfg.fromStart {
		reset = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(cfg.brokers...),
		// A new group must not run a topic's whole history by default.
		kgo.ConsumeResetOffset(reset),
		kgo.ConsumerGroup(cfg.group),
		kgo.ConsumeTopics(cfg.topic),
		// jobdrop fires in transactions: read only what was committed.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DisableAutoCommit(),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	rep := reporter{cfg: cfg, cl: cl, http: &http.Client{Timeout: 10 * time.Second}}
	done := newRecent(10_000)
	log.Info("worker started", "topic", cfg.topic, "group", cfg.group, "report", cfg.report, "run", cfg.run)
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if fs.IsClientClosed() {
			return errors.New("kafka client closed")
		}
		fs.EachError(func(t string, p int32, err error) {
			log.Warn("fetch failed", "topic", t, "partition", p, "err", err)
		})
		for _, rec := range fs.Records() {
			var ev fired
			if err := json.Unmarshal(rec.Value, &ev); err != nil || ev.FireID == "" {
				log.Warn("not a jobdrop event; skipped", "partition", rec.Partition, "offset", rec.Offset, "err", err)
				continue
			}
			if done.has(ev.FireID) {
				log.Info("already run; skipped", "fire_id", ev.FireID)
				continue
			}
			execute(ctx, cfg, log, rep, ev)
			done.add(ev.FireID)
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
			log.Warn("commit offsets", "err", err)
		}
	}
}

// execute runs one event and reports it.
func execute(ctx context.Context, cfg config, log *slog.Logger, rep reporter, ev fired) {
	log = log.With("task", ev.Host+"/"+ev.Name, "fire_id", ev.FireID,
		"scheduled_at", time.UnixMilli(ev.ScheduledAt).UTC().Format(time.RFC3339))
	command := ev.Data["command"]
	if !cfg.run || command == "" {
		log.Info("fired", "command", command)
		rep.send(ctx, log, ev.FireID, "SUCCESS", "received; not run")
		return
	}
	rep.send(ctx, log, ev.FireID, "RUNNING", "")
	runCtx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "sh", "-c", command)
	out, err := cmd.CombinedOutput()
	msg := lastLine(out)
	if err != nil {
		log.Warn("command failed", "command", command, "err", err, "output", msg)
		rep.send(ctx, log, ev.FireID, "FAILED", strings.TrimSpace(err.Error()+": "+msg))
		return
	}
	log.Info("command succeeded", "command", command, "output", msg)
	rep.send(ctx, log, ev.FireID, "SUCCESS", msg)
}

// reporter sends status reports the way the configuration says.
type reporter struct {
	cfg  config
	cl   *kgo.Client
	http *http.Client
}

func (r reporter) send(ctx context.Context, log *slog.Logger, fireID, st, msg string) {
	var err error
	if r.cfg.report == "kafka" {
		v, _ := json.Marshal(status{FireID: fireID, Status: st, Message: msg, Worker: r.cfg.name, At: time.Now().UnixMilli()})
		err = r.cl.ProduceSync(ctx, &kgo.Record{Topic: r.cfg.statusTopic, Key: []byte(fireID), Value: v}).FirstErr()
	} else {
		err = r.post(ctx, fireID, st, msg)
	}
	if err != nil {
		log.Warn("status not reported", "status", st, "err", err)
	}
}

// post reports over the console's API. The console knows an execution a
// moment after it fired; until then it answers 404, so post tries again
// for a while.
func (r reporter) post(ctx context.Context, fireID, st, msg string) error {
	body, _ := json.Marshal(map[string]string{"status": st, "message": msg, "worker": r.cfg.name})
	u := strings.TrimRight(r.cfg.console, "/") + "/api/executions/" + url.PathEscape(fireID) + "/status"
	for wait := 100 * time.Millisecond; ; wait *= 2 {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if r.cfg.user != "" {
			req.SetBasicAuth(r.cfg.user, r.cfg.password)
		}
		resp, err := r.http.Do(req)
		if err != nil {
			return err
		}
		var answer struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			return nil
		case resp.StatusCode != http.StatusNotFound || wait > 5*time.Second:
			return fmt.Errorf("POST %s: %s %s", u, resp.Status, answer.Error)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// lastLine is the last non-empty line of a command's output, at most 500
// bytes: enough for the console to say why.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	s := strings.TrimSpace(lines[len(lines)-1])
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}

// recent remembers the last n fire ids run.
type recent struct {
	n    int
	seen map[string]bool
	ring []string
}

func newRecent(n int) *recent { return &recent{n: n, seen: map[string]bool{}} }

func (r *recent) has(id string) bool { return r.seen[id] }

func (r *recent) add(id string) {
	if len(r.ring) == r.n {
		delete(r.seen, r.ring[0])
		r.ring = r.ring[1:]
	}
	r.ring = append(r.ring, id)
	r.seen[id] = true
}
