package main

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/pace"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/scheduler"
	"github.com/jobdrop/jobdrop/internal/suggestion"
	"github.com/jobdrop/jobdrop/web/auth"
)

// Config is the whole configuration file; samples/jobdrop.yaml documents
// every key.
type Config struct {
	// DataDir holds the SQLite file and the embedded broker's data.
	DataDir   string          `yaml:"data_dir"`
	Node      string          `yaml:"node"`
	Kafka     kafka.Config    `yaml:"kafka"`
	Topics    record.Topics   `yaml:"topics"`
	Console   ConsoleConfig   `yaml:"console"`
	Watch     []Folder        `yaml:"watch"`
	Watcher   WatcherConfig   `yaml:"watcher"`
	Scheduler SchedulerConfig `yaml:"scheduler"`
	Pacing    pace.Pacing     `yaml:"pacing"`
	Log       LogConfig       `yaml:"log"`
	// MessageScheduler reads kafka-message-scheduler's schedule topics.
	MessageScheduler MessageSchedulerConfig `yaml:"message_scheduler"`
	// Executions says how long executions may stay unfinished and how
	// much of their logs is kept.
	Executions ExecutionsConfig `yaml:"executions"`
}

// ConsoleConfig configures the web console.
type ConsoleConfig struct {
	Listen string `yaml:"listen"`
	// Users are the local accounts of the console and the API. None: a
	// console on a loopback address is open to everyone as admin "local";
	// on any other address jobdrop refuses to start.
	Users []ConsoleUser `yaml:"users"`
	// SecureCookies marks the session cookie Secure: set it when the
	// console is reached over HTTPS (through a TLS proxy).
	SecureCookies bool `yaml:"secure_cookies"`
	// Hosts are the names the console answers to, as browsers send them
	// in the Host header, besides localhost and IP addresses. Empty: the
	// name of the listen address, or this machine's host name when it
	// listens on all addresses.
	Hosts []string `yaml:"hosts"`
	// TrustedProxies are the addresses (or CIDR ranges) of reverse proxies
	// in front of the console, whose X-Forwarded-For names the client.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// Timeouts bound slow clients; zero: the defaults.
	Timeouts ConsoleTimeouts `yaml:"timeouts"`
}

// ConsoleTimeouts bound how long one client may hold a connection.
type ConsoleTimeouts struct {
	// ReadHeader bounds a request's line and headers. 0: 10s.
	ReadHeader time.Duration `yaml:"read_header"`
	// Read bounds a whole request, body (an upload) included. 0: 2m.
	Read time.Duration `yaml:"read"`
	// Write bounds an answer; streams get it for each write. 0: 2m.
	Write time.Duration `yaml:"write"`
	// Idle bounds the wait for the next request on a connection. 0: 1m.
	Idle time.Duration `yaml:"idle"`
}

// hostNames are the names the console answers to: console.hosts, or the
// listen address's name, or this machine's name when it listens on all
// addresses. IP addresses need no name.
func (c ConsoleConfig) hostNames() []string {
	if len(c.Hosts) > 0 {
		return c.Hosts
	}
	host, _, _ := net.SplitHostPort(c.Listen)
	ip := net.ParseIP(host)
	switch {
	case host != "" && ip == nil:
		return []string{host} // a name
	case host != "" && !ip.IsUnspecified():
		return nil // one address
	}
	if name, err := os.Hostname(); err == nil {
		return []string{name}
	}
	return nil
}

// proxies reads console.trusted_proxies, validated with the config.
func (c ConsoleConfig) proxies() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range c.TrustedProxies {
		if prefix, err := parseProxy(p); err == nil {
			out = append(out, prefix)
		}
	}
	return out
}

// parseProxy reads an address or a CIDR range.
func parseProxy(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ConsoleUser is one local account.
type ConsoleUser struct {
	Name string `yaml:"name"`
	// PasswordHash is a bcrypt hash, from `jobdrop hash-password` or
	// htpasswd -bnBC 10 "" PASSWORD | tr -d ':\n'.
	PasswordHash string `yaml:"password_hash"`
	// Role is viewer, operator or admin.
	Role string `yaml:"role"`
}

// loopback reports whether a listen address only takes local
// connections.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Folder is one watched folder.
type Folder struct {
	Dir string `yaml:"dir"`
	// Converter forces one converter for every file; empty picks one by
	// file name.
	Converter string `yaml:"converter"`
	// Patterns pick the converter by file name, tried in order before the
	// converters' own patterns.
	Patterns []Pattern `yaml:"patterns"`
	// Policy is what becomes of a file with invalid rows: "reject" (the
	// default) or "good-rows".
	Policy injector.Policy `yaml:"policy"`
	// MaxFileBytes rejects larger files unread. 0: 1 GiB; -1: no limit.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// Poll scans the folder every PollInterval instead of waiting for
	// file system events, which network shares never send.
	Poll         bool          `yaml:"poll"`
	PollInterval time.Duration `yaml:"poll_interval"`
	// MinAge holds a file back until its modification time is this old.
	MinAge time.Duration `yaml:"min_age"`
	// DoneMarker takes NAME only once NAME.done exists; the marker is
	// removed after the file is handled.
	DoneMarker bool `yaml:"done_marker"`
	// Sync makes each file the whole truth of its source (SyncScope):
	// rows new or changed since the last version are inserted or
	// updated, the tasks it no longer holds deleted. Unset: on for files
	// the crontab converter reads, off for the others.
	Sync *bool `yaml:"sync"`
	// SyncScope is what a file replaces: "file" (the default), the tasks
	// earlier files of the same name in this folder created; or "host",
	// the tasks any file of this folder created for the hosts it names.
	SyncScope string `yaml:"sync_scope"`
	// SyncMaxRemove is the largest share, in percent, of its source's
	// tasks a version may delete; one that would delete more, or all of
	// them, is held for an operator's Apply or Reject. Defaults to 50.
	SyncMaxRemove      *int `yaml:"sync_max_remove"`
	converters.Options `yaml:",inline"`
}

// sync is the sync policy of a file of the folder read by conv; nil when
// the folder does not sync it.
func (f Folder) sync(conv converters.Converter) *injector.Sync {
	_, crontab := conv.(converters.Crontab)
	if f.Sync == nil && !crontab || f.Sync != nil && !*f.Sync {
		return nil
	}
	share := 50
	if f.SyncMaxRemove != nil {
		share = *f.SyncMaxRemove
	}
	return &injector.Sync{ByHost: f.SyncScope == "host", MaxRemove: float64(share) / 100}
}

// Pattern maps file names to a converter.
type Pattern struct {
	// Pattern is matched against the file's base name, ignoring case, with
	// path.Match syntax: "*.txt", "export-??.dat".
	Pattern string `yaml:"pattern"`
	// Converter is the registered name of the converter ("csv", …).
	Converter string `yaml:"converter"`
}

// WatcherConfig tunes how files are detected.
type WatcherConfig struct {
	StableChecks  int           `yaml:"stable_checks"`
	CheckInterval time.Duration `yaml:"check_interval"`
	Rescan        time.Duration `yaml:"rescan"`
	// StallAfter is how long a folder may make no headway with a file
	// (no row read, no record acknowledged) for a reason outside it (the
	// brokers unreachable or refusing writes, a full disk) before the
	// node reports the folder stalled: /readyz fails naming it, and the
	// console and the metrics say so. Defaults to 1m.
	StallAfter time.Duration `yaml:"stall_after"`
	// SlowAfter is how long a file may stay in .processing/ before the
	// console and the metrics point at it, even while it makes progress
	// (a very large file). Defaults to 10m.
	SlowAfter time.Duration `yaml:"slow_after"`
}

// SchedulerConfig tunes the engine.
type SchedulerConfig struct {
	// Group is the consumer group the instances share.
	Group string `yaml:"group"`
	// SessionTimeout is how long the group waits for a silent instance
	// before its partitions move to the others.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// MaxFiresPerTxn caps the fires committed in one transaction.
	MaxFiresPerTxn int `yaml:"max_fires_per_txn"`
	// Refused is what becomes of an occurrence whose fired event the
	// brokers refuse for a reason of the task's own.
	Refused scheduler.FaultPolicy `yaml:"refused_fires"`
}

// LogConfig configures logging.
type LogConfig struct {
	// Level is debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is text or json; empty picks text on a terminal, json elsewhere.
	Format string `yaml:"format"`
}

// defaultConfig is what jobdrop runs with when no file is given.
func defaultConfig() Config {
	return Config{
		DataDir: "./data",
		Console: ConsoleConfig{Listen: "127.0.0.1:8080"},
		Watch:   []Folder{{Dir: "./inbox"}},
		Log:     LogConfig{Level: "info"},
		// A burst of fires commits within tens of milliseconds on an
		// idle node: a scheduler later than this is held up.
		Pacing: pace.Pacing{Lateness: defaultPacingLateness, RecorderLateness: defaultRecorderLateness},
	}
}

// defaultPacingLateness is pacing.lateness when the configuration does not
// say.
const defaultPacingLateness = 250 * time.Millisecond

// defaultRecorderLateness is pacing.recorder_lateness when the
// configuration does not say: past the few milliseconds a steady schedule
// runs late at most, the scheduler is in a burst, and the console's
// database can wait for it.
const defaultRecorderLateness = 20 * time.Millisecond

// loadConfig reads path (none: the defaults), then applies JOBDROP_…
// environment variables, then fills defaults and validates.
func loadConfig(path string, environ []string) (Config, error) {
	cfg := defaultConfig()
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("config: %w", err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return cfg, fmt.Errorf("config %s: %w", path, err)
		}
		if errs := unknownKeys(&doc, reflect.TypeFor[Config](), ""); len(errs) > 0 {
			return cfg, fmt.Errorf("config %s: %w", path, errors.Join(errs...))
		}
		if doc.Kind != 0 { // an empty file leaves the defaults
			if err := doc.Decode(&cfg); err != nil {
				return cfg, fmt.Errorf("config %s: %w", path, err)
			}
		}
	}
	if err := applyEnv(&cfg, environ); err != nil {
		return cfg, err
	}
	cfg.Kafka = cfg.Kafka.WithDefaults()
	cfg.Topics = cfg.Topics.WithDefaults()
	if cfg.Node == "" {
		h, _ := os.Hostname()
		cfg.Node = h
	}
	return cfg, cfg.validate()
}

// yamlField is a configuration key: its name in YAML, and where it sits in
// its struct.
type yamlField struct {
	name  string
	index []int
	typ   reflect.Type
}

// yamlFields lists the keys a struct type takes in YAML, in order, the
// keys of its inline parts among them.
func yamlFields(t reflect.Type) []yamlField {
	var out []yamlField
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported() || tag == "-":
		case opts == "inline":
			for _, in := range yamlFields(f.Type) {
				in.index = append([]int{i}, in.index...)
				out = append(out, in)
			}
		default:
			out = append(out, yamlField{name: tag, index: []int{i}, typ: f.Type})
		}
	}
	return out
}

// unknownKeys names each key of a YAML document that the configuration
// type t does not have, by its line and path, with the keys its place
// takes and the one most likely meant.
func unknownKeys(n *yaml.Node, t reflect.Type, path string) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var errs []error
	switch {
	case n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode:
		for _, c := range n.Content {
			errs = append(errs, unknownKeys(c, t, path)...)
		}
		if n.Alias != nil {
			errs = append(errs, unknownKeys(n.Alias, t, path)...)
		}
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, c := range n.Content {
			errs = append(errs, unknownKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Duration]():
		fields := map[string]reflect.Type{}
		var names []string
		for _, f := range yamlFields(t) {
			fields[f.name] = f.typ
			names = append(names, f.name)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			at := strings.TrimPrefix(path+"."+k.Value, ".")
			ft, ok := fields[k.Value]
			if !ok {
				hint := ""
				if s := suggestion.Closest(k.Value, names...); s != "" {
					hint = fmt.Sprintf(" (did you mean %s?)", s)
				}
				place := cmp.Or(path, "the top level")
				errs = append(errs, fmt.Errorf("line %d: %s: unknown key%s; %s takes %s", k.Line, at, hint, place, strings.Join(names, ", ")))
				continue
			}
			errs = append(errs, unknownKeys(n.Content[i+1], ft, at)...)
		}
	}
	return errs
}

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

// validate checks the folder's file handling options; at names the folder
// in messages.
func (f Folder) validate(at string) error {
	var errs []error
	reg := newRegistry()
	if f.Converter != "" {
		if _, err := reg.Named(f.Converter); err != nil {
			errs = append(errs, fmt.Errorf("%s.converter: %w", at, err))
		}
	}
	for j, p := range f.Patterns {
		if strings.TrimSpace(p.Pattern) == "" {
			errs = append(errs, fmt.Errorf("%s.patterns[%d].pattern: must not be empty", at, j))
		} else if _, err := path.Match(p.Pattern, ""); err != nil {
			errs = append(errs, fmt.Errorf("%s.patterns[%d].pattern: %q: %w", at, j, p.Pattern, err))
		}
		if _, err := reg.Named(p.Converter); err != nil {
			errs = append(errs, fmt.Errorf("%s.patterns[%d].converter: %w", at, j, err))
		}
	}
	if !f.Policy.Valid() {
		errs = append(errs, fmt.Errorf("%s.policy: %q is not %s or %s", at, f.Policy, injector.PolicyReject, injector.PolicyGoodRows))
	}
	if f.MaxFileBytes < -1 {
		errs = append(errs, fmt.Errorf("%s.max_file_bytes: %d: want a number of bytes, 0 for 1 GiB or -1 for no limit", at, f.MaxFileBytes))
	}
	if f.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("%s.poll_interval: %s: must not be negative", at, f.PollInterval))
	}
	if f.MinAge < 0 {
		errs = append(errs, fmt.Errorf("%s.min_age: %s: must not be negative", at, f.MinAge))
	}
	if f.SyncScope != "" && f.SyncScope != "file" && f.SyncScope != "host" {
		errs = append(errs, fmt.Errorf("%s.sync_scope: %q is not file or host", at, f.SyncScope))
	}
	if m := f.SyncMaxRemove; m != nil && (*m < 0 || *m > 100) {
		errs = append(errs, fmt.Errorf("%s.sync_max_remove: %d: want a percentage, 0 to 100", at, *m))
	}
	return errors.Join(errs...)
}

// applyEnv sets every key named by a JOBDROP_ variable: the YAML path in
// upper case joined by "_" (JOBDROP_KAFKA_EMBEDDED_LISTEN), list elements
// by index (JOBDROP_WATCH_0_DIR), lists of strings comma-separated
// (JOBDROP_KAFKA_BROKERS=a:9092,b:9092). A JOBDROP_ variable that names no
// key is an error, so a typo does not go unnoticed.
func applyEnv(cfg *Config, environ []string) error {
	vars := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "JOBDROP_") {
			vars[k] = v
		}
	}
	if len(vars) == 0 {
		return nil
	}
	var errs []error
	used := map[string]bool{}
	var walk func(v reflect.Value, name string)
	walk = func(v reflect.Value, name string) {
		if s, ok := vars[name]; ok && v.Kind() != reflect.Struct {
			used[name] = true
			if err := setFromString(v, s); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			return
		}
		switch v.Kind() {
		case reflect.Struct:
			for _, f := range yamlFields(v.Type()) {
				walk(v.FieldByIndex(f.index), name+"_"+strings.ToUpper(f.name))
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() != reflect.Struct {
				return
			}
			// Grow the list when a variable names an element past its end.
			for i := 0; ; i++ {
				prefix := fmt.Sprintf("%s_%d_", name, i)
				any := false
				for k := range vars {
					if strings.HasPrefix(k, prefix) {
						any = true
						break
					}
				}
				if !any && i >= v.Len() {
					break
				}
				if i >= v.Len() {
					v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
				}
				walk(v.Index(i), fmt.Sprintf("%s_%d", name, i))
			}
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String || v.Type().Elem().Kind() != reflect.String {
				return
			}
			for k, s := range vars {
				if key, ok := strings.CutPrefix(k, name+"_"); ok && !used[k] {
					if v.IsNil() {
						v.Set(reflect.MakeMap(v.Type()))
					}
					used[k] = true
					v.SetMapIndex(reflect.ValueOf(strings.ToLower(key)), reflect.ValueOf(s))
				}
			}
		}
	}
	walk(reflect.ValueOf(cfg).Elem(), "JOBDROP")
	var unknown []string
	for k := range vars {
		if !used[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		errs = append(errs, fmt.Errorf("%s: no such configuration key", k))
	}
	return errors.Join(errs...)
}

func setFromString(v reflect.Value, s string) error {
	switch v.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		// An optional value whose default is not the zero value
		// (kafka.create_topics): set it through a fresh pointer.
		p := reflect.New(v.Type().Elem())
		if err := setFromString(p.Elem(), s); err != nil {
			return err
		}
		v.Set(p)
	case reflect.String:
		v.SetString(s)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("want a whole number, got %q", s)
		}
		v.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", s)
		}
		v.SetBool(b)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return errors.New("cannot be set from the environment")
		}
		var items []string
		for _, it := range strings.Split(s, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		v.Set(reflect.ValueOf(items))
	default:
		return errors.New("cannot be set from the environment")
	}
	return nil
}
