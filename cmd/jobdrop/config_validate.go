package main

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/scheduler"
	"github.com/jobdrop/jobdrop/web/auth"
)

func (c Config) validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("data_dir: must not be empty"))
	}
	if c.Console.Listen == "" {
		errs = append(errs, errors.New("console.listen: must not be empty"))
	} else if len(c.Console.Users) == 0 && !loopback(c.Console.Listen) {
		errs = append(errs, fmt.Errorf("console.listen: %s is reachable from other machines and console.users is empty: add users (name, password_hash, role) or listen on 127.0.0.1", c.Console.Listen))
	}
	for i, h := range c.Console.Hosts {
		if h == "" || strings.ContainsAny(h, "/:@*[] \t") {
			errs = append(errs, fmt.Errorf("console.hosts[%d]: %q: want a host name as browsers reach the console by, without scheme or port (jobdrop.example.com)", i, h))
		}
	}
	for i, p := range c.Console.TrustedProxies {
		if _, err := parseProxy(p); err != nil {
			errs = append(errs, fmt.Errorf("console.trusted_proxies[%d]: %q: want an IP address or a CIDR range (10.0.0.0/8)", i, p))
		}
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"read_header", c.Console.Timeouts.ReadHeader}, {"read", c.Console.Timeouts.Read}, {"write", c.Console.Timeouts.Write}, {"idle", c.Console.Timeouts.Idle}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("console.timeouts.%s: %s must not be negative", d.key, d.d))
		}
	}
	for i, u := range c.Console.Users {
		if _, err := auth.ParseRole(u.Role); err != nil {
			errs = append(errs, fmt.Errorf("console.users[%d].role: %w", i, err))
		}
		if u.Name == "" || u.PasswordHash == "" {
			errs = append(errs, fmt.Errorf("console.users[%d]: name and password_hash are required", i))
		}
	}
	errs = append(errs, c.Kafka.Validate())
	errs = append(errs, c.MessageScheduler.validate())
	if txn := cmp.Or(c.Kafka.TransactionTimeout, scheduler.DefaultTransactionTimeout); c.Scheduler.FireAhead > scheduler.AheadBound(txn) {
		errs = append(errs, fmt.Errorf("scheduler.fire_ahead: %s is over a third of the scheduler's transaction timeout (%s, kafka.transaction_timeout): a transaction written ahead stays open that long", c.Scheduler.FireAhead, txn))
	}
	if c.Scheduler.MaxFiresAhead < 0 {
		errs = append(errs, fmt.Errorf("scheduler.max_fires_ahead: %d must not be negative (0 means 16384)", c.Scheduler.MaxFiresAhead))
	}
	if err := c.Scheduler.Refused.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("scheduler.refused_fires.%w", err))
	}
	if err := c.Pacing.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("pacing.%w", err))
	}
	errs = append(errs, c.Executions.validate())
	seen := map[string]bool{}
	for i, f := range c.Watch {
		if f.Dir == "" {
			errs = append(errs, fmt.Errorf("watch[%d].dir: must not be empty", i))
		}
		if seen[f.Dir] {
			errs = append(errs, fmt.Errorf("watch[%d].dir: %s is watched twice", i, f.Dir))
		}
		seen[f.Dir] = true
		if _, err := f.Defaults.Location(); err != nil {
			errs = append(errs, fmt.Errorf("watch[%d].defaults.%w", i, err))
		}
		errs = append(errs, f.validate(fmt.Sprintf("watch[%d]", i)))
		if err := f.Options.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("watch[%d].%w", i, err))
		}
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"watcher.stall_after", c.Watcher.StallAfter}, {"watcher.slow_after", c.Watcher.SlowAfter}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("%s: %s must not be negative", d.key, d.d))
		}
	}
	if !slices.Contains([]string{"", "debug", "info", "warn", "error"}, c.Log.Level) {
		errs = append(errs, fmt.Errorf("log.level: %q is not debug, info, warn or error", c.Log.Level))
	}
	if !slices.Contains([]string{"", "text", "json"}, c.Log.Format) {
		errs = append(errs, fmt.Errorf("log.format: %q is not text or json", c.Log.Format))
	}
	return errors.Join(errs...)
}
