package converters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jobdrop/jobdrop/task"
)

// Kubernetes reads Kubernetes manifests as kubectl writes and applies
// them: one document, several separated by "---", or a List (what
// `kubectl get cronjobs -o yaml` prints); comments, anchors, aliases and
// merge keys are YAML's own. Each CronJob (batch/v1 or batch/v1beta1)
// becomes a cron task named by metadata.name, on the host of the folder's
// defaults, else its namespace ("default" when none), firing to the
// folder's default topic:
//
//   - spec.schedule is a unix cron expression, an @hourly-style macro or
//     @every DURATION (an interval); a CRON_TZ= or TZ= prefix, or
//     spec.timeZone, gives its time zone (both, naming different zones, is
//     a row error); none gives the folder's time zone, else UTC;
//   - spec.suspend: true pauses the task;
//   - spec.startingDeadlineSeconds makes missed occurrences SKIP (no run
//     is ever started later than the deadline; see docs/migrating-from-kubernetes.md);
//     without it, the latest missed occurrence fires once, as Kubernetes
//     starts it;
//   - the pod's container (image, command, args, env values), the
//     concurrency policy, the job template's name, the namespace and where
//     the CronJob stands in the file go into data.
//
// Any other kind (a Job, a Deployment, a ConfigMap…) is a row error
// naming it and its line: a manifest is converted whole or refused, never
// partly ignored.
//
// The zero value is ready to use.
type Kubernetes struct{}

var _ Converter = Kubernetes{}

// kubernetesMaxDocuments bounds the documents and List items of one file.
const kubernetesMaxDocuments = 100_000

// Convert reads the manifest at path; see Converter.
func (Kubernetes) Convert(ctx context.Context, path string, opts Options, emit func(Row) error) error {
	return convertFile(ctx, path, opts, emit, Kubernetes{}.ConvertReader)
}

// k8sObject is the part of any Kubernetes object the converter reads
// before it knows the kind.
type k8sObject struct {
	APIVersion string      `yaml:"apiVersion"`
	Kind       string      `yaml:"kind"`
	Metadata   k8sMetadata `yaml:"metadata"`
	Spec       yaml.Node   `yaml:"spec"`
	Items      []yaml.Node `yaml:"items"`
}

type k8sMetadata struct {
	Name      string `yaml:"name"`
	Namespace string `yaml:"namespace"`
}

// k8sCronJobSpec is what jobdrop reads of a CronJob's spec.
type k8sCronJobSpec struct {
	Schedule                *string `yaml:"schedule"`
	TimeZone                *string `yaml:"timeZone"`
	Suspend                 *bool   `yaml:"suspend"`
	StartingDeadlineSeconds *int64  `yaml:"startingDeadlineSeconds"`
	ConcurrencyPolicy       string  `yaml:"concurrencyPolicy"`
	JobTemplate             struct {
		Metadata k8sMetadata `yaml:"metadata"`
		Spec     struct {
			Template struct {
				Spec struct {
					Containers []k8sContainer `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	} `yaml:"jobTemplate"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string     `yaml:"name"`
		Value     *string    `yaml:"value"`
		ValueFrom *yaml.Node `yaml:"valueFrom"`
	} `yaml:"env"`
}

// ConvertReader reads a manifest from r as Convert does; file is the name
// used in errors.
func (Kubernetes) ConvertReader(ctx context.Context, file string, r io.Reader, opts Options, emit func(Row) error) error {
	defaults, _, derrs := normalizeDefaults(opts.Defaults)
	if len(derrs) > 0 {
		var errs []error
		for _, err := range derrs {
			errs = append(errs, &RowError{File: file, Err: err})
		}
		return errors.Join(errs...)
	}
	k := k8sFile{file: file, defaults: defaults, emit: emit}
	dec := yaml.NewDecoder(r)
	for doc := 1; ; doc++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", file, doc, yamlError(err))
		}
		if doc > kubernetesMaxDocuments {
			return fmt.Errorf("%s: more than %d documents", file, kubernetesMaxDocuments)
		}
		body := &n
		if body.Kind == yaml.DocumentNode {
			if len(body.Content) == 0 {
				continue
			}
			body = body.Content[0]
		}
		if body.Kind == yaml.ScalarNode && body.Tag == "!!null" {
			continue // an empty document: "---" with only comments after it
		}
		if err := k.object(ctx, body, fmt.Sprintf("document %d", doc), k.rows == 0 && doc == 1); err != nil {
			return err
		}
	}
	if k.rows == 0 {
		return fmt.Errorf("%s: %w: no Kubernetes objects (want CronJobs: apiVersion: batch/v1, kind: CronJob)", file, ErrNoRows)
	}
	return nil
}

// k8sFile is the state of one manifest's conversion.
type k8sFile struct {
	file     string
	defaults Defaults
	emit     func(Row) error
	rows     int
	prevLine int
}

// yamlError drops the "yaml: " prefix the YAML package puts on its
// errors and puts a type error's lines on one.
func yamlError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return errors.New(strings.Join(te.Errors, "; "))
	}
	return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
}

// object converts one object found at where; first says it is the file's
// first, where something that is no Kubernetes object means the file is
// none.
func (k *k8sFile) object(ctx context.Context, n *yaml.Node, where string, first bool) error {
	line := n.Line
	if line <= k.prevLine {
		// Two objects on one line (a flow-style List): rows must still
		// come in order, so the later one takes the next line number.
		line = k.prevLine + 1
	}
	fail := func(column, value string, err error) error {
		return k.row(Row{Line: line, Err: &RowError{File: k.file, Row: line, Column: column, Value: clip(value), Err: err}})
	}
	if n.Kind != yaml.MappingNode {
		if first {
			return fmt.Errorf("%s: %s (line %d) is not a Kubernetes object (a mapping with apiVersion and kind); is this a Kubernetes manifest?", k.file, where, n.Line)
		}
		return fail("", "", fmt.Errorf("%s is not a Kubernetes object: want a mapping with apiVersion and kind", where))
	}
	var obj k8sObject
	if err := n.Decode(&obj); err != nil {
		return fail("", "", fmt.Errorf("%s: %w", where, yamlError(err)))
	}
	if obj.APIVersion == "" || obj.Kind == "" {
		if first {
			return fmt.Errorf("%s: %s (line %d) has no apiVersion and kind: not a Kubernetes manifest (a YAML file dropped here is read as one; name other YAML files otherwise or give the folder a converter)", k.file, where, n.Line)
		}
		return fail("kind", "", fmt.Errorf("%s has no apiVersion and kind: want a Kubernetes object", where))
	}
	switch {
	case obj.Kind == "List" || strings.HasSuffix(obj.Kind, "List") && obj.Items != nil:
		if len(obj.Items) > kubernetesMaxDocuments {
			return fmt.Errorf("%s: %s: more than %d items", k.file, where, kubernetesMaxDocuments)
		}
		for i := range obj.Items {
			if i%64 == 63 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("%s: %w", k.file, err)
				}
			}
			if err := k.object(ctx, &obj.Items[i], fmt.Sprintf("%s, items[%d]", where, i), false); err != nil {
				return err
			}
		}
		return nil
	case obj.Kind != "CronJob":
		why := "jobdrop reads CronJobs only; apply it to the cluster, or remove it from the file"
		if obj.Kind == "Job" {
			why = "a Job runs once when applied, it is not a schedule: make it a CronJob, or remove it from the file"
		}
		return fail("kind", obj.Kind, fmt.Errorf("%s, %s %q (line %d): %s", where, obj.Kind, obj.Metadata.Name, n.Line, why))
	case obj.APIVersion != "batch/v1" && obj.APIVersion != "batch/v1beta1":
		return fail("apiVersion", obj.APIVersion, fmt.Errorf("%s, CronJob %q: want batch/v1 or batch/v1beta1", where, obj.Metadata.Name))
	}
	return k.row(k.cronJob(line, where, n, obj))
}

func (k *k8sFile) row(r Row) error {
	k.rows++
	k.prevLine = r.Line
	return k.emit(r)
}

// cronJob converts one CronJob into its row.
func (k *k8sFile) cronJob(line int, where string, n *yaml.Node, obj k8sObject) Row {
	var errs []error
	bad := func(column, value string, err error) {
		errs = append(errs, &RowError{File: k.file, Row: line, Column: column, Value: clip(value), Err: err})
	}
	var spec k8sCronJobSpec
	if obj.Spec.Kind == 0 {
		bad("spec", "", errors.New("missing: a CronJob has a spec with a schedule"))
	} else if err := obj.Spec.Decode(&spec); err != nil {
		bad("spec", "", yamlError(err))
	}

	d := task.Definition{Host: k.defaults.Host, Name: obj.Metadata.Name, Action: task.Action(k.defaults.Action), Topic: k.defaults.Topic,
		Data: map[string]string{}}
	if d.Action == "" {
		d.Action = task.Insert
	}
	ns := obj.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	if d.Host == "" {
		d.Host = ns
	}
	if d.Topic == "" {
		bad("topic", "", errors.New("a CronJob has no topic: set defaults.topic for the folder"))
	}
	d.Data["kubernetes.namespace"] = ns
	d.Data["kubernetes.source"] = fmt.Sprintf("%s: %s, line %d", k.file, where, n.Line)

	// Schedule and time zone.
	var prefixZone string
	switch {
	case spec.Schedule == nil && obj.Spec.Kind != 0:
		bad("spec.schedule", "", errors.New("missing: a CronJob has a schedule such as \"0 2 * * *\""))
	case spec.Schedule != nil:
		expr, zone, freq, err := k8sSchedule(*spec.Schedule)
		if err != nil {
			bad("spec.schedule", *spec.Schedule, err)
		}
		prefixZone = zone
		d.Cron, d.Frequency = expr, freq
		if expr != "" {
			d.CronDialect = task.DialectUnix
		}
	}
	d.Timezone = k.defaults.Timezone
	switch {
	case spec.TimeZone != nil && prefixZone != "" && *spec.TimeZone != prefixZone:
		bad("spec.timeZone", *spec.TimeZone, fmt.Errorf("the schedule's prefix names %s: say the zone once, in spec.timeZone", prefixZone))
	case spec.TimeZone != nil:
		d.Timezone = *spec.TimeZone
		if _, err := time.LoadLocation(d.Timezone); err != nil || d.Timezone == "" || d.Timezone == "Local" {
			bad("spec.timeZone", d.Timezone, errors.New("must be an IANA time zone such as Europe/Paris"))
		}
	case prefixZone != "":
		d.Timezone = prefixZone
	}
	if d.Frequency != nil && d.Timezone != "" {
		d.Timezone = "" // an interval has no time zone
	}

	if spec.Suspend != nil && *spec.Suspend {
		d.Active = task.Ptr(false)
	}
	if s := spec.StartingDeadlineSeconds; s != nil {
		if *s < 0 {
			bad("spec.startingDeadlineSeconds", strconv.FormatInt(*s, 10), errors.New("must be 0 or more seconds"))
		}
		d.Misfire = task.Skip
		d.Data["kubernetes.startingDeadlineSeconds"] = strconv.FormatInt(*s, 10)
	}
	switch spec.ConcurrencyPolicy {
	case "":
		d.Data["kubernetes.concurrencyPolicy"] = "Allow"
	case "Allow", "Forbid", "Replace":
		d.Data["kubernetes.concurrencyPolicy"] = spec.ConcurrencyPolicy
	default:
		bad("spec.concurrencyPolicy", spec.ConcurrencyPolicy, errors.New("must be Allow, Forbid or Replace"))
	}
	if name := spec.JobTemplate.Metadata.Name; name != "" {
		d.Data["kubernetes.job"] = name
	}

	// The pod's containers: one is the command; several are each kept
	// under their name.
	cs := spec.JobTemplate.Spec.Template.Spec.Containers
	if len(cs) == 0 && obj.Spec.Kind != 0 {
		bad("spec.jobTemplate.spec.template.spec.containers", "", errors.New("missing: the job's pod has no container to run"))
	}
	for _, c := range cs {
		prefix := ""
		if len(cs) > 1 {
			prefix = "container." + c.Name + "."
		} else {
			d.Data["container"] = c.Name
		}
		if c.Image != "" {
			d.Data[prefix+"image"] = c.Image
		}
		if c.Command != nil {
			d.Data[prefix+"command"] = jsonArray(c.Command)
		}
		if c.Args != nil {
			d.Data[prefix+"args"] = jsonArray(c.Args)
		}
		for _, e := range c.Env {
			if e.Value != nil {
				d.Data[prefix+"env."+e.Name] = *e.Value
			}
		}
	}

	for _, fe := range task.FieldErrors(d.Validate()) {
		col := fe.Field
		switch col {
		case "cron", "frequency":
			col = "spec.schedule"
		case "timezone":
			col = "spec.timeZone"
		case "name":
			col = "metadata.name"
		case "host":
			if k.defaults.Host == "" {
				col = "metadata.namespace"
			}
		}
		if hasColumn(errs, col) {
			continue // said already
		}
		bad(col, fe.Value, errors.New(fe.Reason))
	}
	if len(errs) > 0 {
		return Row{Line: line, Def: d, Err: joinRowErrors(errs)}
	}
	return Row{Line: line, Def: d}
}

func hasColumn(errs []error, col string) bool {
	for _, e := range errs {
		if re, ok := e.(*RowError); ok && re.Column == col {
			return true
		}
	}
	return false
}

// jsonArray writes a container's command or args as the JSON array it
// is, so that no quoting is lost.
func jsonArray(s []string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// k8sSchedule reads a CronJob's schedule as the CronJob controller does
// (robfig/cron's standard parser): an optional CRON_TZ= or TZ= prefix, then
// five fields, a macro, or @every DURATION. It returns the cron
// expression or, for @every, the interval.
func k8sSchedule(s string) (expr, zone string, freq *task.Frequency, err error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "CRON_TZ=") || strings.HasPrefix(s, "TZ=") {
		prefix, rest, _ := strings.Cut(s, " ")
		_, zone, _ = strings.Cut(prefix, "=")
		if _, lerr := time.LoadLocation(zone); lerr != nil || zone == "" || zone == "Local" {
			return "", "", nil, fmt.Errorf("time zone %q: must be an IANA time zone such as Europe/Paris", zone)
		}
		s = strings.TrimSpace(rest)
	}
	if s == "" {
		return "", zone, nil, errors.New("empty: want five fields (minute hour day-of-month month day-of-week) or a macro such as @daily")
	}
	if strings.HasPrefix(s, "@") {
		word, arg, _ := strings.Cut(s, " ")
		word = strings.ToLower(word)
		if word == "@every" {
			f, err := everyFrequency(strings.TrimSpace(arg))
			return "", zone, f, err
		}
		if word == "@reboot" {
			return "", zone, nil, errors.New("@reboot is not a schedule (nor does Kubernetes accept it): run the job from an init container or a Deployment")
		}
		expr, ok := cronShorthands[word]
		if !ok || strings.TrimSpace(arg) != "" {
			return "", zone, nil, fmt.Errorf("unknown macro %q: want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every DURATION", s)
		}
		return expr, zone, nil, nil
	}
	fields := strings.Fields(s)
	if len(fields) != 5 {
		return "", zone, nil, fmt.Errorf("%d fields: a CronJob's schedule has five (minute hour day-of-month month day-of-week)", len(fields))
	}
	return strings.Join(fields, " "), zone, nil, nil
}

// everyFrequency turns @every's Go duration into an interval in the
// largest unit that divides it. Kubernetes rounds it to whole seconds.
func everyFrequency(s string) (*task.Frequency, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second {
		return nil, fmt.Errorf("@every %q: want a duration of a second or more such as 90m or 1h30m", s)
	}
	f, err := durationFrequency(d.Truncate(time.Second))
	if err != nil {
		return nil, fmt.Errorf("@every %q: too long an interval", s)
	}
	return f, nil
}
