package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/redact"
)

// testCatalog is a Catalog over literal JSON Schemas, shaped like the real
// connectors' so the loader meets realistic schemas.
type testCatalog map[Role]map[string]string

func (c testCatalog) ConnectorSchema(role Role, name string) (json.RawMessage, bool) {
	s, ok := c[role][name]
	return json.RawMessage(s), ok
}

func (c testCatalog) ConnectorNames(role Role) []string {
	var names []string
	for n := range c[role] {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

const fileSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1},
    "delimiter": {"type": "string", "minLength": 1, "maxLength": 1},
    "header": {"type": "boolean"},
    "columns": {"type": "array", "items": {"type": "string"}}
  }
}`

const postgresSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["url"],
  "properties": {
    "url": {"type": "string", "writeOnly": true},
    "table": {"type": "string"},
    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "write_mode": {"enum": ["append", "upsert", "overwrite"]},
    "key": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    "auth": {"$ref": "#/$defs/auth"},
    "code": {"type": "string", "pattern": "^[a-z]+$"}
  },
  "$defs": {
    "auth": {
      "type": "object",
      "properties": {
        "user": {"type": "string"},
        "password": {"type": "string", "writeOnly": true}
      }
    }
  }
}`

var catalog = testCatalog{
	RoleSource: {
		"csv":      fileSchema,
		"jsonl":    fileSchema,
		"postgres": postgresSchema,
		"generate": `{"type":"object","additionalProperties":false,"properties":{"count":{"type":"integer","minimum":0},"seed":{"type":"integer"}}}`,
		"db":       `{"type":"object","additionalProperties":false,"required":["path"],"oneOf":[{"required":["table"]},{"required":["query"]}],"properties":{"path":{"type":"string"},"table":{"type":"string"},"query":{"type":"string"}}}`,
	},
	RoleSink: {
		"csv":      fileSchema,
		"jsonl":    fileSchema,
		"postgres": postgresSchema,
		"stdout":   `{"type":"object","additionalProperties":false}`,
	},
}

func noEnv(string) (string, bool) { return "", false }

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// testOptions fills in the test catalog and an empty environment.
func testOptions(opts LoadOptions) LoadOptions {
	if opts.Catalog == nil {
		opts.Catalog = catalog
	}
	if opts.Env == nil {
		opts.Env = noEnv
	}
	return opts
}

func mustLoad(t *testing.T, src string, opts LoadOptions) *Plan {
	t.Helper()
	plan, err := Load([]byte(src), testOptions(opts))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return plan
}

// loadErr loads src expecting failure and returns its problems.
func loadErr(t *testing.T, src string, opts LoadOptions) []*ConfigError {
	t.Helper()
	plan, err := Load([]byte(src), testOptions(opts))
	if err == nil {
		t.Fatalf("Load succeeded, want an error; plan: %+v", plan)
	}
	probs := ConfigProblems(err)
	if len(probs) == 0 {
		t.Fatalf("error %q carries no ConfigError", err)
	}
	return probs
}

// wantProblem asserts that probs holds a problem at path with the position
// and a message containing msg.
func wantProblem(t *testing.T, probs []*ConfigError, p string, line, col int, msg string) *ConfigError {
	t.Helper()
	for _, e := range probs {
		if e.Path == p && strings.Contains(e.Message, msg) {
			if e.Line != line || e.Column != col {
				t.Errorf("%s: at %d:%d, want %d:%d (%v)", p, e.Line, e.Column, line, col, e)
			}
			return e
		}
	}
	t.Fatalf("no problem at %q containing %q; got:\n%v", p, msg, ConfigErrors(probs))
	return nil
}

func configOf(t *testing.T, c ConnectorConfig) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.Config, &m); err != nil {
		t.Fatalf("config of %s is not a JSON object: %v", c.Type, err)
	}
	return m
}

const minimalYAML = `version: 1
name: orders
pipeline:
  source:
    type: csv
    config:
      path: in.csv
      delimiter: ";"
  sink:
    type: jsonl
    config: {path: out.jsonl}
`

func TestLoadMinimalYAML(t *testing.T) {
	plan := mustLoad(t, minimalYAML, LoadOptions{})
	if plan.Name != "orders" {
		t.Errorf("Name = %q", plan.Name)
	}
	if len(plan.Invocations) != 1 {
		t.Fatalf("%d invocations, want 1", len(plan.Invocations))
	}
	inv := plan.Invocations[0]
	if inv.RowID != DefaultRowID || inv.Source.Type != "csv" || inv.Sink.Type != "jsonl" {
		t.Errorf("invocation = %+v", inv)
	}
	if got := configOf(t, inv.Source); !reflect.DeepEqual(got, map[string]any{"path": "in.csv", "delimiter": ";"}) {
		t.Errorf("source config = %v", got)
	}
	want := Execution{MaxConcurrent: 1, OnError: OnErrorContinue}
	if plan.Execution != want {
		t.Errorf("Execution = %+v, want %+v", plan.Execution, want)
	}
	if plan.Delivery != "at_least_once" || plan.Shard != nil {
		t.Errorf("Delivery = %q, Shard = %v", plan.Delivery, plan.Shard)
	}
	if plan.Retry != (Retry{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: 30 * time.Second}) {
		t.Errorf("Retry = %+v", plan.Retry)
	}
	if len(plan.Fingerprint) != 64 {
		t.Errorf("Fingerprint = %q, want 64 hex digits", plan.Fingerprint)
	}
	if len(plan.Secrets) != 0 {
		t.Errorf("Secrets = %v, want none", plan.Secrets)
	}
}

func TestLoadSettings(t *testing.T) {
	plan := mustLoad(t, minimalYAML+`execution: {max_concurrent: 4, on_error: stop}
delivery: at_least_once
shard: {count: 8}
resilience:
  retry:
    max_attempts: 5
    backoff: {initial: 250ms, max: 1m30s}
`, LoadOptions{})
	if plan.Execution != (Execution{MaxConcurrent: 4, OnError: OnErrorStop}) {
		t.Errorf("Execution = %+v", plan.Execution)
	}
	if plan.Delivery != "at_least_once" || plan.Shard == nil || plan.Shard.Count != 8 {
		t.Errorf("Delivery = %q, Shard = %+v", plan.Delivery, plan.Shard)
	}
	if plan.Retry != (Retry{MaxAttempts: 5, InitialBackoff: 250 * time.Millisecond, MaxBackoff: 90 * time.Second}) {
		t.Errorf("Retry = %+v", plan.Retry)
	}

	plan = mustLoad(t, minimalYAML+"resilience: {retry: {backoff: {initial: 2m}}}\n", LoadOptions{})
	if plan.Retry.MaxBackoff != 2*time.Minute {
		t.Errorf("an initial backoff above the default max should lift max; got %+v", plan.Retry)
	}

	probs := loadErr(t, minimalYAML+"resilience: {retry: {backoff: {initial: 10s, max: 1s}}}\n", LoadOptions{})
	wantProblem(t, probs, "resilience.retry.backoff.max", 12, 46, "below initial")
	probs = loadErr(t, minimalYAML+"resilience: {retry: {backoff: {initial: soon}}}\n", LoadOptions{})
	wantProblem(t, probs, "resilience.retry.backoff.initial", 12, 32, `"soon" is not a duration (a number and a unit: ns, us, ms, s, m or h), such as "500ms", "2s" or "1m30s"`)
	probs = loadErr(t, minimalYAML+"execution: {max_concurrent: 0, on_error: later}\n", LoadOptions{})
	wantProblem(t, probs, "execution.max_concurrent", 12, 13, "minimum")
	wantProblem(t, probs, "execution.on_error", 12, 32, "continue")
}

func TestLoadJSONAndFingerprint(t *testing.T) {
	yamlPlan := mustLoad(t, minimalYAML, LoadOptions{})
	jsonDoc := `{"pipeline": {"sink": {"config": {"path": "out.jsonl"}, "type": "jsonl"},
	  "source": {"type": "csv", "config": {"delimiter": ";", "path": "in.csv"}}},
	  "name": "orders", "version": 1.0}`
	for _, format := range []Format{FormatJSON, FormatAuto} {
		jsonPlan := mustLoad(t, jsonDoc, LoadOptions{Format: format})
		if jsonPlan.Fingerprint != yamlPlan.Fingerprint {
			t.Errorf("format %q: the same config in JSON fingerprints %s, YAML %s", format, jsonPlan.Fingerprint, yamlPlan.Fingerprint)
		}
		if !reflect.DeepEqual(jsonPlan.Invocations, yamlPlan.Invocations) {
			t.Errorf("format %q: invocations differ:\n%+v\n%+v", format, jsonPlan.Invocations, yamlPlan.Invocations)
		}
	}
	other := mustLoad(t, strings.Replace(minimalYAML, "in.csv", "in2.csv", 1), LoadOptions{})
	if other.Fingerprint == yamlPlan.Fingerprint {
		t.Error("different configs share a fingerprint")
	}
}

func TestFingerprintIgnoresEnvironment(t *testing.T) {
	src := strings.Replace(minimalYAML, "in.csv", "${env:INPUT}", 1)
	a := mustLoad(t, src, LoadOptions{Env: envOf(map[string]string{"INPUT": "a.csv"})})
	b := mustLoad(t, src, LoadOptions{Env: envOf(map[string]string{"INPUT": "b.csv"})})
	if a.Fingerprint != b.Fingerprint {
		t.Error("fingerprint depends on environment values; it must be computed before interpolation")
	}
	if configOf(t, a.Invocations[0].Source)["path"] != "a.csv" {
		t.Errorf("source = %s", a.Invocations[0].Source.Config)
	}
}

func TestMalformedDocuments(t *testing.T) {
	cases := []struct {
		name      string
		format    Format
		src       string
		line, col int
		msg       string
	}{
		{"yaml unclosed flow sequence", FormatYAML, "version: 1\npipeline:\n  source: [1, 2\n  sink: x\n", 4, 3, "invalid YAML: ',' or ']' must be specified"},
		{"yaml nested mapping on one line", FormatYAML, "version: 1\nname: a: b\n", 2, 7, "invalid YAML: mapping value is not allowed"},
		{"yaml duplicate key", FormatYAML, "version: 1\nname: a\nname: b\n", 3, 1, "already defined"},
		{"yaml second document", FormatYAML, "version: 1\n---\nname: x\n", 3, 5, "one YAML document"},
		{"json missing comma", FormatJSON, "{\n  \"version\": 1\n  \"name\": \"x\"\n}", 3, 3, "invalid JSON"},
		{"json unexpected end", FormatJSON, "{\n  \"version\": 1,\n", 3, 1, "unexpected end"},
		{"json duplicate key", FormatJSON, "{\"version\": 1,\n \"version\": 1}", 2, 2, `duplicate key "version" (first at line 1, column 2)`},
		{"json trailing data", FormatJSON, "{\"version\": 1} {}", 1, 16, "after top-level value"},
		{"json detected, broken", FormatAuto, "{\"version\": 1,\n  \"name\": ,}", 2, 11, "invalid JSON"},
		{"yaml flow mapping detected", FormatAuto, "{version: 1, name: [}", 1, 21, "invalid YAML"},
		{"empty yaml", FormatYAML, "# nothing here\n", 0, 0, "empty config"},
		{"empty json", FormatJSON, "  \n", 0, 0, "empty config"},
		{"yaml infinity", FormatYAML, "version: 1\nname: .inf\n", 2, 1, "infinity"},
		{"json after a byte order mark", FormatAuto, "\xef\xbb\xbf{\"version\": 1,\n\"name\": x}", 2, 9, "invalid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			probs := loadErr(t, tc.src, LoadOptions{Format: tc.format})
			if len(probs) != 1 {
				t.Fatalf("got %d problems, want 1: %v", len(probs), ConfigErrors(probs))
			}
			e := probs[0]
			if e.Line != tc.line || e.Column != tc.col || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("got %d:%d %q, want %d:%d containing %q", e.Line, e.Column, e.Message, tc.line, tc.col, tc.msg)
			}
			if strings.Contains(e.Message, "\n") {
				t.Errorf("message spans lines: %q", e.Message)
			}
		})
	}
}

func TestStructureErrors(t *testing.T) {
	src := `version: 1
pipeline:
  sourc:
    type: csv
  sink:
    typ: jsonl
matrix:
  - id: a
    colour: red
extra: true
`
	probs := loadErr(t, src, LoadOptions{})
	e := wantProblem(t, probs, "pipeline.sourc", 3, 3, `unknown key; did you mean "source"?`)
	if got := e.Error(); got != `line 3, column 3: pipeline.sourc: unknown key; did you mean "source"?` {
		t.Errorf("Error() = %q", got)
	}
	wantProblem(t, probs, "pipeline", 2, 1, `missing required key "source"`)
	wantProblem(t, probs, "pipeline.sink.typ", 6, 5, `did you mean "type"?`)
	wantProblem(t, probs, "pipeline.sink", 5, 3, `missing required key "type"`)
	wantProblem(t, probs, "matrix[0].colour", 9, 5, "unknown key")
	wantProblem(t, probs, "extra", 10, 1, "unknown key")
	for i := 1; i < len(probs); i++ {
		if probs[i-1].Line > probs[i].Line {
			t.Errorf("problems out of document order: %v", ConfigErrors(probs))
		}
	}
}

func TestVersion(t *testing.T) {
	probs := loadErr(t, "pipeline: {}\n", LoadOptions{})
	wantProblem(t, probs, "", 0, 0, `missing required key "version"`)
	probs = loadErr(t, strings.Replace(minimalYAML, "version: 1", "version: 2", 1), LoadOptions{})
	wantProblem(t, probs, "version", 1, 1, "unsupported version 2; this faucet reads version 1")
	probs = loadErr(t, "- 1\n- 2\n", LoadOptions{})
	wantProblem(t, probs, "", 0, 0, "not a array")
}

// TestExactlyOnceIsRefused: faucet cannot keep an exactly-once promise, so
// a config asking for it fails to load instead of running at least once.
func TestExactlyOnceIsRefused(t *testing.T) {
	probs := loadErr(t, minimalYAML+"delivery: exactly_once\n", LoadOptions{})
	wantProblem(t, probs, "delivery", 12, 1, "delivery exactly_once is not supported")
	plan, err := Load([]byte(minimalYAML+"delivery: at_least_once\n"), testOptions(LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Delivery != "at_least_once" {
		t.Errorf("delivery = %q, want at_least_once", plan.Delivery)
	}
}

func TestUnknownConnector(t *testing.T) {
	src := strings.Replace(minimalYAML, "type: csv", "type: cvs", 1)
	probs := loadErr(t, src, LoadOptions{})
	e := wantProblem(t, probs, "pipeline.source.type", 5, 5, `unknown source connector "cvs"`)
	for _, want := range []string{`did you mean "csv"?`, "known: csv, db, generate, jsonl, postgres"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q lacks %q", e.Message, want)
		}
	}
	src = strings.Replace(minimalYAML, "type: csv", "type: stdout", 1)
	probs = loadErr(t, src, LoadOptions{})
	wantProblem(t, probs, "pipeline.source.type", 5, 5, `connector "stdout" is not a source (source connectors: csv, db, generate, jsonl, postgres)`)
}

func TestConnectorSchemaViolations(t *testing.T) {
	src := `version: 1
pipeline:
  source:
    type: csv
    config:
      delimiter: ";;"
      header: "yes"
      colums: [a]
  sink:
    type: postgres
    config:
      url: postgres://u:hunter2@db/x
      write_mode: merge
      key: []
`
	probs := loadErr(t, src, LoadOptions{})
	wantProblem(t, probs, "pipeline.source.config", 5, 5, `missing required key "path"`)
	wantProblem(t, probs, "pipeline.source.config.delimiter", 6, 7, "maxLength")
	wantProblem(t, probs, "pipeline.source.config.header", 7, 7, "got string, want boolean")
	wantProblem(t, probs, "pipeline.source.config.colums", 8, 7, `unknown key; did you mean "columns"?`)
	wantProblem(t, probs, "pipeline.sink.config.write_mode", 13, 7, "append")
	wantProblem(t, probs, "pipeline.sink.config.key", 14, 7, "minItems")
	if len(probs) != 6 {
		t.Errorf("got %d problems, want 6:\n%v", len(probs), ConfigErrors(probs))
	}
}

func TestSchemaErrorsNeverShowSecrets(t *testing.T) {
	src := `version: 1
pipeline:
  source: {type: csv, config: {path: in.csv}}
  sink:
    type: postgres
    config:
      url: ${env:PG_URL}
      code: ${env:CODE}
`
	_, err := Load([]byte(src), LoadOptions{Catalog: catalog, Env: envOf(map[string]string{"PG_URL": "postgres://x", "CODE": "S3CRET"})})
	if err == nil {
		t.Fatal("a code that breaks its pattern loaded")
	}
	if strings.Contains(err.Error(), "S3CRET") || !strings.Contains(err.Error(), redact.Mask) {
		t.Errorf("error leaks or does not redact the secret: %v", err)
	}
}

func TestMatrix(t *testing.T) {
	src := `version: 1
vars: {table: orders, region: us, port: 5432}
pipeline:
  source:
    type: postgres
    config:
      url: postgres://db/${vars.region}
      table: ${vars.table}
      port: ${vars.port}
      auth: {user: reader}
  sink:
    type: jsonl
    config: {path: "out-${vars.region}.jsonl"}
matrix:
  - id: us
  - id: eu
    vars: {region: eu}
    source:
      config:
        auth: {password: pw}
  - id: file
    source:
      type: csv
      config: {path: "${vars.table}.csv"}
`
	plan := mustLoad(t, src, LoadOptions{})
	var ids []string
	for _, inv := range plan.Invocations {
		ids = append(ids, inv.RowID)
	}
	if !reflect.DeepEqual(ids, []string{"us", "eu", "file"}) {
		t.Fatalf("row ids = %v", ids)
	}
	us := configOf(t, plan.Invocations[0].Source)
	if us["url"] != "postgres://db/us" || us["port"] != float64(5432) || us["table"] != "orders" {
		t.Errorf("us source = %v", us)
	}
	eu := configOf(t, plan.Invocations[1].Source)
	wantAuth := map[string]any{"user": "reader", "password": "pw"}
	if eu["url"] != "postgres://db/eu" || !reflect.DeepEqual(eu["auth"], wantAuth) {
		t.Errorf("eu source = %v (want the row override deep-merged and row vars applied)", eu)
	}
	if got := configOf(t, plan.Invocations[1].Sink)["path"]; got != "out-eu.jsonl" {
		t.Errorf("eu sink path = %v", got)
	}
	file := plan.Invocations[2].Source
	if file.Type != "csv" || !reflect.DeepEqual(configOf(t, file), map[string]any{"path": "orders.csv"}) {
		t.Errorf("a row that changes the type must not inherit the other connector's config; got %s %s", file.Type, file.Config)
	}
	wantSecrets := []string{"postgres://db/eu", "postgres://db/us", "pw"}
	if !reflect.DeepEqual(plan.Secrets, wantSecrets) {
		t.Errorf("Secrets = %v, want %v", plan.Secrets, wantSecrets)
	}
}

func TestMatrixErrorsAreAttributed(t *testing.T) {
	src := `version: 1
pipeline:
  source:
    type: postgres
    config: {url: "postgres://db", port: "${vars.port}", code: "${env:CODE}"}
  sink: {type: jsonl, config: {path: out.jsonl}}
matrix:
  - id: a
    vars: {port: 5432}
  - id: b
    vars: {port: 70000}
  - id: c
    vars: {port: 1}
    source:
      config: {port: zero}
  - id: a
`
	probs := loadErr(t, src, LoadOptions{})
	e := wantProblem(t, probs, "pipeline.source.config.port", 5, 36, "maximum")
	if strings.Join(e.Rows, ",") != "b" {
		t.Errorf("Row = %q, want b", strings.Join(e.Rows, ","))
	}
	if !strings.HasSuffix(e.Error(), `(matrix row "b")`) {
		t.Errorf("Error() = %q", e.Error())
	}
	e = wantProblem(t, probs, "matrix[2].source.config.port", 15, 16, "got string, want integer")
	if strings.Join(e.Rows, ",") != "" {
		t.Errorf("a problem in a row's own text needs no row annotation; got %q", strings.Join(e.Rows, ","))
	}
	wantProblem(t, probs, "matrix[3].id", 16, 5, `duplicate row id "a" (also matrix[0])`)
	e = wantProblem(t, probs, "pipeline.source.config.port", 5, 36, `undefined var "port"`)
	if strings.Join(e.Rows, ",") != "a" {
		t.Errorf("Row = %q, want a (the row without the var)", strings.Join(e.Rows, ","))
	}
	e = wantProblem(t, probs, "pipeline.source.config.code", 5, 58, "environment variable CODE is not set")
	if strings.Join(e.Rows, ",") != "" {
		t.Errorf("an environment variable fails in every row alike; Row = %q", strings.Join(e.Rows, ","))
	}
}

func TestInterpolation(t *testing.T) {
	env := envOf(map[string]string{"HOST": "db.internal", "EMPTY": "", "TOKEN": "t0k"})
	cases := []struct {
		in   string
		want any
	}{
		{"plain", "plain"},
		{"${env:HOST}", "db.internal"},
		{"https://${env:HOST}:${vars.port}/x", "https://db.internal:5432/x"},
		{"${env:MISSING:-fallback}", "fallback"},
		{"${env:EMPTY:-fallback}", "fallback"},
		{"${env:EMPTY}", ""},
		{"${vars.port}", json.Number("5432")},
		{"${vars.flag}", true},
		{"${vars.obj}", map[string]any{"k": "v"}},
		{"on=${vars.flag}", "on=true"},
		{"$${env:HOST} costs $5", "${env:HOST} costs $5"},
		{"$$${env:HOST}", "$${env:HOST}"},
		{"${vars.token}", "t0k"},
	}
	vars := map[string]any{"port": json.Number("5432"), "flag": true, "obj": map[string]any{"k": "v"}, "token": "t0k"}
	for _, tc := range cases {
		var secrets []string
		r := &resolver{env: env, vars: vars, secret: func(s string) { secrets = append(secrets, s) }}
		got, err := r.expand(tc.in)
		if err != nil {
			t.Errorf("expand(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("expand(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
		if strings.Contains(tc.in, "${env:HOST}") && !strings.Contains(tc.in, "$${env:HOST}") && !reflect.DeepEqual(secrets, []string{"db.internal"}) {
			t.Errorf("expand(%q) collected secrets %v, want the env value", tc.in, secrets)
		}
	}

	bad := []struct{ in, msg string }{
		{"${env:NOPE}", "environment variable NOPE is not set"},
		{"${vars.nope}", `undefined var "nope"`},
		{"${vars.prot}", `did you mean "port"?`},
		{"${HOST}", `unknown reference "${HOST}"`},
		{"x ${env:HOST", "unterminated reference"},
		{"x-${vars.obj}", `var "obj" holds a object`},
		{"${env:1X}", "invalid environment variable name"},
	}
	for _, tc := range bad {
		r := &resolver{env: env, vars: vars, secret: func(string) {}}
		if _, err := r.expand(tc.in); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("expand(%q) error = %v, want one containing %q", tc.in, err, tc.msg)
		}
	}

	r := &resolver{env: env, secret: func(string) {}}
	if _, err := r.expand("${vars.port}"); err == nil || !strings.Contains(err.Error(), "vars cannot refer to other vars") {
		t.Errorf("a var referring to a var: %v", err)
	}
}

func TestInterpolationErrorsInDocument(t *testing.T) {
	src := `version: 1
vars:
  base: ${env:BASE}
  self: ${vars.base}
pipeline:
  source: {type: csv, config: {path: "${env:IN}"}}
  sink:
    type: jsonl
    config:
      path: ${vars.out}
      columns: ["${oops}"]
`
	probs := loadErr(t, src, LoadOptions{})
	wantProblem(t, probs, "vars.base", 3, 3, "environment variable BASE is not set")
	wantProblem(t, probs, "vars.self", 4, 3, "vars cannot refer to other vars")
	wantProblem(t, probs, "pipeline.source.config.path", 6, 32, "environment variable IN is not set")
	wantProblem(t, probs, "pipeline.sink.config.path", 10, 7, `undefined var "out"`)
	wantProblem(t, probs, "pipeline.sink.config.columns[0]", 11, 17, `unknown reference "${oops}"`)
	if len(probs) != 5 {
		t.Errorf("got %d problems, want 5:\n%v", len(probs), ConfigErrors(probs))
	}
}

func TestSecretsCollected(t *testing.T) {
	src := `version: 1
vars: {dsn: "postgres://app:${env:PG_PASSWORD}@db/app"}
pipeline:
  source: {type: csv, config: {path: "${env:INPUT}"}}
  sink:
    type: postgres
    config:
      url: ${vars.dsn}
      table: t
      auth: {user: app, password: literal-pw}
`
	plan := mustLoad(t, src, LoadOptions{Env: envOf(map[string]string{"PG_PASSWORD": "pa55", "INPUT": "in.csv"})})
	want := []string{"postgres://app:pa55@db/app", "literal-pw", "in.csv", "pa55"}
	if !reflect.DeepEqual(plan.Secrets, want) {
		t.Errorf("Secrets = %v, want %v (env values and writeOnly fields, longest first)", plan.Secrets, want)
	}
}

func TestDefaults(t *testing.T) {
	defaults := `version: 1
execution: {max_concurrent: 2}
resilience: {retry: {max_attempts: 7}}
pipeline:
  sink:
    type: jsonl
    config: {path: default.jsonl, columns: [a, b]}
`
	src := `version: 1
pipeline:
  source: {type: csv, config: {path: in.csv}}
  sink:
    config: {columns: [c]}
execution: {on_error: stop}
`
	plan := mustLoad(t, src, LoadOptions{Defaults: []byte(defaults)})
	if plan.Execution != (Execution{MaxConcurrent: 2, OnError: OnErrorStop}) || plan.Retry.MaxAttempts != 7 {
		t.Errorf("defaults not merged under the config: %+v %+v", plan.Execution, plan.Retry)
	}
	sink := plan.Invocations[0].Sink
	if sink.Type != "jsonl" || !reflect.DeepEqual(configOf(t, sink), map[string]any{"path": "default.jsonl", "columns": []any{"c"}}) {
		t.Errorf("sink = %s %s; want the default type and path, the submitted array replacing the default one", sink.Type, sink.Config)
	}
	again := mustLoad(t, src, LoadOptions{Defaults: []byte(strings.Replace(defaults, "max_concurrent: 2", "max_concurrent: 3", 1))})
	if again.Fingerprint == plan.Fingerprint {
		t.Error("the fingerprint must cover the merged config, defaults included")
	}

	probs := loadErr(t, src, LoadOptions{Defaults: []byte("execution: [\n")})
	if probs[0].File != "defaults" || probs[0].Line == 0 {
		t.Errorf("a broken defaults document: %v", probs[0])
	}
	probs = loadErr(t, src, LoadOptions{Defaults: []byte("execution: {max_concurent: 2}\n")})
	e := wantProblem(t, probs, "execution.max_concurent", 0, 0, "unknown key")
	if e.Line != 0 {
		t.Errorf("a key from the defaults has no position in the submitted document: %v", e)
	}
}

func TestAlternativesAndNullOverrides(t *testing.T) {
	src := `version: 1
pipeline:
  source: {type: db, config: {path: a.db, table: t}}
  sink: {type: jsonl, config: {path: out.jsonl}}
matrix:
  - id: whole
  - id: both
    source: {config: {query: "SELECT 1"}}
  - id: neither
    source: {config: {table: null}}
  - id: switched
    source: {config: {table: null, query: "SELECT 2"}}
`
	probs := loadErr(t, src, LoadOptions{})
	e := wantProblem(t, probs, "pipeline.source.config", 3, 22, `set only one of "table", "query"`)
	if strings.Join(e.Rows, ",") != "both" {
		t.Errorf("Row = %q", strings.Join(e.Rows, ","))
	}
	e = wantProblem(t, probs, "pipeline.source.config", 3, 22, `set one of "table", "query"`)
	if strings.Join(e.Rows, ",") != "neither" {
		t.Errorf("Row = %q", strings.Join(e.Rows, ","))
	}
	if len(probs) != 2 {
		t.Errorf("got %d problems, want 2:\n%v", len(probs), ConfigErrors(probs))
	}

	src = strings.Replace(src, "  - id: both\n    source: {config: {query: \"SELECT 1\"}}\n  - id: neither\n    source: {config: {table: null}}\n", "", 1)
	plan := mustLoad(t, src, LoadOptions{})
	if got := configOf(t, plan.Invocations[1].Source); !reflect.DeepEqual(got, map[string]any{"path": "a.db", "query": "SELECT 2"}) {
		t.Errorf("a null override must remove the inherited table: %v", got)
	}

	// With defaults, a submitted null removes the default; a null for a
	// key the defaults lack stays a value.
	defaults := "pipeline: {sink: {config: {delimiter: \",\"}}}\n"
	plan = mustLoad(t, minimalYAML+"", LoadOptions{Defaults: []byte(strings.Replace(defaults, "sink", "source", 1))})
	if got := configOf(t, plan.Invocations[0].Source)["delimiter"]; got != ";" {
		t.Errorf("the submitted value must win over the default: %v", got)
	}
	withNull := strings.Replace(minimalYAML, "config: {path: out.jsonl}", "config: {path: out.jsonl, delimiter: null}", 1)
	plan = mustLoad(t, withNull, LoadOptions{Defaults: []byte(defaults)})
	if _, ok := configOf(t, plan.Invocations[0].Sink)["delimiter"]; ok {
		t.Errorf("a null must remove the default: %s", plan.Invocations[0].Sink.Config)
	}
	probs = loadErr(t, withNull, LoadOptions{})
	wantProblem(t, probs, "pipeline.sink.config.delimiter", 11, 31, "got null, want string")
}

func TestSets(t *testing.T) {
	src := minimalYAML + "matrix:\n  - id: a\n  - id: b\n"
	plan := mustLoad(t, src, LoadOptions{Sets: []string{
		"pipeline.source.config.path=other.csv",
		"execution.max_concurrent=3",
		"matrix[1].vars={\"x\": 1}",
		"pipeline.sink.config.columns=[\"a\"]",
		"name=\"quoted\"",
	}})
	if got := configOf(t, plan.Invocations[0].Source)["path"]; got != "other.csv" {
		t.Errorf("source path = %v", got)
	}
	if plan.Execution.MaxConcurrent != 3 || plan.Name != "quoted" {
		t.Errorf("Execution = %+v, Name = %q", plan.Execution, plan.Name)
	}
	if got := configOf(t, plan.Invocations[0].Sink)["columns"]; !reflect.DeepEqual(got, []any{"a"}) {
		t.Errorf("sink columns = %v", got)
	}
	base := mustLoad(t, src, LoadOptions{})
	if base.Fingerprint == plan.Fingerprint {
		t.Error("--set overrides must change the fingerprint")
	}

	for set, msg := range map[string]string{
		"novalue":                  "want key.path=value",
		"a..b=1":                   "empty key",
		"matrix[9].id=x":           "no array item [9]",
		"name.first=x":             "cannot set key \"first\" inside a string",
		"matrix[x]=1":              "bad index",
		"execution.max_concurrent": "want key.path=value",
	} {
		probs := loadErr(t, src, LoadOptions{Sets: []string{set}})
		if !strings.Contains(probs[0].Message, msg) || probs[0].Set != set || !strings.HasPrefix(probs[0].Error(), "--set "+set+": ") {
			t.Errorf("--set %s: %v, want %q blamed on the override", set, probs[0], msg)
		}
	}

	// A value an override put in place is the override's problem, even where
	// the file had a value of its own (with a position) before.
	withFile := src + "execution: {max_concurrent: 2}\n"
	probs := loadErr(t, withFile, LoadOptions{Sets: []string{"execution.max_concurrent=many", "pipeline.source.config.path=3"}})
	e := wantProblem(t, probs, "execution.max_concurrent", 0, 0, "got string, want integer")
	if e.Set != "execution.max_concurrent=many" || e.File != "" || e.Error() != "--set execution.max_concurrent=many: execution.max_concurrent: got string, want integer" {
		t.Errorf("the problem of a --set value is blamed on %q: %v", e.Set, e)
	}
	e = wantProblem(t, probs, "pipeline.source.config.path", 0, 0, "want string")
	if e.Set != "pipeline.source.config.path=3" {
		t.Errorf("a connector config value set by --set is blamed on %q: %v", e.Set, e)
	}
	// A wrong override does not hide the file's own problems.
	probs = loadErr(t, strings.Replace(src, "version: 1\n", "version: 1\nnmae: x\n", 1), LoadOptions{Sets: []string{"novalue"}})
	if len(probs) != 2 {
		t.Errorf("got %d problems, want the override's and the file's:\n%v", len(probs), ConfigErrors(probs))
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "pipeline.yml")
	if err := os.WriteFile(good, []byte(minimalYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	plan, err := LoadFile(good, LoadOptions{Catalog: catalog, Env: noEnv})
	if err != nil || plan.Invocations[0].Source.Type != "csv" {
		t.Fatalf("LoadFile: %v", err)
	}

	// A .json file is parsed as JSON, so its errors are JSON's.
	bad := filepath.Join(dir, "pipeline.json")
	if err := os.WriteFile(bad, []byte("{\n  \"version\": 1,\n  \"pipeline\": {\"source\": {\"type\": \"csv\"}, \"sink\": {\"type\": \"jsonl\", \"config\": {\"path\": \"o\"}}},\n  \"nmae\": \"x\"\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadFile(bad, LoadOptions{Catalog: catalog, Env: noEnv})
	probs := ConfigProblems(err)
	if len(probs) != 2 {
		t.Fatalf("got %v, want 2 problems: faucet's own and the connector's, together", err)
	}
	if got := probs[1].Error(); got != bad+`:4:3: nmae: unknown key; did you mean "name"?` {
		t.Errorf("Error() = %q", got)
	}

	// Connector configs are checked whether or not faucet's own structure is sound.
	fixed := strings.Replace(string(mustRead(t, bad)), `"nmae"`, `"name"`, 1)
	if err := os.WriteFile(bad, []byte(fixed), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadFile(bad, LoadOptions{Catalog: catalog, Env: noEnv})
	probs = ConfigProblems(err)
	e := wantProblem(t, probs, "pipeline.source.config", 3, 16, `missing required key "path"`)
	if e.File != bad {
		t.Errorf("File = %q", e.File)
	}

	_, err = LoadFile(filepath.Join(dir, "missing.yaml"), LoadOptions{Catalog: catalog})
	if !errors.Is(err, os.ErrNotExist) || ConfigProblems(err) != nil {
		t.Errorf("missing file: %v", err)
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoadNeedsCatalog(t *testing.T) {
	if _, err := Load([]byte(minimalYAML), LoadOptions{}); err == nil || ConfigProblems(err) != nil {
		t.Errorf("Load without a catalog: %v", err)
	}
}

func TestBrokenConnectorSchema(t *testing.T) {
	broken := testCatalog{
		RoleSource: {"csv": `{"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}}}`},
		RoleSink:   {"jsonl": `{"type": 12}`},
	}
	probs := loadErr(t, minimalYAML, LoadOptions{Catalog: broken})
	wantProblem(t, probs, "pipeline.source.type", 5, 5, `connector "csv" publishes an unusable config schema`)
	wantProblem(t, probs, "pipeline.sink.type", 10, 5, `connector "jsonl" publishes an unusable config schema`)
}

// TestBooleanConnectorSchema: a connector may publish the boolean schema
// true (any config) or false (none). Loading against either, and asking a
// sink's default write mode, neither panics nor finds a default.
func TestBooleanConnectorSchema(t *testing.T) {
	for _, schema := range []string{"true", "false"} {
		cat := testCatalog{RoleSource: {"csv": fileSchema}, RoleSink: {"jsonl": schema}}
		_, err := Load([]byte(minimalYAML), testOptions(LoadOptions{Catalog: cat}))
		if accepts := err == nil; accepts != (schema == "true") {
			t.Errorf("sink schema %s: load error %v", schema, err)
		}
		if mode := SinkWriteMode(cat, ConnectorConfig{Type: "jsonl", Config: json.RawMessage(`{"path": "out.jsonl"}`)}); mode != "" {
			t.Errorf("sink schema %s: default write mode %q, want none", schema, mode)
		}
	}
}

// TestCompiledSchemasAreShared loads one config from many goroutines at once
// while the catalog changes a connector's schema: each load validates
// against the schema its catalog hands out (compiled once, then shared), an
// unusable schema fails every load with the same message, and the problems
// are placed in the shared parsed document alike.
func TestCompiledSchemasAreShared(t *testing.T) {
	strict := `{"type": "object", "additionalProperties": false, "required": ["path"], "properties": {"path": {"type": "string"}}}`
	loose := `{"type": "object", "properties": {"path": {"type": "string"}}}`
	broken := `{"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}}}`
	src := "version: 1\npipeline:\n  source: {type: csv, config: {path: in.csv, extra: 1}}\n  sink: {type: jsonl, config: {path: out.jsonl}}\n"
	want := map[string]string{
		strict: "line 3, column 46: pipeline.source.config.extra: unknown key",
		loose:  "",
		broken: `line 3, column 12: pipeline.source.type: connector "csv" publishes an unusable config schema: compile schema: failing loading "https://example.com/x.json": schema references https://example.com/x.json; only references inside the schema are allowed`,
	}
	schemas := []string{strict, loose, broken}
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Go(func() {
			schema := schemas[i%len(schemas)]
			cat := testCatalog{RoleSource: {"csv": schema}, RoleSink: {"jsonl": fileSchema}}
			_, err := Load([]byte(src), testOptions(LoadOptions{Catalog: cat}))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != want[schema] {
				t.Errorf("load %d: error %q, want %q", i, got, want[schema])
			}
		})
	}
	wg.Wait()
}

func TestManyProblemsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString(minimalYAML)
	for i := range 80 {
		b.WriteString("k")
		b.WriteString(strings.Repeat("x", i+1))
		b.WriteString(": 1\n")
	}
	probs := loadErr(t, b.String(), LoadOptions{})
	if len(probs) != maxReported+1 || probs[maxReported].Message != "and 30 more problems" {
		t.Errorf("got %d problems, last %v", len(probs), probs[len(probs)-1])
	}
}

func TestConfigSchemaIsValidJSON(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal(ConfigSchema(), &v); err != nil || v["title"] == nil {
		t.Fatalf("ConfigSchema: %v", err)
	}
}

func TestPathRendering(t *testing.T) {
	cases := map[string]path{
		"":                         nil,
		"a.b[2].c":                 {"a", "b", 2, "c"},
		`matrix[0]["odd key"].x`:   {"matrix", 0, "odd key", "x"},
		`["1st"]`:                  {"1st"},
		`pipeline["with.dot"][10]`: {"pipeline", "with.dot", 10},
	}
	for want, p := range cases {
		if got := p.String(); got != want {
			t.Errorf("%v renders %q, want %q", []any(p), got, want)
		}
	}
}

func TestHostileDocuments(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&bomb, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	probs := loadErr(t, bomb.String(), LoadOptions{})
	wantProblem(t, probs, "", 0, 0, "more than 100000 values through aliases")

	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	probs = loadErr(t, "version: 1\nname: "+deep+"\n", LoadOptions{Format: FormatYAML})
	wantProblem(t, probs, "", 0, 0, "nests deeper than 200 levels")
	probs = loadErr(t, `{"version": `+deep+`}`, LoadOptions{Format: FormatJSON})
	wantProblem(t, probs, "", 1, 213, "nests deeper than 200 levels")
}

// TestEveryProblemOnce: faucet's own problems and the connectors' come
// together, an undefined var is one problem (not also the type the
// unexpanded text fails), and a shared value failing in some rows names
// them while one failing in every row names none.
func TestEveryProblemOnce(t *testing.T) {
	src := `version: 1
pipeline:
  source: {type: generate, config: {count: "${vars.rows}", bogus: 1}}
  sink: {type: jsonl, config: {path: "out/${vars.part}.jsonl"}}
execution: {max_concurrent: 0}
resilience: {retry: {backoff: {initial: 5x}}}
matrix:
  - {id: a, vars: {part: p1}}
  - {id: b}
  - {id: c}
`
	probs := loadErr(t, src, LoadOptions{})
	wantProblem(t, probs, "execution.max_concurrent", 5, 13, "minimum")
	wantProblem(t, probs, "resilience.retry.backoff.initial", 6, 32, `"5x" is not a duration`)
	wantProblem(t, probs, "pipeline.source.config.bogus", 3, 60, "unknown key")
	rows := wantProblem(t, probs, "pipeline.source.config.count", 3, 37, `undefined var "rows"`)
	if len(rows.Rows) != 0 {
		t.Errorf("a var no row defines fails in every row alike; Rows = %v", rows.Rows)
	}
	part := wantProblem(t, probs, "pipeline.sink.config.path", 4, 32, `undefined var "part"`)
	if !reflect.DeepEqual(part.Rows, []string{"b", "c"}) || !strings.HasSuffix(part.Error(), `(matrix rows "b", "c")`) {
		t.Errorf("Rows = %v, Error() = %q; want the two rows without the var", part.Rows, part.Error())
	}
	if len(probs) != 5 {
		t.Errorf("got %d problems, want 5, each once:\n%v", len(probs), ConfigErrors(probs))
	}
}
