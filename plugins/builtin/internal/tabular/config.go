package tabular

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Source is what a SQL source's config says to read; each connector embeds
// it beside how to reach its database.
type Source struct {
	Table string `json:"table"`
	Query string `json:"query"`
	Key   string `json:"key"`
}

// Check enforces what the schema's oneOf says, for callers that bypass it.
func (s Source) Check() error {
	if (s.Table == "") == (s.Query == "") {
		return errors.New("set exactly one of table and query")
	}
	return nil
}

// Sink is what a SQL sink's config says about writing; each connector embeds
// it beside how to reach its database.
type Sink struct {
	Table     string   `json:"table"`
	WriteMode string   `json:"write_mode"`
	Key       []string `json:"key"`
}

// Normalize fills in the default write mode and enforces what the schema's
// if/then says, for callers that bypass it.
func (s *Sink) Normalize() error {
	if s.WriteMode == "" {
		s.WriteMode = "append"
	}
	if s.WriteMode == "upsert" && len(s.Key) == 0 {
		return errors.New("write_mode upsert needs key")
	}
	return nil
}

// WriteModes are the SQL sinks' write modes.
var WriteModes = []string{"append", "upsert", "overwrite"}

// SourceSchema is the JSON Schema of a SQL source's config: the connector's
// own connection property (conn, a JSON member such as `"path": {…}`, named
// connName) plus table or query and key.
func SourceSchema(connName, conn, tableDoc, keyDoc string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": [%q],
  "oneOf": [{"required": ["table"]}, {"required": ["query"]}],
  "properties": {
    %s,
    "table": {"type": "string", "minLength": 1, "description": %q},
    "query": {"type": "string", "minLength": 1, "description": "A SELECT statement to read. Set table or query."},
    "key": {"type": "string", "minLength": 1, "description": %q}
  }
}`, connName, conn, tableDoc+" Set table or query.", keyDoc))
}

// SinkSchema is the JSON Schema of a SQL sink's config: the connection
// property as for SourceSchema plus table, write_mode and key.
func SinkSchema(connName, conn, modeDoc, keyDoc string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": [%q, "table"],
  "properties": {
    %s,
    "table": {"type": "string", "minLength": 1, "description": "The table to write (schema.table allowed). When missing it is created with columns (and types) taken from the first batch."},
    "write_mode": {"enum": ["append", "upsert", "overwrite"], "default": "append", "description": %q},
    "key": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "uniqueItems": true, "description": %q}
  },
  "if": {"properties": {"write_mode": {"const": "upsert"}}, "required": ["write_mode"]},
  "then": {"required": ["key"]}
}`, connName, conn, modeDoc, keyDoc))
}

// QueryID names a query's result as a dataset: the first 12 hex digits of
// the sha256 of its text, trimmed, so the same query is the same dataset
// and its text (which may hold literals worth keeping private) is not in
// the name.
func QueryID(query string) string {
	sum := sha256.Sum256([]byte(strings.TrimRight(strings.TrimSpace(query), "; \n\t")))
	return "query-" + hex.EncodeToString(sum[:6])
}
