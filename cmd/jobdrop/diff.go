package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// diffAnswer is what a node's POST /api/diff answers.
type diffAnswer struct {
	File      string   `json:"file"`
	Added     int      `json:"added"`
	Changed   int      `json:"changed"`
	Removed   int      `json:"removed"`
	Unchanged int      `json:"unchanged"`
	Scope     int      `json:"scope"`
	Held      string   `json:"held"`
	Lines     []string `json:"lines"`
	Error     string   `json:"error"`
	Rows      []string `json:"rows"`
}

// diffOptions are the flags of jobdrop diff.
type diffOptions struct {
	node, folder, name, user, passwordFile string
	json                                   bool
}

// diffFile asks the node what FILE would change of the tasks that run
// there if dropped into its watched folder, and prints it. Exit status 0:
// no change; 1: changes; 2: the file or the node could not be compared.
func diffFile(ctx context.Context, path string, o diffOptions, stdout, stderr io.Writer) error {
	fail := func(format string, args ...any) error {
		fmt.Fprintf(stderr, "jobdrop diff: "+format+"\n", args...)
		return exitError(2)
	}
	if o.node == "" {
		return fail("--node URL is required: the console of a running node (http://127.0.0.1:8080)")
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return fail("%v", err)
	}
	name := o.name
	if name == "" {
		name = filepath.Base(path)
	}
	q := url.Values{"name": {name}}
	if o.folder != "" {
		q.Set("folder", o.folder)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(o.node, "/")+"/api/diff?"+q.Encode(), bytes.NewReader(content))
	if err != nil {
		return fail("--node %s: %v", o.node, err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if o.user != "" {
		pw, err := os.ReadFile(o.passwordFile)
		if err != nil {
			return fail("--user needs --password-file: %v", err)
		}
		req.SetBasicAuth(o.user, strings.TrimRight(string(pw), "\r\n"))
	}
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return fail("%v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fail("read the answer of %s: %v", o.node, err)
	}
	var a diffAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return fail("%s answered %s: %s", o.node, resp.Status, bytes.TrimSpace(body))
	}
	switch {
	case resp.StatusCode == http.StatusUnprocessableEntity:
		fmt.Fprintf(stderr, "%s: %s\n", name, a.Error)
		for _, r := range a.Rows {
			fmt.Fprintln(stderr, r)
		}
		return exitError(2)
	case resp.StatusCode != http.StatusOK:
		return fail("%s answered %s: %s", o.node, resp.Status, a.Error)
	}
	if o.json {
		stdout.Write(body)
	} else {
		fmt.Fprintf(stdout, "%s against %s: %d added, %d changed, %d removed, %d unchanged\n", name, o.node, a.Added, a.Changed, a.Removed, a.Unchanged)
		for _, l := range a.Lines {
			fmt.Fprintln(stdout, l)
		}
		if a.Held != "" {
			fmt.Fprintf(stdout, "dropped, it would be held for review: %s\n", a.Held)
		}
	}
	if a.Added+a.Changed+a.Removed > 0 {
		return exitError(1)
	}
	return nil
}
