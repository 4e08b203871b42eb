package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// The operations guide, the systemd unit and the container image tell
// operators which settings and commands to use. These tests hold them to
// what jobdrop accepts, so that a renamed key cannot leave them behind.

// opsFiles name settings for operators, relative to the repository root.
var opsFiles = []string{"docs/operations.md", "deploy/jobdrop.service", "deploy/container.yaml", "Dockerfile"}

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// envVar matches a JOBDROP_ variable; "JOBDROP_…" in prose is not one.
var envVar = regexp.MustCompile(`JOBDROP_[A-Z0-9_]*[A-Z0-9]`)

func TestOperationsFilesNameOnlyRealVariables(t *testing.T) {
	for _, f := range opsFiles {
		names := envVar.FindAllString(repoFile(t, f), -1)
		slices.Sort(names)
		names = slices.Compact(names)
		if f == "docs/operations.md" && len(names) < 10 {
			t.Errorf("%s names only %d JOBDROP_ variables: is the pattern still right?", f, len(names))
		}
		for _, name := range names {
			cfg := defaultConfig()
			// applyEnv decides what a variable means; a value the key
			// cannot take is not the question here.
			err := applyEnv(&cfg, []string{name + "=1"})
			if err != nil && strings.Contains(err.Error(), name+": no such configuration key") {
				t.Errorf("%s names %s, which sets no configuration key", f, name)
			}
		}
	}
}

// knownKeys is every key path of the configuration and every path above
// one ("kafka", "kafka.tls", "kafka.tls.ca_file"), and the top-level keys.
func knownKeys() (paths, top map[string]bool) {
	paths, top = map[string]bool{}, map[string]bool{}
	for _, p := range yamlPaths(reflect.TypeFor[Config](), "") {
		parts := strings.Split(p, ".")
		top[parts[0]] = true
		for i := range parts {
			paths[strings.Join(parts[:i+1], ".")] = true
		}
	}
	return paths, top
}

var (
	// codeSpan is an inline code span of Markdown.
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// keyPath is a configuration key as the guide writes one:
	// kafka.tls.ca_file, watch[].poll, watch[0].dir, or a key with a value
	// (console.secure_cookies: true).
	keyPath = regexp.MustCompile(`^([a-z_]+(?:\[\d*\])?(?:\.[a-z_]+(?:\[\d*\])?)*)(?:: .*)?$`)
	// fence opens or closes a fenced code block.
	fence = regexp.MustCompile("(?m)^```([a-z]*)$")
	// command is jobdrop and the word after it, in code.
	command = regexp.MustCompile(`(?:^|[\s/"])jobdrop ([a-z][a-z-]*)(?:[\s"]|$)`)
	// subcommand is a command the usage text lists.
	subcommand = regexp.MustCompile(`(?m)^\s+jobdrop ([a-z][a-z-]*)`)
	// otherFile opens a YAML block that is not jobdrop's configuration:
	// "# compose.yaml", "# prometheus.yml".
	otherFile = regexp.MustCompile(`^# [\w.-]+\.ya?ml\b`)
)

// markdownCode splits a Markdown text into its fenced blocks (with their
// language) and the code spans of the prose around them.
func markdownCode(text string) (blocks []codeBlock, spans []string) {
	var prose strings.Builder
	rest := text
	for {
		open := fence.FindStringSubmatchIndex(rest)
		if open == nil {
			prose.WriteString(rest)
			break
		}
		prose.WriteString(rest[:open[0]])
		lang := rest[open[2]:open[3]]
		body := rest[open[1]:]
		end := fence.FindStringIndex(body)
		if end == nil {
			blocks = append(blocks, codeBlock{lang, body})
			break
		}
		blocks = append(blocks, codeBlock{lang, strings.TrimPrefix(body[:end[0]], "\n")})
		rest = body[end[1]:]
	}
	for _, m := range codeSpan.FindAllStringSubmatch(prose.String(), -1) {
		spans = append(spans, m[1])
	}
	return blocks, spans
}

type codeBlock struct{ lang, text string }

func TestOperationsGuideNamesOnlyRealKeysAndCommands(t *testing.T) {
	text := repoFile(t, "docs/operations.md")
	blocks, spans := markdownCode(text)
	paths, top := knownKeys()

	checked := 0
	for _, s := range spans {
		m := keyPath.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		key := regexp.MustCompile(`\[\d*\]`).ReplaceAllString(m[1], "")
		if !top[strings.Split(key, ".")[0]] {
			continue // a Kafka or Redpanda setting, a topic name, …
		}
		checked++
		if !paths[key] {
			t.Errorf("docs/operations.md names `%s`, but the configuration has no key %s", s, key)
		}
	}
	if checked < 20 {
		t.Errorf("only %d configuration keys found in docs/operations.md: is the pattern still right?", checked)
	}

	// Every YAML block is a piece of jobdrop's configuration, unless its
	// first line names another file.
	yamlBlocks := 0
	for _, b := range blocks {
		if b.lang != "yaml" || otherFile.MatchString(b.text) {
			continue
		}
		yamlBlocks++
		cfg := defaultConfig()
		dec := yaml.NewDecoder(strings.NewReader(b.text))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil {
			t.Errorf("a YAML block of docs/operations.md is not jobdrop configuration: %v\n%s", err, b.text)
		}
	}
	if yamlBlocks == 0 {
		t.Error("docs/operations.md has no YAML configuration block")
	}

	known := map[string]bool{}
	for _, m := range subcommand.FindAllStringSubmatch(usage, -1) {
		known[m[1]] = true
	}
	code := slices.Clone(spans)
	for _, b := range blocks {
		code = append(code, b.text)
	}
	for _, c := range code {
		for _, m := range command.FindAllStringSubmatch(c, -1) {
			if !known[m[1]] {
				t.Errorf("docs/operations.md runs `jobdrop %s`, which is no jobdrop command (%v)", m[1], slices.Sorted(maps.Keys(known)))
			}
		}
	}
}

// dockerfile is the repository's Dockerfile as instruction → arguments,
// continuation lines joined.
func dockerfile(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	var line string
	sc := bufio.NewScanner(strings.NewReader(repoFile(t, "Dockerfile")))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			line += cont + " "
			continue
		}
		line += l
		instr, args, _ := strings.Cut(line, " ")
		out[strings.ToUpper(instr)] = append(out[strings.ToUpper(instr)], strings.TrimSpace(args))
		line = ""
	}
	return out
}

// jsonArgs decodes the exec form of an instruction: ["a", "b"].
func jsonArgs(t *testing.T, s string) []string {
	t.Helper()
	var args []string
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		t.Fatalf("%s: not an exec-form JSON array: %v", s, err)
	}
	return args
}

func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestContainerImageConfiguration(t *testing.T) {
	const image = "deploy/container.yaml"
	path := filepath.Join("..", "..", image)

	// Its console listens beyond the container: no users, no start.
	_, err := loadConfig(path, nil)
	if err == nil || !strings.Contains(err.Error(), "console.listen") {
		t.Fatalf("%s without users: got %v, want a refusal naming console.listen", image, err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, []string{
		"JOBDROP_CONSOLE_USERS_0_NAME=admin",
		"JOBDROP_CONSOLE_USERS_0_PASSWORD_HASH=" + string(hash),
		"JOBDROP_CONSOLE_USERS_0_ROLE=admin",
	})
	if err != nil {
		t.Fatalf("%s with a user from the environment: %v", image, err)
	}

	df := dockerfile(t)
	var conf string
	for _, c := range df["COPY"] {
		if src, dst, _ := strings.Cut(c, " "); src == image {
			conf = dst
		}
	}
	if conf == "" {
		t.Fatalf("the Dockerfile does not copy %s into the image", image)
	}
	if cmd := jsonArgs(t, df["CMD"][len(df["CMD"])-1]); !slices.Equal(cmd, []string{"run", "--config", conf}) {
		t.Errorf("CMD %q does not run with %s", cmd, conf)
	}
	volumes := jsonArgs(t, df["VOLUME"][0])
	for _, dir := range []string{cfg.DataDir, cfg.Watch[0].Dir} {
		if !slices.Contains(volumes, dir) {
			t.Errorf("VOLUME %q lacks %s of %s", volumes, dir, image)
		}
	}
	exposed := strings.Fields(strings.Join(df["EXPOSE"], " "))
	for _, addr := range []string{cfg.Console.Listen, cfg.Kafka.Embedded.Listen} {
		if !slices.Contains(exposed, port(t, addr)) {
			t.Errorf("EXPOSE %q lacks the port of %s", exposed, addr)
		}
	}
	hc := df["HEALTHCHECK"][0]
	if !strings.Contains(hc, "JOBDROP_CONSOLE_LISTEN:-"+cfg.Console.Listen+"}") {
		t.Errorf("HEALTHCHECK does not fall back to console.listen %s of %s: %s", cfg.Console.Listen, image, hc)
	}
}

// healthCheck is the command of the Dockerfile's HEALTHCHECK.
func healthCheck(t *testing.T) []string {
	t.Helper()
	hc := dockerfile(t)["HEALTHCHECK"][0]
	_, cmd, ok := strings.Cut(hc, " CMD ")
	if !ok {
		t.Fatalf("HEALTHCHECK %s has no CMD", hc)
	}
	return jsonArgs(t, cmd)
}

func TestContainerHealthCheckAsksHealthz(t *testing.T) {
	args := healthCheck(t)
	if _, err := exec.LookPath(args[0]); err != nil {
		t.Skipf("%s is not installed here: %v", args[0], err)
	}
	in := startInstance(t)
	check := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		// As in the container: JOBDROP_CONSOLE_LISTEN names the port.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "JOBDROP_CONSOLE_LISTEN=" + strings.TrimPrefix(in.console, "http://")}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err != nil && out.Len() > 0 {
			t.Logf("health check said: %s", out.String())
		}
		return err
	}
	if err := check(); err != nil {
		t.Fatalf("health check of a running instance failed: %v", err)
	}
	in.stop()
	if err := check(); err == nil {
		t.Fatal("health check passed with the console stopped")
	}
}

func TestSystemdUnit(t *testing.T) {
	unit := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(repoFile(t, "deploy/jobdrop.service")))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			unit[k] = append(unit[k], v)
		}
	}
	start := strings.Fields(unit["ExecStart"][0])
	if len(start) != 4 || start[1] != "run" || start[2] != "--config" {
		t.Errorf("ExecStart=%s: want BINARY run --config FILE", unit["ExecStart"][0])
	}
	// The data dir is the state directory systemd makes for the user.
	if !slices.Contains(unit["Environment"], "JOBDROP_DATA_DIR=/var/lib/"+unit["StateDirectory"][0]) {
		t.Errorf("Environment=%q does not put data_dir in StateDirectory=%s", unit["Environment"], unit["StateDirectory"][0])
	}
	// ProtectSystem=strict makes every other path read-only: the watched
	// folders must be writable.
	if unit["ProtectSystem"][0] != "strict" || len(unit["ReadWritePaths"]) == 0 {
		t.Errorf("ProtectSystem=%q ReadWritePaths=%q", unit["ProtectSystem"], unit["ReadWritePaths"])
	}
	// A graceful stop waits for a commit the Kafka client retries for up
	// to 30 s, and for console requests up to 5 s.
	stop, err := time.ParseDuration(unit["TimeoutStopSec"][0])
	if err != nil || stop < 35*time.Second {
		t.Errorf("TimeoutStopSec=%s: want at least 35s (%v)", unit["TimeoutStopSec"][0], err)
	}
}
