package builtin_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/faucet-dev/faucet/plugins/builtin"
)

// TestSchemas compiles every built-in's config schemas and checks that they
// accept a good config and reject unknown keys and missing required ones.
func TestSchemas(t *testing.T) {
	good := map[string]map[string]string{
		"csv":      {"source": `{"path": "a.csv", "delimiter": ";", "header": false, "columns": ["a"]}`, "sink": `{"path": "b.csv", "quoting": "all", "write_mode": "append"}`},
		"generate": {"source": `{"count": 10, "seed": 3}`},
		"jsonl":    {"source": `{"path": "*.jsonl"}`, "sink": `{"path": "b.jsonl", "sync": true}`},
		"postgres": {"source": `{"url": "postgres://db", "table": "t", "key": "id"}`, "sink": `{"url": "postgres://db", "table": "t", "write_mode": "upsert", "key": ["id"]}`},
		"sqlite":   {"source": `{"path": "a.db", "query": "SELECT 1"}`, "sink": `{"path": "a.db", "table": "t", "write_mode": "overwrite"}`},
		"stdout":   {"sink": `{}`},
		"dlq":      {"source": `{"path": "dead.jsonl", "reason": "partial"}`},
	}
	bad := []string{`{"path": "x", "nope": 1}`, `{}`, `{"path": 5}`, `{"count": -1}`, `{"pretty": "yes"}`}
	for _, c := range builtin.All() {
		spec := c.Spec()
		for role, schema := range map[string]json.RawMessage{"source": spec.SourceSchema, "sink": spec.SinkSchema} {
			if schema == nil {
				continue
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
			if err != nil {
				t.Fatalf("%s %s schema: %v", spec.Name, role, err)
			}
			comp := jsonschema.NewCompiler()
			if err := comp.AddResource("schema.json", doc); err != nil {
				t.Fatal(err)
			}
			sch, err := comp.Compile("schema.json")
			if err != nil {
				t.Fatalf("%s %s schema: %v", spec.Name, role, err)
			}
			validate := func(config string) error {
				v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(config)))
				if err != nil {
					t.Fatal(err)
				}
				return sch.Validate(v)
			}
			if cfg, ok := good[spec.Name][role]; !ok {
				t.Errorf("no good %s config for %s", role, spec.Name)
			} else if err := validate(cfg); err != nil {
				t.Errorf("%s %s rejects %s: %v", spec.Name, role, cfg, err)
			}
			rejected := 0
			for _, cfg := range bad {
				if validate(cfg) != nil {
					rejected++
				}
			}
			if rejected < 3 {
				t.Errorf("%s %s schema rejects only %d of the bad configs", spec.Name, role, rejected)
			}
		}
	}
}
