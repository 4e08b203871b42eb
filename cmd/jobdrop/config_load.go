package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jobdrop/jobdrop/internal/suggestion"
)

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
