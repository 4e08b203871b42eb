package converters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	_ "time/tzdata" // the tests must not depend on the machine's zone files

	"github.com/jobdrop/jobdrop/task"
)

var update = flag.Bool("update", false, "rewrite the golden files of the conformance suite")

// conformance lists every converter and its test files. Each NAME.EXT in
// dir is converted (with NAME.options.json as Options when present) and
// the result compared with NAME.golden; every converter must also pass the
// shared checks below, run with opts (what a format needs from its folder,
// such as a crontab's host and topic). A new format plugs in by adding an
// entry.
var conformance = []struct {
	name string
	conv Converter
	dir  string
	ext  string
	opts Options
	// oneRow says a file holds one task at most (a systemd timer): the
	// shared checks then run on a file of one valid row.
	oneRow bool
}{
	{"csv", CSV{}, "testdata/csv", ".csv", Options{}, false},
	{"xlsx", XLSX{}, "testdata/xlsx", ".xlsx", Options{}, false},
	{"json", JSON{}, "testdata/json", ".json", Options{}, false},
	{"jsonl", JSON{}, "testdata/json", ".jsonl", Options{}, false},
	{"crontab", Crontab{}, "testdata/crontab", ".crontab", Options{Defaults: Defaults{Host: "acme", Topic: "jobs"}}, false},
	{"quartz", QuartzXML{}, "testdata/quartz", ".xml", Options{Defaults: Defaults{Topic: "jobs"}}, false},
	{"kubernetes", Kubernetes{}, "testdata/kubernetes", ".yaml", Options{Defaults: Defaults{Topic: "jobs"}}, false},
	{"windows", WinTask{}, "testdata/windows", ".xml", Options{Defaults: Defaults{Topic: "jobs"}}, false},
	{"systemd archive", Systemd{}, "testdata/systemd", ".tar", Options{Defaults: Defaults{Topic: "jobs"}}, false},
	{"systemd timer", Systemd{}, "testdata/systemd", ".timer", Options{Defaults: Defaults{Topic: "jobs"}}, true},
}

// goldenLine is one line of a golden file: a row's definition, a row's
// errors, or the file's error.
type goldenLine struct {
	Line       int              `json:"line,omitempty"`
	Def        *task.Definition `json:"def,omitempty"`
	Errors     []string         `json:"errors,omitempty"`
	FileErrors []string         `json:"fileErrors,omitempty"`
}

func TestConformance(t *testing.T) {
	for _, cc := range conformance {
		t.Run(cc.name, func(t *testing.T) {
			inputs, err := filepath.Glob(filepath.Join(cc.dir, "*"+cc.ext))
			if err != nil || len(inputs) == 0 {
				t.Fatalf("no test files in %s: %v", cc.dir, err)
			}
			var multiRow string // a file with two valid rows or more
			for _, in := range inputs {
				if strings.HasSuffix(in, ".options.json") {
					continue
				}
				name := strings.TrimSuffix(filepath.Base(in), cc.ext)
				t.Run(name, func(t *testing.T) {
					got, valid := convertGolden(t, cc.conv, in)
					if (valid >= 2 || valid >= 1 && cc.oneRow) && multiRow == "" {
						multiRow = in
					}
					golden := strings.TrimSuffix(in, cc.ext) + ".golden"
					if *update {
						if err := os.WriteFile(golden, got, 0o644); err != nil {
							t.Fatal(err)
						}
						return
					}
					want, err := os.ReadFile(golden)
					if err != nil {
						t.Fatalf("%v (run go test ./converters -update to create it)", err)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("%s differs from the conversion (run go test ./converters -update to accept):\n%s", golden, lineDiff(string(want), string(got)))
					}
				})
			}
			if multiRow == "" {
				t.Fatal("no test file has two valid rows (or one, for a format of one task per file)")
			}

			t.Run("emit error stops the conversion", func(t *testing.T) {
				stop := errors.New("stop")
				calls := 0
				err := cc.conv.Convert(context.Background(), multiRow, cc.opts, func(Row) error {
					calls++
					return stop
				})
				if err != stop || calls != 1 {
					t.Errorf("Convert(%s) = %v after %d calls to emit, want the emit error itself after 1", multiRow, err, calls)
				}
			})
			t.Run("cancelled context", func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				calls := 0
				err := cc.conv.Convert(ctx, multiRow, cc.opts, func(Row) error { calls++; return nil })
				if !errors.Is(err, context.Canceled) || calls != 0 {
					t.Errorf("Convert(%s) with a cancelled context = %v after %d rows, want context.Canceled and no rows", multiRow, err, calls)
				}
			})
			t.Run("missing file", func(t *testing.T) {
				err := cc.conv.Convert(context.Background(), filepath.Join(t.TempDir(), "absent"+cc.ext), cc.opts, func(Row) error { return nil })
				if !errors.Is(err, os.ErrNotExist) {
					t.Errorf("Convert(absent file) = %v, want os.ErrNotExist", err)
				}
			})
		})
	}
}

// convertGolden converts one test file, checks the rules every converter
// follows, and renders the result as JSON lines. It also returns the
// number of valid rows.
func convertGolden(t *testing.T, conv Converter, path string) ([]byte, int) {
	t.Helper()
	var opts Options
	if b, err := os.ReadFile(strings.TrimSuffix(path, filepath.Ext(path)) + ".options.json"); err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			t.Fatalf("options of %s: %v", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}

	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	file := filepath.Base(path)
	prev, valid := 0, 0
	err := conv.Convert(context.Background(), path, opts, func(r Row) error {
		if err := checkRow(file, prev, r); err != nil {
			t.Error(err)
		}
		prev = r.Line
		line := goldenLine{Line: r.Line}
		if r.Err != nil {
			line.Errors = strings.Split(r.Err.Error(), "\n")
		} else {
			valid++
			line.Def = &r.Def
		}
		return enc.Encode(line)
	})
	if err != nil {
		for _, re := range RowErrors(err) {
			if re.File != file {
				t.Errorf("file error %q names file %q, want %q", re, re.File, file)
			}
		}
		if err := enc.Encode(goldenLine{FileErrors: strings.Split(err.Error(), "\n")}); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes(), valid
}

// checkRow verifies what every converter promises about an emitted row:
// rows come in file order, each on a line after the last; a row is either
// a valid definition or an error made only of *RowError values naming the
// file and the row's line.
func checkRow(file string, prev int, r Row) error { return checkRowFrom(file, prev+1, r) }

// checkRowFrom is checkRow for a row whose line must be from or later:
// the line of the row before in XML, where one line may hold two
// triggers.
func checkRowFrom(file string, from int, r Row) error {
	if r.Line < max(from, 1) {
		return fmt.Errorf("row line %d before line %d: rows must come in file order with 1-based lines", r.Line, from)
	}
	if r.Err == nil {
		if err := r.Def.Validate(); err != nil {
			return fmt.Errorf("line %d: row without error holds an invalid definition: %v", r.Line, err)
		}
		return nil
	}
	var leaves func(error) error
	leaves = func(err error) error {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				if err := leaves(e); err != nil {
					return err
				}
			}
			return nil
		}
		re, ok := err.(*RowError)
		switch {
		case !ok:
			return fmt.Errorf("line %d: row error %T %q is not a *RowError", r.Line, err, err)
		case re.File != file || re.Row != r.Line:
			return fmt.Errorf("line %d: row error %q names file %q row %d, want %q row %d", r.Line, re, re.File, re.Row, file, r.Line)
		case re.Err == nil:
			return fmt.Errorf("line %d: row error without a reason", r.Line)
		}
		return nil
	}
	return leaves(r.Err)
}

// lineDiff shows the lines that differ between two texts.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %s\n  got  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
