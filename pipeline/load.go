package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	_ "embed"

	"github.com/faucet-dev/faucet/internal/redact"
)

// LoadOptions says how to read a pipeline config.
type LoadOptions struct {
	// Format of the submitted document; FormatAuto detects it (LoadFile goes
	// by the file extension first).
	Format Format
	// Defaults is a config (YAML or JSON) merged under the submitted one:
	// objects merge key by key, scalars and arrays from the submitted config
	// win, and a submitted null removes a default. Errors in it are reported
	// with File "defaults".
	Defaults []byte
	// Sets are "--set key=value" overrides applied over the merged config,
	// before interpolation. The key is a dotted path with [n] for array
	// items (matrix[0].vars.region); missing objects are created. The value
	// is read as JSON when it parses as JSON (5, true, "x", [..], {..}) and
	// as a plain string otherwise.
	Sets []string
	// Env looks up ${env:NAME}; nil means the process environment.
	Env func(string) (string, bool)
	// EnvAllowed, when set, is asked about every ${env:NAME} before it is
	// looked up: a name it refuses is a problem at that string, with the
	// error's text, whether or not the variable is set and whatever its
	// fallback (faucet serve resolves only the names its operator allowed).
	EnvAllowed func(name string) error
	// Files, when set, is asked about every file path a connector's schema
	// marks (FileKeyword) and the dead-letter file, with access "read" or
	// "write": a path it refuses is a problem at that field (faucet serve
	// refuses paths outside its file roots). A glob is passed as written.
	Files func(access, path string) error
	// Now is the run's clock, what ${now…} renders (in its own offset). The
	// zero time means the instant Load starts: a server passes the run's
	// recorded clock instead, so every execution of a run renders the same.
	Now time.Time
	// Catalog lists the connectors and their config schemas. Required.
	Catalog Catalog
}

// The defaults of faucet's own settings when the config leaves them out.
const (
	DefaultMaxConcurrent  = 1
	DefaultOnError        = OnErrorContinue
	DefaultDelivery       = "at_least_once"
	DefaultMaxAttempts    = 3
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 30 * time.Second
)

// DefaultRowID is the row id of the single invocation of a config without a
// matrix.
const DefaultRowID = "default"

//go:embed config.schema.json
var configSchemaJSON []byte

// ConfigSchema returns the JSON Schema of faucet's pipeline config format
// (version 1), for editors and API clients.
func ConfigSchema() json.RawMessage {
	return append(json.RawMessage(nil), configSchemaJSON...)
}

var configSchema = sync.OnceValue(func() *schemaDoc {
	s, err := compileSchema("pipeline-config-v1", configSchemaJSON)
	if err != nil {
		panic(fmt.Sprintf("embedded pipeline config schema: %v", err))
	}
	return s
})

// LoadFile reads a pipeline config file and loads it like Load; problems
// carry the file name. The format follows the extension (.json, .yaml,
// .yml) unless opts.Format says otherwise.
func LoadFile(name string, opts LoadOptions) (*Plan, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read pipeline config: %w", err)
	}
	if opts.Format == FormatAuto {
		switch strings.ToLower(filepath.Ext(name)) {
		case ".json":
			opts.Format = FormatJSON
		case ".yaml", ".yml":
			opts.Format = FormatYAML
		}
	}
	return load(data, opts, name)
}

// Load parses a pipeline config, merges it over opts.Defaults, applies
// opts.Sets, checks faucet's own structure, expands the matrix, interpolates
// each invocation's connector configs and validates them against the
// connectors' schemas. It returns a Plan ready to execute, or an error that
// ConfigProblems breaks into located ConfigErrors.
func Load(data []byte, opts LoadOptions) (*Plan, error) {
	return load(data, opts, "")
}

func load(data []byte, opts LoadOptions, file string) (*Plan, error) {
	if opts.Catalog == nil {
		return nil, errors.New("load pipeline config: no connector catalog")
	}
	if opts.Env == nil {
		opts.Env = os.LookupEnv
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	doc, cerr := parsedDocs.parse(data, opts.Format)
	if cerr != nil {
		cerr.File = file
		return nil, cerr
	}
	l := &loader{opts: opts, file: file, doc: doc, schemas: map[string]*schemaDoc{}, secrets: map[string]bool{}}
	tree := doc.tree
	if len(opts.Defaults) > 0 {
		defaults, derr := parsedDocs.parse(opts.Defaults, FormatAuto)
		if derr != nil {
			derr.File = "defaults"
			return nil, derr
		}
		tree = merge(defaults.tree, tree)
	}
	for _, set := range opts.Sets {
		next, at, serr := applySet(tree, set)
		if serr != nil {
			// Reported with the rest: one pass shows every problem.
			l.probs.add(serr)
			continue
		}
		tree = next
		l.sets = append(l.sets, override{at: at, text: set})
	}
	plan := l.plan(tree)
	if err := l.err(); err != nil {
		return nil, err
	}
	plan.Fingerprint = fingerprint(tree)
	return plan, nil
}

// loader carries the state of one Load.
type loader struct {
	opts    LoadOptions
	file    string
	doc     *document
	probs   problems
	schemas map[string]*schemaDoc
	secrets map[string]bool
	// sets are the --set overrides applied, in order.
	sets []override
	// rows is how many matrix rows the config has.
	rows int
}

// override is one applied --set: the path it set and its text.
type override struct {
	at   path
	text string
}

// report records a problem at p, positioned when p exists in the submitted
// document; row names the matrix row when the value is shared by rows.
func (l *loader) report(p path, row, msg string) {
	l.reportAt(p, l.doc.at(p), row, msg)
}

// reportAt records a problem at p with an explicit position. A problem in a
// value a --set override put there is blamed on that override, not on the
// file's text it replaced.
func (l *loader) reportAt(p path, pos position, row, msg string) {
	e := &ConfigError{File: l.file, Path: p.String(), Line: pos.line, Column: pos.col, Message: msg, at: p}
	if row != "" {
		e.Rows = []string{row}
	}
	if set, ok := l.setOf(p); ok {
		e.File, e.Line, e.Column, e.Set = "", 0, 0, set
	}
	l.probs.add(e)
}

// setOf returns the last --set override whose path holds p.
func (l *loader) setOf(p path) (string, bool) {
	for i := len(l.sets) - 1; i >= 0; i-- {
		if hasPrefix(p, l.sets[i].at) {
			return l.sets[i].text, true
		}
	}
	return "", false
}

func hasPrefix(p, prefix path) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if p[i] != prefix[i] {
			return false
		}
	}
	return true
}

func (l *loader) addSecret(s string) {
	if s != "" {
		l.secrets[s] = true
	}
}

// secretList returns the secrets longest first, so that redacting one never
// leaves part of a longer one visible.
func (l *loader) secretList() []string {
	out := make([]string, 0, len(l.secrets))
	for s := range l.secrets {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// err returns the problems found, with every secret redacted from them.
func (l *loader) err() error {
	if l.probs.empty() {
		return nil
	}
	l.probs.forgetRows(l.rows)
	if len(l.secrets) > 0 {
		r := redact.New(l.secretList())
		for _, e := range l.probs.list {
			e.Message = r.String(e.Message)
		}
	}
	return l.probs.err()
}

// settings are faucet's own fields of a config that passed the structure
// check.
type settings struct {
	Name      string `json:"name"`
	Execution struct {
		MaxConcurrent int     `json:"max_concurrent"`
		OnError       OnError `json:"on_error"`
	} `json:"execution"`
	Delivery   string `json:"delivery"`
	Shard      *Shard `json:"shard"`
	Resilience struct {
		Retry struct {
			MaxAttempts int `json:"max_attempts"`
			Backoff     struct {
				Initial string `json:"initial"`
				Max     string `json:"max"`
			} `json:"backoff"`
		} `json:"retry"`
		DLQ *struct {
			Path string `json:"path"`
		} `json:"dlq"`
		Poison *struct {
			MaxRowAttempts int          `json:"max_row_attempts"`
			Action         PoisonAction `json:"action"`
		} `json:"poison"`
	} `json:"resilience"`
}

func (l *loader) plan(tree any) *Plan {
	root, ok := tree.(map[string]any)
	if !ok {
		l.report(nil, "", fmt.Sprintf("a config is an object with version and pipeline, not a %s", jsonKind(tree)))
		return nil
	}
	version, ok := root["version"]
	if !ok {
		l.report(nil, "", `missing required key "version" (this faucet reads version 1)`)
		return nil
	}
	if version != json.Number("1") {
		l.report(path{"version"}, "", fmt.Sprintf("unsupported version %s; this faucet reads version 1", compact(version)))
		return nil
	}
	before := len(l.probs.list)
	configSchema().check(tree, nil, func(at path, msg string) { l.report(at, "", msg) })
	// Faucet's own fields decode only when their structure is right; the
	// connector configs are checked either way, so that one pass reports
	// every problem.
	var s settings
	if len(l.probs.list) == before {
		raw, _ := json.Marshal(tree)
		if err := json.Unmarshal(raw, &s); err != nil {
			l.report(nil, "", fmt.Sprintf("decode settings: %v", err))
		}
	}
	if s.Delivery == "exactly_once" {
		// Accepting it would promise what no faucet sink keeps: a failed,
		// retried or re-executed run may write records again.
		l.report(path{"delivery"}, "", "delivery exactly_once is not supported: faucet delivers at least once; "+
			"make re-execution idempotent with a keyed sink (write_mode: upsert) instead")
	}
	plan := &Plan{
		Name:       s.Name,
		Execution:  Execution{MaxConcurrent: s.Execution.MaxConcurrent, OnError: s.Execution.OnError},
		Delivery:   s.Delivery,
		Shard:      s.Shard,
		Retry:      l.retry(s),
		DeadLetter: l.deadLetter(s),
	}
	if plan.Execution.MaxConcurrent == 0 {
		plan.Execution.MaxConcurrent = DefaultMaxConcurrent
	}
	if plan.Execution.OnError == "" {
		plan.Execution.OnError = DefaultOnError
	}
	if plan.Delivery == "" {
		plan.Delivery = DefaultDelivery
	}
	plan.Invocations = l.invocations(root)
	plan.Secrets = l.secretList()
	return plan
}

// retry reads resilience.retry, filling in the defaults.
func (l *loader) retry(s settings) Retry {
	r := Retry{MaxAttempts: s.Resilience.Retry.MaxAttempts, InitialBackoff: DefaultInitialBackoff}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	at := path{"resilience", "retry", "backoff"}
	if b := s.Resilience.Retry.Backoff.Initial; b != "" {
		d, err := time.ParseDuration(b)
		if err != nil {
			l.report(at.child("initial"), "", badDuration(b))
		}
		r.InitialBackoff = d
	}
	r.MaxBackoff = max(DefaultMaxBackoff, r.InitialBackoff)
	if b := s.Resilience.Retry.Backoff.Max; b != "" {
		d, err := time.ParseDuration(b)
		if err != nil {
			l.report(at.child("max"), "", badDuration(b))
		}
		r.MaxBackoff = d
		if d < r.InitialBackoff {
			l.report(at.child("max"), "", fmt.Sprintf("max %s is below initial %s", d, r.InitialBackoff))
		}
	}
	return r
}

// deadLetter reads resilience.dlq and resilience.poison: a dlq block alone
// dead-letters a record at its first refusal; a poison block's action
// defaults to dlq, which needs the dlq block.
func (l *loader) deadLetter(s settings) *DeadLetter {
	r := s.Resilience
	if r.DLQ == nil && r.Poison == nil {
		return nil
	}
	d := &DeadLetter{MaxRowAttempts: 1, Action: PoisonDLQ}
	if p := r.Poison; p != nil {
		d.MaxRowAttempts = p.MaxRowAttempts
		if p.Action != "" {
			d.Action = p.Action
		}
	}
	if d.Action == PoisonDLQ && r.DLQ == nil {
		at := path{"resilience", "poison", "action"}
		if _, set := lookup(l.doc.tree, at); !set {
			at = path{"resilience", "poison"}
		}
		l.report(at, "", "poison action dlq needs a resilience.dlq block saying where the dead letters go (dlq: {path: …}); or use action drop or fail")
		return nil
	}
	if r.DLQ != nil {
		d.Path = r.DLQ.Path
		if l.opts.Files != nil {
			if err := l.opts.Files("write", d.Path); err != nil {
				l.report(path{"resilience", "dlq", "path"}, "", err.Error())
			}
		}
	}
	return d
}

// badDuration says what a duration looks like, for the people who wrote one
// wrong, in the words of the config schema's duration title and examples.
func badDuration(s string) string {
	return fmt.Sprintf(`%q is not a duration (a number and a unit: ns, us, ms, s, m or h), such as "500ms", "2s" or "1m30s"`, s)
}

// row is one matrix row as the structure check left it.
type row struct {
	index int // -1 for the implicit single row of a config without a matrix
	id    string
	vars  map[string]any
	over  map[string]any // the row's source/sink overrides
}

func (l *loader) invocations(root map[string]any) []Invocation {
	env := l.opts.Env
	topVars, _ := root["vars"].(map[string]any)
	varsResolver := &resolver{env: env, allowed: l.opts.EnvAllowed, secret: l.addSecret, now: l.opts.Now}
	report := func(at path, msg string) { l.report(at, "", msg) }
	topVars, _ = varsResolver.interpolate(topVars, path{"vars"}, report).(map[string]any)

	matrix, _ := root["matrix"].([]any)
	rows := []row{{index: -1, id: DefaultRowID}}
	if len(matrix) > 0 {
		rows = rows[:0]
		firstSeen := map[string]int{}
		for i, item := range matrix {
			m, ok := item.(map[string]any)
			id, _ := m["id"].(string)
			if !ok || id == "" {
				continue // reported by the structure check
			}
			r := row{index: i, id: id, over: m}
			if prev, dup := firstSeen[r.id]; dup {
				l.report(path{"matrix", i, "id"}, "", fmt.Sprintf("duplicate row id %q (also matrix[%d])", r.id, prev))
			}
			firstSeen[r.id] = i
			rowVars, _ := m["vars"].(map[string]any)
			rowVars, _ = varsResolver.interpolate(rowVars, path{"matrix", i, "vars"}, report).(map[string]any)
			r.vars = make(map[string]any, len(topVars)+len(rowVars))
			for k, v := range topVars {
				r.vars[k] = v
			}
			for k, v := range rowVars {
				r.vars[k] = v
			}
			rows = append(rows, r)
		}
	} else {
		rows[0].vars = topVars
		if rows[0].vars == nil {
			rows[0].vars = map[string]any{}
		}
	}

	l.rows = len(rows)
	pipe, ok := root["pipeline"].(map[string]any)
	if !ok {
		return nil
	}
	out := make([]Invocation, 0, len(rows))
	for _, r := range rows {
		sink := l.connector(RoleSink, pipe, r)
		out = append(out, Invocation{
			RowID:         r.id,
			Source:        l.connector(RoleSource, pipe, r),
			Sink:          sink,
			SinkWriteMode: SinkWriteMode(l.opts.Catalog, sink),
		})
	}
	return out
}

// connector builds one side of one row's invocation: the pipeline's
// connector with the row's override merged over it, interpolated with the
// row's vars, and validated against the connector's schema. Each layer is
// interpolated on its own so a problem is reported where its text is.
func (l *loader) connector(role Role, pipe map[string]any, r row) ConnectorConfig {
	side := string(role)
	basePath := path{"pipeline", side}
	base, _ := pipe[side].(map[string]any)
	typ, _ := base["type"].(string)
	if typ == "" {
		return ConnectorConfig{} // reported by the structure check
	}
	typePath := basePath.child("type")
	baseCfg, _ := base["config"].(map[string]any)

	var over map[string]any
	var overPath path
	if r.index >= 0 {
		over, _ = r.over[side].(map[string]any)
		overPath = path{"matrix", r.index, side}
	}
	if t, ok := over["type"].(string); ok && t != typ {
		typ, typePath, baseCfg = t, overPath.child("type"), nil
	}
	overCfg, _ := over["config"].(map[string]any)

	sharedRow := ""
	if r.index >= 0 {
		sharedRow = r.id
	}
	res := &resolver{env: l.opts.Env, allowed: l.opts.EnvAllowed, vars: r.vars, secret: l.addSecret, now: l.opts.Now}
	// A string that failed to interpolate is one problem: the schema's view
	// of the unexpanded text it kept would only repeat it.
	failed := map[string]bool{}
	cfg := map[string]any{}
	if baseCfg != nil {
		cfg = res.interpolate(baseCfg, basePath.child("config"), func(at path, msg string) {
			failed[at.String()] = true
			// Only a string using vars can fail in one row and not another.
			row := ""
			if v, _ := lookup(baseCfg, at[3:]); strings.Contains(fmt.Sprint(v), "${vars.") {
				row = sharedRow
			}
			l.report(at, row, msg)
		}).(map[string]any)
	}
	var overI map[string]any
	if overCfg != nil {
		overI = res.interpolate(overCfg, overPath.child("config"), func(at path, msg string) {
			failed[at.String()] = true
			l.report(at, "", msg)
		}).(map[string]any)
		cfg = merge(cfg, overI).(map[string]any)
	}

	// at is a location inside cfg: a problem there is reported where its
	// value is written, in the row's override or in the pipeline's config.
	reportCfg := func(at path, msg string) {
		if _, inOverride := lookup(overI, at); inOverride && len(at) > 0 {
			full := append(overPath.child("config"), at...)
			if !failed[full.String()] {
				l.report(full, "", msg)
			}
			return
		}
		at = append(basePath.child("config"), at...)
		if failed[at.String()] {
			return
		}
		pos := l.doc.at(at)
		if pos == (position{}) && len(at) == 3 {
			// The config object itself is missing: point at its connector.
			pos = l.doc.at(basePath)
		}
		l.reportAt(at, pos, sharedRow, msg)
	}
	schema := l.schema(role, typ, typePath, sharedRow)
	if schema != nil {
		schema.secrets(cfg, l.addSecret)
		before := len(l.probs.list)
		schema.check(cfg, nil, reportCfg)
		if l.opts.Files != nil && len(l.probs.list) == before {
			schema.files(cfg, func(at path, access, name string) {
				if err := l.opts.Files(access, name); err != nil {
					reportCfg(at, err.Error())
				}
			})
		}
	}
	raw, _ := json.Marshal(cfg)
	return ConnectorConfig{Type: typ, Config: raw}
}

// schema returns the compiled config schema of connector name in role,
// reporting an unknown connector (with the known ones) at typePath.
func (l *loader) schema(role Role, name string, typePath path, row string) *schemaDoc {
	key := schemaKey(role, name)
	if s, ok := l.schemas[key]; ok {
		return s
	}
	raw, ok := l.opts.Catalog.ConnectorSchema(role, name)
	if !ok {
		l.schemas[key] = nil
		l.report(typePath, row, unknownConnector(l.opts.Catalog, role, name))
		return nil
	}
	if len(raw) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	s, err := connectorSchemas.compile(key, raw)
	if err != nil {
		l.report(typePath, row, fmt.Sprintf("connector %q publishes an unusable config schema: %v", name, err))
	}
	l.schemas[key] = s
	return s
}

// schemaKey names a connector's config schema in the schema caches.
func schemaKey(role Role, name string) string { return string(role) + "/" + name }

// unknownConnector explains why name cannot play role, listing what can.
func unknownConnector(c Catalog, role Role, name string) string {
	known := c.ConnectorNames(role)
	list := "none"
	if len(known) > 0 {
		list = strings.Join(known, ", ")
	}
	other := RoleSink
	if role == RoleSink {
		other = RoleSource
	}
	if _, ok := c.ConnectorSchema(other, name); ok {
		return fmt.Sprintf("connector %q is not a %s (%s connectors: %s)", name, role, role, list)
	}
	return fmt.Sprintf("unknown %s connector %q%s (known: %s)", role, name, suggest(name, known), list)
}

// compact renders a tree value as compact JSON for messages.
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
