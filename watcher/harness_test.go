package watcher

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// Test timing: small intervals keep the suite fast; conditions are waited
// for by polling, never by sleeping a guessed duration.
const (
	testInterval = 20 * time.Millisecond
	testRescan   = 50 * time.Millisecond
	waitLimit    = 15 * time.Second
)

// call is one HandleFile call as the recorder saw it.
type call struct {
	File    File
	Content string
}

// recorder is a Handler that records what it was given; then, when set,
// react decides the outcome.
type recorder struct {
	react func(ctx context.Context, f File) error

	mu    sync.Mutex
	calls []call
}

func (r *recorder) HandleFile(ctx context.Context, f File) error {
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return err
	}
	r.mu.Lock()
	recorded := f
	recorded.status, recorded.clock = nil, nil // what serves Progress
	r.calls = append(r.calls, call{File: recorded, Content: string(data)})
	r.mu.Unlock()
	if r.react != nil {
		return r.react(ctx, f)
	}
	return nil
}

func (r *recorder) got() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recorder) names() []string {
	var names []string
	for _, c := range r.got() {
		names = append(names, c.File.Name)
	}
	return names
}

// syncBuffer is a log destination tests can read while the watcher writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fastConfig watches dirs with the test intervals.
func fastConfig(dirs ...string) Config {
	cfg := Config{StableChecks: 2, CheckInterval: testInterval, Rescan: testRescan}
	for _, d := range dirs {
		cfg.Folders = append(cfg.Folders, Folder{Dir: d})
	}
	return cfg
}

// start runs a watcher until the test ends (or stop is called) and checks
// that Run returns.
func start(t *testing.T, cfg Config, h Handler, log *slog.Logger) (stop func()) {
	t.Helper()
	if log == nil {
		log = testLogger(t)
	}
	w, err := New(cfg, h, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return run(t, w)
}

// run runs w until the test ends (or stop is called) and checks that Run
// returns.
func run(t *testing.T, w *Watcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(waitLimit):
				t.Errorf("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitFor polls cond until it holds, failing the test at the deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// files lists the regular files in dir, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
