package scaffold

import (
	"encoding/json"
	"testing"
)

// schema is a connector config schema with each kind of field a starter
// treats differently.
const schema = `{
	"type": "object",
	"required": ["url"],
	"oneOf": [{"required": ["table"]}, {"required": ["query"]}],
	"properties": {
		"url": {"type": "string", "writeOnly": true, "description": "Where to connect."},
		"table": {"type": "string", "description": "The table to read."},
		"query": {"type": "string"},
		"batch": {"type": "integer", "default": 100, "description": "Rows a batch."},
		"mode": {"enum": ["a", "b"], "examples": ["b"]}
	}
}`

// TestRender: required fields first and set to their suggestion (a secret
// reads an environment variable) or left empty, the first of required
// alternatives likewise, everything else commented out with its default,
// and an answer wins over a suggestion.
func TestRender(t *testing.T) {
	t.Parallel()
	got := Starter{
		Comment: "line one\nline two", Name: "copy",
		Source:  Side{Connector: "pg", Schema: json.RawMessage(schema)},
		Sink:    Side{Connector: "null"},
		Answers: map[string]string{"source.batch": "50"},
	}.Render()
	want := `# line one
# line two
version: 1
name: "copy"
pipeline:
  source:
    type: pg
    config:
      # (required, secret, string) Where to connect.
      url: "${env:PG_URL}"
      # query:
      # (required: one of table, query, string) The table to read.
      table:
      # (integer) Rows a batch.
      batch: 50
      # mode: "b"
  sink:
    type: null
    config:
      {}
`
	if got != want {
		t.Fatalf("Render:\n%s\nwant:\n%s", got, want)
	}
}

// TestFields: a field says what a person must know of it first.
func TestFields(t *testing.T) {
	t.Parallel()
	fields := Fields(json.RawMessage(schema))
	var names []string
	for _, f := range fields {
		names = append(names, f.Name+": "+f.Describe())
	}
	want := []string{
		"url: (required, secret) Where to connect.",
		"query: (required: one of table, query)",
		"table: (required: one of table, query) The table to read.",
		"batch: (default 100) Rows a batch.",
		"mode: ",
	}
	if len(names) != len(want) {
		t.Fatalf("Fields = %q", names)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("Fields = %q, want %q", names, want)
		}
	}
	if Fields(json.RawMessage(`[`)) != nil {
		t.Fatal("a schema that does not parse has fields")
	}
}
