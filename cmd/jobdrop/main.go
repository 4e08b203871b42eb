package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	_ "time/tzdata" // time zones load on hosts without zoneinfo
)

const usage = `jobdrop moves a batch schedule onto Kafka.

Usage:
  jobdrop run [--config FILE]                     watch, inject, fire and serve the console
  jobdrop convert FILE [--preview N] [--from TIME] [--folder DIR] [--config FILE]
                                                  dry run: print the commands FILE becomes
  jobdrop inject FILE [--folder DIR] [--config FILE]
                                                  inject one file as the watcher would
                                                  (--folder: whose settings apply; default:
                                                  the watched folder FILE is in, or the only one)
  jobdrop diff FILE --node URL [--folder DIR] [--name NAME] [--user NAME --password-file FILE] [--json]
                                                  what FILE would change of the tasks running
                                                  on a node (exit 0: nothing; 1: changes; 2: error)
  jobdrop hash-password [--cost N] < PASSWORD-LINE
                                                  print the bcrypt hash for console.users
                                                  (cost 12 unless --cost says otherwise)

With no config file jobdrop keeps its data in ./data, watches ./inbox, serves
the console on http://127.0.0.1:8080 and an embedded Kafka broker on
127.0.0.1:9092. Every configuration key can be set by a JOBDROP_ variable
(JOBDROP_CONSOLE_LISTEN=127.0.0.1:9000); samples/jobdrop.yaml documents them.
`

func main() {
	ctx, stop := signalContext()
	err := mainErr(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var exit exitError
	switch {
	case errors.As(err, &exit):
		os.Exit(int(exit))
	case err != nil:
		fmt.Fprintln(os.Stderr, "jobdrop:", err)
		os.Exit(1)
	}
}

// signalContext is done on SIGINT or SIGTERM: jobdrop then shuts down
// gracefully.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// exitError ends the process with a status after the message was printed.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func mainErr(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError(2)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return nil
	}
	cmd, args := args[0], args[1:]
	if cmd == "hash-password" {
		return hashPassword(os.Stdin, stdout, args)
	}
	fs := flag.NewFlagSet("jobdrop "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "configuration file (YAML)")
	var preview int
	var from, folder string
	var diff diffOptions
	switch cmd {
	case "run":
	case "convert":
		fs.IntVar(&preview, "preview", 0, "add each task's next `N` fire times")
		fs.StringVar(&from, "from", "", "count fire times from this RFC 3339 `time` (default now)")
		fs.StringVar(&folder, "folder", "", "use the converter, defaults and mapping of this watched `dir`")
	case "inject":
		fs.StringVar(&folder, "folder", "", "use the converter, defaults and mapping of this watched `dir`")
	case "diff":
		fs.StringVar(&diff.node, "node", "", "the console `URL` of a running node")
		fs.StringVar(&diff.folder, "folder", "", "the node's watched folder `dir` the file would be dropped into (default: its first)")
		fs.StringVar(&diff.name, "name", "", "the `name` the file would be dropped as (default: its own)")
		fs.StringVar(&diff.user, "user", "", "a console user `name`, for a node with console.users")
		fs.StringVar(&diff.passwordFile, "password-file", "", "the `file` holding --user's password")
		fs.BoolVar(&diff.json, "json", false, "print the node's answer as JSON")
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitError(2)
	}
	cfg, err := loadConfig(*configPath, os.Environ())
	if err != nil {
		return err
	}
	if cmd == "inject" && cfg.Log.Level != "debug" {
		// The command prints what it did: its log says only what went
		// wrong on the way.
		cfg.Log.Level = "warn"
	}
	log := newLogger(cfg.Log, stderr)
	switch cmd {
	case "run":
		if len(pos) > 0 {
			return fmt.Errorf("run takes no arguments, got %q", pos)
		}
		return run(ctx, cfg, log, hooks{})
	case "convert":
		if len(pos) != 1 {
			return errors.New("convert takes one FILE")
		}
		return convert(ctx, cfg, pos[0], folder, preview, from, stdout, stderr)
	case "diff":
		if len(pos) != 1 {
			fmt.Fprintln(stderr, "jobdrop diff: takes one FILE")
			return exitError(2)
		}
		return diffFile(ctx, pos[0], diff, stdout, stderr)
	default:
		if len(pos) != 1 {
			return errors.New("inject takes one FILE")
		}
		return injectFile(ctx, cfg, pos[0], folder, log, stdout, stderr)
	}
}

// parseInterspersed lets flags come before or after the positional
// arguments, as in "jobdrop convert jobs.csv --preview 3".
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// newLogger logs text on a terminal and JSON elsewhere, unless configured.
func newLogger(c LogConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToUpper(c.Level)))
	opts := &slog.HandlerOptions{Level: level}
	format := c.Format
	if format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
