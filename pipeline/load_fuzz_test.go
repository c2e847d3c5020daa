package pipeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/lexer"
)

// FuzzLoad feeds arbitrary documents (and --set overrides) to the loader. It
// must never panic; it either returns an error or a plan whose invariants
// hold, and loading the same input twice gives the same fingerprint.
func FuzzLoad(f *testing.F) {
	seeds := []string{
		minimalYAML,
		minimalYAML + "matrix:\n  - id: a\n    vars: {x: 1}\n    source: {config: {path: \"${vars.x}.csv\"}}\n  - id: b\n",
		`{"version": 1, "pipeline": {"source": {"type": "generate", "config": {"count": 10}}, "sink": {"type": "stdout"}}}`,
		"version: 1\nvars: {a: ${env:HOME}}\npipeline:\n  source: {type: postgres, config: {url: \"$${x}\", auth: {password: p}}}\n  sink: {type: jsonl, config: {path: o}}\n",
		"version: 1\nexecution: {max_concurrent: 2, on_error: stop}\nresilience: {retry: {max_attempts: 2, backoff: {initial: 1s, max: 2s}}}\nshard: {count: 3}\ndelivery: at_least_once\n",
		"a: &x {b: *x}\n",
		"- [[[[[[[[[[]]]]]]]]]]\n",
		"{\"version\": 1e400}",
		"version: 1\n---\nversion: 2\n",
		"",
	}
	for _, s := range seeds {
		f.Add(s, "")
		f.Add(s, "pipeline.source.config.path=x")
	}
	env := envOf(map[string]string{"HOME": "/home/u", "IN": "in.csv"})
	f.Fuzz(func(t *testing.T, src, set string) {
		// The token bound must cover the lexer, or MaxConfigTokens could be
		// slipped past.
		if bound, lexed := yamlTokenBound([]byte(src), len(src)+1), len(lexer.Tokenize(src)); bound < lexed {
			t.Fatalf("token bound %d < %d tokens the lexer makes", bound, lexed)
		}
		var sets []string
		if set != "" {
			sets = []string{set}
		}
		opts := LoadOptions{Catalog: catalog, Env: env, Sets: sets}
		plan, err := Load([]byte(src), opts)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			for _, p := range ConfigProblems(err) {
				if p.Line < 0 || p.Column < 0 || (p.Line == 0) != (p.Column == 0) {
					t.Fatalf("bad position in %v", p)
				}
			}
			return
		}
		if len(plan.Invocations) == 0 {
			t.Fatal("a loaded plan has no invocations")
		}
		if plan.Execution.MaxConcurrent < 1 || plan.Retry.MaxAttempts < 1 || plan.Retry.MaxBackoff < plan.Retry.InitialBackoff {
			t.Fatalf("bad settings: %+v %+v", plan.Execution, plan.Retry)
		}
		if len(plan.Fingerprint) != 64 || strings.Trim(plan.Fingerprint, "0123456789abcdef") != "" {
			t.Fatalf("bad fingerprint %q", plan.Fingerprint)
		}
		for _, inv := range plan.Invocations {
			for _, c := range []ConnectorConfig{inv.Source, inv.Sink} {
				var m map[string]any
				if err := json.Unmarshal(c.Config, &m); err != nil || m == nil {
					t.Fatalf("%s config %q is not a JSON object: %v", c.Type, c.Config, err)
				}
			}
		}
		again, err := Load([]byte(src), opts)
		if err != nil || again.Fingerprint != plan.Fingerprint {
			t.Fatalf("second load differs: %v", err)
		}
	})
}
