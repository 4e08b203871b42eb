package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestLogsAreJSONWhenNotOnATerminal: a service's stderr is a pipe or a
// file, read by a log collector, so it gets JSON unless configured
// otherwise.
func TestLogsAreJSONWhenNotOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format string
		json   bool
	}{
		{"default", "", true},
		{"json", "json", true},
		{"text", "text", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			newLogger(LogConfig{Format: tc.format}, w).Info("console listening", "url", "http://127.0.0.1:8080")
			w.Close()
			line, err := bufio.NewReader(r).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			isJSON := json.Unmarshal([]byte(line), &v) == nil
			if isJSON != tc.json {
				t.Fatalf("format %q wrote %q; JSON: %v, want %v", tc.format, line, isJSON, tc.json)
			}
			if isJSON && (v["msg"] != "console listening" || v["url"] != "http://127.0.0.1:8080" || v["level"] != "INFO") {
				t.Errorf("JSON line %q lacks its message, level or attributes", line)
			}
			if !isJSON && !strings.Contains(line, `msg="console listening"`) {
				t.Errorf("text line %q", line)
			}
		})
	}
}
