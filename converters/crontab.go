package converters

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jobdrop/jobdrop/task"
)

// Crontab reads crontab files: the user format (`m h dom mon dow
// command`, as crontab -e writes it) or, with Options.Crontab.System, the
// system format of /etc/crontab and /etc/cron.d with a user field before
// the command. Each schedule line becomes a cron task whose data holds
// the command (and the user); host and topic come from the folder's
// defaults. The @yearly, @annually, @monthly, @weekly, @daily, @midnight
// and @hourly shorthands are understood; @reboot is not a schedule.
// Environment lines (VAR=value) apply to the lines after them: CRON_TZ or
// TZ sets their time zone, others are passed in data as env.VAR.
//
// A task is named by a "# name: NAME" comment on the line just before it;
// otherwise by its command: the program's base name and a short hash of
// the user and the whole command (backup-sh-3f2a9c1d), so that moving a
// line or changing its schedule keeps the task, and its history, and a
// crontab dropped again becomes updates of the same tasks. Lines with
// the same command take -2, -3… after the first, in file order.
//
// The zero value is ready to use.
type Crontab struct{}

var _ Converter = Crontab{}

// cronShorthands are the @ schedules cron understands.
var cronShorthands = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// maxCrontabLine bounds one line.
const maxCrontabLine = 64 << 10

// Convert reads the crontab at path; see Converter.
func (Crontab) Convert(ctx context.Context, path string, opts Options, emit func(Row) error) error {
	return convertFile(ctx, path, opts, emit, Crontab{}.ConvertReader)
}

// ConvertReader reads a crontab from r as Convert does; file is the name
// used in errors.
func (Crontab) ConvertReader(ctx context.Context, file string, r io.Reader, opts Options, emit func(Row) error) error {
	defaults, _, derrs := normalizeDefaults(opts.Defaults)
	var errs []error
	for _, err := range derrs {
		errs = append(errs, &RowError{File: file, Err: err})
	}
	if defaults.Host == "" {
		errs = append(errs, &RowError{File: file, Column: "host", Err: errors.New("a crontab has no host: set defaults.host for the folder")})
	}
	if defaults.Topic == "" {
		errs = append(errs, &RowError{File: file, Column: "topic", Err: errors.New("a crontab has no topic: set defaults.topic for the folder")})
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	action := task.Action(defaults.Action)
	if action == "" {
		action = task.Insert
	}

	br := bufio.NewReaderSize(r, 64<<10)
	timezone := defaults.Timezone
	env := map[string]string{}
	name := ""                // from a "# name:" comment on the line before
	names := map[string]int{} // derived names given so far
	n := 0
	for line := 1; ; line++ {
		if line%64 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
		raw, err := readLine(br, maxCrontabLine)
		if errors.Is(err, errRecordTooLong) {
			return fmt.Errorf("%s: line %d is longer than %d bytes; is this a crontab?", file, line, maxCrontabLine)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		text := strings.TrimRight(string(raw), "\r\n")
		if line == 1 {
			text = strings.TrimPrefix(text, "\uFEFF")
		}
		trimmed := strings.TrimSpace(text)
		prevName := name
		name = ""
		switch {
		case trimmed == "":
			continue
		case strings.HasPrefix(trimmed, "#"):
			c := strings.TrimSpace(strings.TrimPrefix(trimmed, "#"))
			if k, v, ok := strings.Cut(c, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "name") {
				name = strings.TrimSpace(v)
			}
			continue
		}
		fail := func(column, value string, err error) error {
			n++
			return emit(Row{Line: line, Err: &RowError{File: file, Row: line, Column: column, Value: clip(value), Err: err}})
		}
		if strings.HasSuffix(trimmed, `\`) {
			if err := fail("", trimmed, errors.New(`line continuation (\ at the end of a line) is not supported by cron: put the whole entry on one line`)); err != nil {
				return err
			}
			continue
		}
		if k, v, ok := envLine(trimmed); ok {
			switch k {
			case "CRON_TZ", "TZ":
				if _, err := time.LoadLocation(v); err != nil || v == "" {
					if err := fail(k, v, errors.New("must be an IANA time zone such as Europe/Paris")); err != nil {
						return err
					}
					continue
				}
				timezone = v
			default:
				env[k] = v
			}
			continue
		}

		schedule, rest, err := splitSchedule(trimmed)
		if err != nil {
			if err := fail("schedule", trimmed, err); err != nil {
				return err
			}
			continue
		}
		user := ""
		if opts.Crontab.System {
			rest = strings.TrimLeft(rest, " \t")
			if i := strings.IndexAny(rest, " \t"); i >= 0 {
				user, rest = rest[:i], rest[i:]
			} else {
				user, rest = rest, ""
			}
			if user == "" {
				if err := fail("user", "", errors.New("missing: the system crontab format (crontab.system) has a user before the command")); err != nil {
					return err
				}
				continue
			}
		}
		command := strings.TrimSpace(rest)
		if command == "" {
			if err := fail("command", "", errors.New("missing: a crontab line is a schedule followed by a command")); err != nil {
				return err
			}
			continue
		}
		if prevName == "" {
			prevName = commandName(user, command)
			if names[prevName]++; names[prevName] > 1 {
				prevName += "-" + strconv.Itoa(names[prevName])
			}
		}
		d := task.Definition{
			Host: defaults.Host, Name: prevName, Action: action, Topic: defaults.Topic,
			Cron: schedule, Timezone: timezone,
			Data: map[string]string{"command": command},
		}
		if user != "" {
			d.Data["user"] = user
		}
		for k, v := range env {
			d.Data["env."+k] = v
		}
		row := Row{Line: line, Def: d}
		var rerrs []error
		for _, fe := range task.FieldErrors(d.Validate()) {
			col := fe.Field
			if col == "cron" {
				col = "schedule"
			}
			rerrs = append(rerrs, &RowError{File: file, Row: line, Column: col, Value: clip(fe.Value), Err: errors.New(fe.Reason)})
		}
		if len(rerrs) > 0 {
			row.Err = joinRowErrors(rerrs)
		}
		n++
		if err := emit(row); err != nil {
			return err
		}
	}
	if n == 0 {
		return fmt.Errorf("%s: %w: no schedule lines (m h dom mon dow command)", file, ErrNoRows)
	}
	return nil
}

// envLine recognises NAME=value (value optionally quoted), as cron does:
// the name may not contain spaces and the line must not start like a
// schedule.
func envLine(s string) (string, string, bool) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", false
	}
	k = strings.TrimSpace(k)
	if k == "" || strings.ContainsAny(k, " \t*@/,") || (k[0] >= '0' && k[0] <= '9') {
		return "", "", false
	}
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return k, v, true
}

// splitSchedule splits a crontab line into its schedule (a shorthand
// expanded, or five fields) and the rest.
func splitSchedule(s string) (string, string, error) {
	if strings.HasPrefix(s, "@") {
		word, rest, _ := strings.Cut(s, " ")
		if i := strings.IndexByte(word, '\t'); i >= 0 {
			word, rest = word[:i], word[i+1:]+" "+rest
		}
		if strings.EqualFold(word, "@reboot") {
			return "", "", errors.New("@reboot is not a schedule: it runs at boot, which a scheduler cannot fire; run it from the host's init system")
		}
		expr, ok := cronShorthands[strings.ToLower(word)]
		if !ok {
			return "", "", fmt.Errorf("unknown shorthand %q: want @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly", word)
		}
		return expr, rest, nil
	}
	// Cron separates fields by spaces and tabs only.
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(fields) < 6 {
		return "", "", errors.New("want five schedule fields (minute hour day-of-month month day-of-week) and a command")
	}
	// The command is everything after the fifth field, spacing kept.
	rest := s
	for range 5 {
		rest = strings.TrimLeft(rest, " \t")
		i := strings.IndexAny(rest, " \t")
		rest = rest[i:]
	}
	return strings.Join(fields[:5], " "), rest, nil
}

// interpreters run the script named after them: a task is named by the
// script rather than by them.
var interpreters = map[string]bool{"sh": true, "bash": true, "php": true, "python": true, "python3": true,
	"perl": true, "ruby": true, "node": true, "java": true, "env": true, "nice": true, "sudo": true}

// commandName names the task of a crontab line by its command: the base
// name of the program it runs (of the script, for an interpreter), made
// of letters, digits and dashes, and
// the first 8 hex digits of the SHA-256 of user and command.
func commandName(user, command string) string {
	sum := sha256.Sum256([]byte(user + "\x00" + command))
	words := strings.Fields(command)
	prog := ""
	for i, w := range words {
		base := path.Base(strings.Trim(w, `"'`))
		if prog == "" || interpreters[prog] && !strings.HasPrefix(w, "-") {
			prog = base
		}
		if !interpreters[prog] || i >= 3 {
			break
		}
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(prog) {
		ok := r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug == "" {
		slug = "cron"
	}
	return slug + "-" + hex.EncodeToString(sum[:4])
}
