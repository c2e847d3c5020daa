package pipeline_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/builtin"
)

// builtinCatalog is the catalog faucet serves: the built-in connectors'
// real schemas.
type builtinCatalog map[pipeline.Role]map[string]json.RawMessage

func newBuiltinCatalog() builtinCatalog {
	c := builtinCatalog{pipeline.RoleSource: {}, pipeline.RoleSink: {}}
	for _, conn := range builtin.All() {
		spec := conn.Spec()
		if len(spec.SourceSchema) > 0 {
			c[pipeline.RoleSource][spec.Name] = spec.SourceSchema
		}
		if len(spec.SinkSchema) > 0 {
			c[pipeline.RoleSink][spec.Name] = spec.SinkSchema
		}
	}
	return c
}

func (c builtinCatalog) ConnectorSchema(role pipeline.Role, name string) (json.RawMessage, bool) {
	s, ok := c[role][name]
	return s, ok
}

func (c builtinCatalog) ConnectorNames(role pipeline.Role) []string {
	return slices.Sorted(maps.Keys(c[role]))
}

// BenchmarkLoad measures what faucet serve pays to validate a submission:
// the trivial run of the server benchmark, a matrix of four rows, and the
// same trivial run as JSON.
func BenchmarkLoad(b *testing.B) {
	for _, tc := range []struct{ name, format, doc string }{
		{"trivial", "yaml", "version: 1\nname: gen\npipeline:\n  source: {type: generate, config: {count: 10}}\n  sink: {type: jsonl, config: {path: \"/tmp/out.jsonl\"}}\n"},
		{"matrix4", "yaml", `version: 1
name: regions
vars: {bucket: data}
pipeline:
  source: {type: csv, config: {path: "/${vars.bucket}/${vars.region}/in.csv", delimiter: ";"}}
  sink: {type: jsonl, config: {path: "/out/${vars.region}.jsonl"}}
matrix:
  - {id: eu, vars: {region: eu}}
  - {id: us, vars: {region: us}}
  - {id: ap, vars: {region: ap}}
  - {id: sa, vars: {region: sa}, sink: {config: {write_mode: append}}}
`},
		{"trivial-json", "json", `{"version":1,"name":"gen","pipeline":{"source":{"type":"generate","config":{"count":10}},"sink":{"type":"jsonl","config":{"path":"/tmp/out.jsonl"}}}}`},
	} {
		opts := pipeline.LoadOptions{Format: pipeline.Format(tc.format), Catalog: newBuiltinCatalog(), Env: func(string) (string, bool) { return "", false }}
		b.Run(tc.name, func(b *testing.B) {
			// The same config submitted again and again.
			doc := []byte(tc.doc)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pipeline.Load(doc, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/distinct", func(b *testing.B) {
			// A config never seen before each time: the parse is paid.
			docs := make([][]byte, 0, 1024)
			for i := range cap(docs) {
				doc := tc.doc + fmt.Sprintf("\n#%d\n", i)
				if tc.format == "json" {
					doc = tc.doc + strings.Repeat(" ", i)
				}
				docs = append(docs, []byte(doc))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := pipeline.Load(docs[i%len(docs)], opts); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
