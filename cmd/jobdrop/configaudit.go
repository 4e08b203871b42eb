package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jobdrop/jobdrop/internal/record"
)

// lastConfigFile, in the data dir, holds the flattened configuration this
// node last started with, so that the next start can say what changed.
const lastConfigFile = "config.last.json"

// flatConfig is a configuration as dotted keys and their values:
// "console.listen" → "127.0.0.1:8080", "watch[0].dir" → "./inbox".
// Keys left at their zero value, which means the part's default, are
// left out. Secrets are kept as digests, never as they are.
type flatConfig map[string]string

// flatten turns cfg into a flatConfig through its YAML form, so the keys
// are the ones a user writes.
func flatten(cfg Config) (flatConfig, error) {
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := yaml.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	out := flatConfig{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(strings.TrimPrefix(prefix+"."+k, "."), e)
			}
		case []any:
			for i, e := range v {
				walk(prefix+"["+strconv.Itoa(i)+"]", e)
			}
		case nil:
		default:
			s := fmt.Sprint(v)
			switch s {
			case "", "0", "0s", "false":
				// Unset: the part's default applies.
				return
			}
			if secretKey(prefix) {
				sum := sha256.Sum256([]byte(s))
				s = "secret:" + hex.EncodeToString(sum[:])
			}
			out[prefix] = s
		}
	}
	walk("", tree)
	return out, nil
}

// secretKey reports whether a key's value must not appear in the audit
// trail: passwords and password hashes.
func secretKey(key string) bool {
	return strings.HasSuffix(key, "password") || strings.HasSuffix(key, "password_hash")
}

// describe says how cur differs from prev, key by key, in a line an
// auditor can read; "" when nothing changed.
func (cur flatConfig) describe(prev flatConfig) string {
	var parts []string
	keys := maps.Clone(cur)
	maps.Copy(keys, prev)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		was, had := prev[k]
		now, has := cur[k]
		switch {
		case had && has && was == now:
			continue
		case secretKey(k) && !had:
			parts = append(parts, k+": set")
		case secretKey(k) && !has:
			parts = append(parts, k+": removed")
		case secretKey(k):
			parts = append(parts, k+": changed")
		case !had:
			parts = append(parts, k+": set to "+strconv.Quote(now))
		case !has:
			parts = append(parts, k+": removed (was "+strconv.Quote(was)+")")
		default:
			parts = append(parts, k+": "+strconv.Quote(was)+" → "+strconv.Quote(now))
		}
	}
	return strings.Join(parts, "; ")
}

// auditConfig compares the configuration a node starts with to the one it
// last started with, from the same data dir, and writes a config.changed
// event to the audit trail when they differ (or on a first start). The
// new configuration is remembered only once the event is committed, so a
// start that cannot audit says it again next time.
func auditConfig(ctx context.Context, a auditor, cfg Config, now time.Time) error {
	cur, err := flatten(cfg)
	if err != nil {
		return fmt.Errorf("read the configuration back: %w", err)
	}
	path := filepath.Join(cfg.DataDir, lastConfigFile)
	prev := flatConfig{}
	b, err := os.ReadFile(path)
	first := errors.Is(err, fs.ErrNotExist)
	switch {
	case first:
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(b, &prev); err != nil {
			// A damaged copy is not worth a refusal to start: audit the
			// configuration as if it were the first.
			first, prev = true, flatConfig{}
		}
	}
	detail := cur.describe(prev)
	if first {
		detail = "first start with data dir " + cfg.DataDir + ": " + detail
	}
	if !first && detail == "" {
		return nil
	}
	if err := a.Audit(ctx, nodeEvent(cfg.Node, record.ActionConfigChanged, detail, now)); err != nil {
		return fmt.Errorf("audit the configuration: %w", err)
	}
	out, err := json.MarshalIndent(cur, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// nodeEvent is an audit event of a node about itself: its start, its
// configuration.
func nodeEvent(node, action, detail string, now time.Time) record.Audit {
	a := record.NewAudit(now, node, action, node, record.OutcomeOK)
	a.Detail = detail
	return a
}

// auditor writes audit events; command.Writer is one.
type auditor interface {
	Audit(ctx context.Context, a record.Audit) error
}
