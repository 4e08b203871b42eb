package converters

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

// The files of a systemd drop: archives of units, the unit file syntax of
// systemd.syntax(7), and the values settings take (booleans, time spans,
// quoted lists).

// readBounded reads r whole, at most limit bytes; kind names what the file
// should be in the error of a larger one.
func readBounded(file string, r io.Reader, limit int, kind string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%s: larger than %d KiB; is this %s?", file, limit>>10, kind)
	}
	return data, nil
}

// readUnitArchive reads the regular files of a tar (plain or gzipped) or
// zip archive, in archive order.
func readUnitArchive(file string, f *os.File) ([]unitFile, error) {
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var units []unitFile
	total := 0
	add := func(name string, r io.Reader, size int64) error {
		if len(units) >= maxSystemdUnits {
			return fmt.Errorf("%s: more than %d files", file, maxSystemdUnits)
		}
		where := file + ": " + name
		text, err := readBounded(where, r, maxSystemdBytes, "a unit file")
		if err != nil {
			return err
		}
		if total += len(text); total > maxSystemdArchiveBytes {
			return fmt.Errorf("%s: more than %d MiB of units", file, maxSystemdArchiveBytes>>20)
		}
		units = append(units, unitFile{name: path.Base(name), entry: name, text: text})
		return nil
	}
	switch {
	case n >= 4 && string(head) == "PK\x03\x04":
		st, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		zr, err := zip.NewReader(f, st.Size())
		if err != nil {
			return nil, fmt.Errorf("%s: not a zip archive: %w", file, err)
		}
		for _, zf := range zr.File {
			if zf.FileInfo().IsDir() {
				continue
			}
			rc, err := zf.Open()
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", file, zf.Name, err)
			}
			err = add(zf.Name, rc, int64(zf.UncompressedSize64))
			rc.Close()
			if err != nil {
				return nil, err
			}
		}
	default:
		var r io.Reader = bufio.NewReader(f)
		if n >= 2 && head[0] == 0x1f && head[1] == 0x8b {
			gz, err := gzip.NewReader(r)
			if err != nil {
				return nil, fmt.Errorf("%s: not a gzip file: %w", file, err)
			}
			defer gz.Close()
			r = gz
		}
		tr := tar.NewReader(r)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: not a tar archive of timer units (want .tar, .tar.gz, .tgz or .zip): %w", file, err)
			}
			if h.Typeflag != tar.TypeReg {
				continue // directories, links: no unit text of their own
			}
			if err := add(h.Name, tr, h.Size); err != nil {
				return nil, err
			}
		}
	}
	if len(units) == 0 {
		return nil, fmt.Errorf("%s: %w: the archive holds no file (want .timer units and their .service units)", file, ErrNoRows)
	}
	return units, nil
}

// unitLine is one setting of a unit file.
type unitLine struct {
	section, key, value string
	line                int
}

// parseUnit reads a unit file as systemd.syntax(7) says: [Section]
// headers, Key=Value settings, comments starting with # or ;, a trailing
// backslash continuing a line.
func parseUnit(text []byte) ([]unitLine, []error) {
	text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
	var out []unitLine
	var errs []error
	section := ""
	lines := strings.Split(strings.ReplaceAll(string(text), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		l := strings.TrimSpace(lines[i])
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			next := strings.TrimSpace(lines[i])
			if strings.HasPrefix(next, "#") || strings.HasPrefix(next, ";") {
				continue // a comment inside a continued line
			}
			l = strings.TrimRight(strings.TrimSuffix(l, "\\"), " \t") + " " + next
		}
		switch {
		case l == "" || l[0] == '#' || l[0] == ';':
		case l[0] == '[':
			if !strings.HasSuffix(l, "]") || len(l) < 3 {
				errs = append(errs, fmt.Errorf("line %d: %q: a section header is [Name]", start, clip(l)))
				continue
			}
			section = l[1 : len(l)-1]
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				errs = append(errs, fmt.Errorf("line %d: %q: want Key=Value", start, clip(l)))
				continue
			}
			if section == "" {
				errs = append(errs, fmt.Errorf("line %d: %q comes before any [Section]", start, clip(l)))
				continue
			}
			out = append(out, unitLine{section: section, key: strings.TrimSpace(k), value: strings.TrimSpace(v), line: start})
		}
	}
	return out, errs
}

// timerService is the service a timer activates: its Unit=, else the unit
// of the same name ending .service.
func timerService(name string, text []byte) string {
	lines, _ := parseUnit(text)
	for _, l := range lines {
		if l.section == "Timer" && l.key == "Unit" && l.value != "" {
			return l.value
		}
	}
	return strings.TrimSuffix(name, path.Ext(name)) + ".service"
}

// splitQuoted splits a space-separated list whose items may be in double
// quotes, as Environment= is written.
func splitQuoted(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// systemdBool reads a unit file boolean.
func systemdBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "yes", "y", "true", "t", "on":
		return true, nil
	case "0", "no", "n", "false", "f", "off":
		return false, nil
	}
	return false, errors.New("want yes or no (true, false, on, off, 1, 0)")
}

// systemdUnits are the units of a time span, as systemd.time(7) lists
// them; a bare number is seconds.
var systemdUnits = map[string]time.Duration{
	"usec": time.Microsecond, "us": time.Microsecond, "µs": time.Microsecond,
	"msec": time.Millisecond, "ms": time.Millisecond,
	"seconds": time.Second, "second": time.Second, "sec": time.Second, "s": time.Second, "": time.Second,
	"minutes": time.Minute, "minute": time.Minute, "min": time.Minute, "m": time.Minute,
	"hours": time.Hour, "hour": time.Hour, "hr": time.Hour, "h": time.Hour,
	"days": 24 * time.Hour, "day": 24 * time.Hour, "d": 24 * time.Hour,
	"weeks": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "w": 7 * 24 * time.Hour,
	"months": 2629800 * time.Second, "month": 2629800 * time.Second, "M": 2629800 * time.Second,
	"years": 31557600 * time.Second, "year": 31557600 * time.Second, "y": 31557600 * time.Second,
}

// systemdTimespan reads a time span such as "1h 30min", "90", "2d".
func systemdTimespan(s string) (time.Duration, error) {
	bad := fmt.Errorf("want a time span such as 15min, 1h 30min or 2d (units us, ms, s, min, h, d, w, M, y; a bare number is seconds)")
	rest := strings.TrimSpace(s)
	if rest == "" {
		return 0, bad
	}
	var total time.Duration
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, bad
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, bad
		}
		rest = strings.TrimLeft(rest[i:], " ")
		j := 0
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9') && rest[j] != ' ' {
			j++
		}
		unit, ok := systemdUnits[rest[:j]]
		if !ok {
			return 0, bad
		}
		rest = strings.TrimLeft(rest[j:], " ")
		if f := n * float64(unit); f > float64(math.MaxInt64/2) {
			return 0, errors.New("too long a time span")
		} else {
			total += time.Duration(f)
		}
	}
	return total, nil
}
