package templates

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/pipeline"
)

func parse(t *testing.T, yaml string) *pipeline.Document {
	t.Helper()
	doc, err := pipeline.ParseDocument([]byte(yaml), pipeline.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestDeclaredReadsEveryField(t *testing.T) {
	t.Parallel()
	doc := parse(t, `
params:
  tenant: {required: true, description: Tenant to sync}
  since: {default: "1970-01-01"}
  page: {type: int, default: "100"}
  ratio: {type: float, default: 1}
  dry: {type: bool, default: "yes"}
  token: {required: true, secret: true}
`)
	got, probs := declared(doc)
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	want := Params{
		"tenant": {Type: TypeString, Required: true, Description: ptr("Tenant to sync")},
		"since":  {Type: TypeString, Default: "1970-01-01"},
		"page":   {Type: TypeInt, Default: json.Number("100")},
		"ratio":  {Type: TypeFloat, Default: json.Number("1")},
		"dry":    {Type: TypeBool, Default: true},
		"token":  {Type: TypeString, Required: true, Secret: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("declared %+v\nwant %+v", got, want)
	}
	if s := got.secret(); !reflect.DeepEqual(s, []string{"token"}) {
		t.Fatalf("secret params %v", s)
	}
}

func TestDeclaredLocatesEveryProblem(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ yaml, path, msg string }{
		"block not a mapping": {"params: [a]", "params", "want a mapping"},
		"bad name":            {"params: {1a: {}}", `params["1a"]`, "want letters"},
		"long name":           {"params: {" + strings.Repeat("a", MaxParamNameLen+1) + ": {}}", "params", "longer than"},
		"not a declaration":   {"params: {a: 5}", "params.a", "want a declaration"},
		"unknown key":         {"params: {a: {typo: 1}}", "params.a.typo", `unknown key "typo"`},
		"bad type":            {"params: {a: {type: date}}", "params.a.type", "want one of string, int, float, bool"},
		"required not bool":   {"params: {a: {required: yes-please}}", "params.a.required", "want true or false"},
		"required default":    {"params: {a: {required: true, default: x}}", "params.a.default", "drop required or default"},
		"null default":        {"params: {a: {default: null}}", "params.a.default", "null is not a value"},
		"mistyped default":    {"params: {a: {type: int, default: 1.5}}", "params.a.default", "want an integer"},
		"long description":    {"params: {a: {description: " + strings.Repeat("d", MaxParamDescriptionLen+1) + "}}", "params.a.description", "longer than"},
	}
	for name, c := range cases {
		_, probs := declared(parse(t, c.yaml))
		if len(probs) != 1 || probs[0].Path != c.path || !strings.Contains(probs[0].Message, c.msg) || probs[0].Line == 0 {
			t.Errorf("%s: problems %v, want one at %s (with its line) saying %q", name, probs, c.path, c.msg)
		}
	}
	var many strings.Builder
	many.WriteString("params:\n")
	for i := range MaxParams + 1 {
		many.WriteString("  p" + strings.Repeat("x", i) + ": {}\n")
	}
	if _, probs := declared(parse(t, many.String())); len(probs) != 1 || !strings.Contains(probs[0].Message, "more than") {
		t.Errorf("too many params: %v", probs)
	}
}

func TestBindCoercesAndRefuses(t *testing.T) {
	t.Parallel()
	ps := Params{
		"s": {Type: TypeString}, "i": {Type: TypeInt, Default: json.Number("7")}, "f": {Type: TypeFloat, Required: true},
		"b": {Type: TypeBool, Required: true}, "secret": {Type: TypeString, Required: true, Secret: true},
	}
	b, err := ps.bind(map[string]any{"s": 5.0, "f": "2.5", "b": "no", "secret": "hunter2-value"}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"s": "5", "i": json.Number("7"), "f": json.Number("2.5"), "b": false, "secret": "hunter2-value"}
	if !reflect.DeepEqual(b.Values, want) {
		t.Fatalf("bound %v, want %v", b.Values, want)
	}
	if r := b.Redacted(); r["secret"] != "***" || r["s"] != "5" {
		t.Fatalf("redacted %v", r)
	}
	if s := b.SecretValues(); !reflect.DeepEqual(s, []string{"hunter2-value"}) {
		t.Fatalf("secret values %v", s)
	}
	base := map[string]any{"s": "x", "f": 1.0, "b": true, "secret": "hunter2-value"}
	refused := map[string]struct {
		name  string
		value any
		msg   string
	}{
		"unknown":         {"tenatn", "x", "declares no such param"},
		"int not int":     {"i", 1.5, "want an integer"},
		"int from text":   {"i", "many", "want an integer"},
		"bool":            {"b", "maybe", "want true or false"},
		"object":          {"s", map[string]any{"a": 1.0}, "want a string"},
		"null":            {"s", nil, "want a string"},
		"reference":       {"s", "${env:HOME}", "literal data"},
		"secret mistyped": {"secret", []any{"hunter2-value"}, "want a string"},
		"too long":        {"s", strings.Repeat("x", MaxParamValueBytes+1), "longer than"},
	}
	for what, c := range refused {
		supplied := map[string]any{}
		for k, v := range base {
			supplied[k] = v
		}
		supplied[c.name] = c.value
		_, err := ps.bind(supplied, false)
		var perr *ParamError
		if !errors.As(err, &perr) || perr.Name != c.name || !strings.Contains(perr.Msg, c.msg) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v, want a ParamError naming %s saying %q (and no value)", what, err, c.name, c.msg)
		}
	}
	delete(base, "f")
	if _, err := ps.bind(base, false); err == nil || !strings.Contains(err.Error(), "param f: not given") {
		t.Errorf("missing param: %v", err)
	}
	// Placeholders stand for what has no value yet, typed.
	b, err = ps.bind(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if b.Values["s"] != "s" || b.Values["i"] != json.Number("7") || b.Values["f"] != json.Number("1") || b.Values["b"] != false {
		t.Fatalf("placeholders %v", b.Values)
	}
}

func TestBindDocumentSubstitutesValuesOnly(t *testing.T) {
	t.Parallel()
	doc := parse(t, `
version: 1
name: sync-${param.tenant}
params: {tenant: {}, page: {type: int}, dry: {type: bool}}
pipeline:
  source:
    type: generate
    config:
      count: ${param.page}
      dry: ${param.dry}
      url: "https://x/${param.tenant}?p=${param.page}&e=${env:KEY}"
      literal: "$${param.tenant}"
      "${param.tenant}": key stays
      list: ["${param.tenant}", 3]
`)
	values := map[string]any{"tenant": "acme ${env:SECRET}", "page": json.Number("5"), "dry": true}
	tree, used, probs := bindDocument(doc, values)
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if _, ok := tree[ParamsKey]; ok {
		t.Fatal("the params block survived binding")
	}
	cfg := tree["pipeline"].(map[string]any)["source"].(map[string]any)["config"].(map[string]any)
	want := map[string]any{
		"count": json.Number("5"), "dry": true,
		// A value is spliced once, never read again for references.
		"url":             "https://x/acme ${env:SECRET}?p=5&e=${env:KEY}",
		"literal":         "$${param.tenant}",
		"${param.tenant}": "key stays",
		"list":            []any{"acme ${env:SECRET}", json.Number("3")},
	}
	if !reflect.DeepEqual(cfg, want) || tree["name"] != "sync-acme ${env:SECRET}" {
		t.Fatalf("bound config %#v\nname %v", cfg, tree["name"])
	}
	for _, p := range []string{"name", "pipeline.source.config.count", "pipeline.source.config.url", "pipeline.source.config.list[0]"} {
		if !used[p] {
			t.Errorf("path %s not marked as holding a param (marked: %v)", p, used)
		}
	}
	if used["pipeline.source.config.literal"] {
		t.Error("an escaped reference was bound")
	}

	_, _, probs = bindDocument(parse(t, "a: ${param.nope}\nb: [\"x-${param.a.b}\"]\n"), map[string]any{"a": "1"})
	if len(probs) != 2 || probs[0].Path != "a" || !strings.Contains(probs[0].Message, `declares no param "nope"`) ||
		probs[1].Path != "b[0]" || !strings.Contains(probs[1].Message, "not a param reference") {
		t.Fatalf("problems %v", probs)
	}
}

func TestSelectors(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]Selector{
		"3": Pinned(3), " 12 ": Pinned(12), "stable": Channel(Stable), "NEWEST": Channel(Newest),
		"pre_prod": Channel("pre-prod"), "PreProd": Channel("pre-prod"), "prod": Channel("prod"),
	} {
		got, err := ParseSelector(raw)
		if err != nil || got != want {
			t.Errorf("ParseSelector(%q) = %v, %v; want %v", raw, got, err, want)
		}
	}
	for raw, msg := range map[string]string{
		"0": "numbered from 1", "99999999999999999999": "numbered from 1", "latest": "stable", "prd": "the channels are",
		"": "unknown channel", "-1": "unknown channel", "1.5": "unknown channel",
	} {
		if _, err := ParseSelector(raw); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseSelector(%q) = %v, want an error saying %q", raw, err, msg)
		}
	}
	if _, err := ParseSelector("Latest"); err == nil || !strings.Contains(err.Error(), "newest") {
		t.Errorf("latest: %v, want both meanings named", err)
	}
	for _, c := range []string{Stable, Previous, Newest} {
		if _, err := ParseAssignable(c); err == nil || !strings.Contains(err.Error(), "derived") {
			t.Errorf("ParseAssignable(%s) = %v", c, err)
		}
	}
	if c, err := ParseAssignable("Canary"); err != nil || c != "canary" {
		t.Errorf("ParseAssignable(Canary) = %q, %v", c, err)
	}
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"Tenant Sync (prod)": "tenant-sync-prod", "already-fine": "already-fine", "!!!": "", "": "",
		strings.Repeat("a", 70) + " x": strings.Repeat("a", 64),
	} {
		if got := slug(name); got != want {
			t.Errorf("slug(%q) = %q, want %q", name, got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
